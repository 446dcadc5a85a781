"""Tests for agentmem.rerank: a TEI-style HTTP reranker and a local ONNX cross-encoder.

The HTTP reranker talks to a real loopback server (stdlib ``http.server``) that speaks a
TEI-like ``POST /rerank``; the ONNX reranker runs a tiny real model built here with the
``onnx`` helper API, plus a real ``tokenizers`` tokenizer.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from agentmem.errors import AgentMemError, RerankError, ValidationError
from agentmem.rerank import HttpReranker, OnnxCrossEncoderReranker, Reranker

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors  # noqa: E402
from tokenizers.trainers import WordLevelTrainer  # noqa: E402

SECRET = "SECRET-DOCUMENT-CONTENT-42"


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


# ======================================================================================
# A TEI-like loopback server
# ======================================================================================


def _words(text: str) -> set[str]:
    return set(text.lower().split())


def _overlap(query: str, text: str) -> float:
    """Jaccard word overlap in [0, 1]: the fake model's relevance."""
    q, t = _words(query), _words(text)
    return len(q & t) / len(q | t) if q | t else 0.0


def _raw_logit(query: str, text: str) -> float:
    return 8.0 * _overlap(query, text) - 4.0


@dataclass
class TeiState:
    """What the fake server does next and what it has seen."""

    mode: str = "ok"
    delay: float = 5.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)


class _TeiServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64
    state: TeiState


class _TeiHandler(BaseHTTPRequestHandler):
    server: _TeiServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        state = self.server.state
        state.paths.append(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/rerank":
            self._send(404, b'{"error": "not found", "error_type": "NotFound"}')
            return
        request = json.loads(body)
        state.requests.append(request)
        query: str = request["query"]
        texts: list[str] = request["texts"]
        raw = bool(request.get("raw_scores", False))
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # client gave up
            self._answer(state, query, texts, raw)

    def _answer(self, state: TeiState, query: str, texts: list[str], raw: bool) -> None:
        score = _raw_logit if raw else _overlap
        results: list[dict[str, Any]] = [
            {"index": i, "score": score(query, t)} for i, t in enumerate(texts)
        ]
        results.sort(key=lambda r: r["score"], reverse=True)
        mode = state.mode
        if mode == "slow":
            state.release.wait(state.delay)
        if mode == "trickle":  # headers at once, then one byte every 0.15 s
            payload = json.dumps(results).encode() + b" " * 40
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            for i in range(len(payload)):
                if state.release.wait(0.15):
                    return
                self.wfile.write(payload[i : i + 1])
            return
        if mode == "http500":
            self._send(500, b'{"error": "model crashed", "error_type": "Backend"}')
        elif mode == "http413":
            self._send(413, b'{"error": "batch size 3 > maximum allowed batch size 2"}')
        elif mode == "malformed":
            self._send(200, b'[{"index": 0, "score": 0.5},')
        elif mode == "html":
            self._send(200, b"<html>gateway</html>", "text/html")
        elif mode == "wrong_shape":
            self._send(200, json.dumps({"scores": [r["score"] for r in results]}).encode())
        elif mode == "item_not_object":
            self._send(200, json.dumps([r["score"] for r in results]).encode())
        elif mode == "out_of_range":
            results[0]["index"] = len(texts)
            self._send(200, json.dumps(results).encode())
        elif mode == "negative_index":
            results[0]["index"] = -1
            self._send(200, json.dumps(results).encode())
        elif mode == "duplicate":
            results[-1]["index"] = results[0]["index"]
            self._send(200, json.dumps(results).encode())
        elif mode == "missing":
            self._send(200, json.dumps(results[:-1]).encode())
        elif mode == "extra":
            self._send(200, json.dumps([*results, {"index": 0, "score": 0.1}]).encode())
        elif mode == "string_score":
            results[0]["score"] = "0.9"
            self._send(200, json.dumps(results).encode())
        elif mode == "bool_index":
            results[0]["index"] = True
            self._send(200, json.dumps(results).encode())
        elif mode == "nan":
            results[0]["score"] = float("nan")
            self._send(200, json.dumps(results).encode())  # Python emits a bare NaN
        elif mode == "infinite":
            results[0]["score"] = float("inf")
            self._send(200, json.dumps(results).encode())
        elif mode == "logits_unasked":  # raw logits although raw_scores=false was sent
            for r, t in zip(results, texts, strict=True):
                r["score"] = _raw_logit(query, t)
            self._send(200, json.dumps(results).encode())
        else:  # ok / slow
            self._send(200, json.dumps(results).encode())


@dataclass
class TeiServer:
    url: str
    state: TeiState
    stop: Callable[[], None]


@pytest.fixture
def tei() -> Iterator[TeiServer]:
    server = _TeiServer(("127.0.0.1", 0), _TeiHandler)
    server.state = TeiState()
    thread = threading.Thread(
        target=server.serve_forever, args=(0.05,), name="tei-fake", daemon=True
    )
    thread.start()
    stopped = False

    def stop() -> None:
        nonlocal stopped
        if not stopped:
            stopped = True
            server.state.release.set()
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)

    host, port = server.server_address[:2]
    try:
        yield TeiServer(f"http://{host!s}:{port}", server.state, stop)
    finally:
        stop()


@pytest.fixture
def make_http(tei: TeiServer) -> Iterator[Callable[..., HttpReranker]]:
    made: list[HttpReranker] = []

    def make(**kwargs: Any) -> HttpReranker:
        kwargs.setdefault("timeout", 2.0)
        reranker = HttpReranker(tei.url, **kwargs)
        made.append(reranker)
        return reranker

    yield make
    for reranker in made:
        reranker.close()


QUERY = "red apple pie recipe"
DOCS = [
    "stock market news today",
    "red apple pie recipe with cinnamon",
    "green apple",
    "how to bake a red apple pie",
]


# --------------------------------------------------------------------------------------
# HTTP: success paths
# --------------------------------------------------------------------------------------


def test_http_returns_scores_in_input_order(
    tei: TeiServer, make_http: Callable[..., HttpReranker]
) -> None:
    reranker = make_http()
    scores = reranker.rerank(QUERY, DOCS)
    assert scores == pytest.approx([_overlap(QUERY, d) for d in DOCS])
    assert all(0.0 <= s <= 1.0 for s in scores)
    # the server answered best-first; the client restored input order
    assert scores[1] > scores[3] > scores[2] > scores[0]
    assert reranker.rerank(QUERY, list(reversed(DOCS))) == pytest.approx(scores[::-1])


def test_http_sends_the_tei_request(tei: TeiServer, make_http: Callable[..., HttpReranker]) -> None:
    make_http().rerank(QUERY, DOCS)
    assert tei.state.paths == ["/rerank"]
    assert tei.state.requests == [
        {"query": QUERY, "texts": DOCS, "raw_scores": False, "truncate": True}
    ]
    make_http(model="BAAI/bge-reranker-v2-m3").rerank(QUERY, DOCS[:1])
    assert tei.state.requests[-1]["model"] == "BAAI/bge-reranker-v2-m3"


def test_http_trailing_slash_in_base_url(tei: TeiServer) -> None:
    with HttpReranker(tei.url + "/") as reranker:
        assert reranker.url == tei.url + "/rerank"
        assert len(reranker.rerank(QUERY, DOCS)) == len(DOCS)
    assert tei.state.paths == ["/rerank"]


def test_http_raw_scores_get_a_sigmoid(
    tei: TeiServer, make_http: Callable[..., HttpReranker]
) -> None:
    scores = make_http(raw_scores=True).rerank(QUERY, DOCS)
    assert tei.state.requests[-1]["raw_scores"] is True
    assert scores == pytest.approx([_sigmoid(_raw_logit(QUERY, d)) for d in DOCS])
    assert all(0.0 < s < 1.0 for s in scores)


def test_http_empty_documents_make_no_request(
    tei: TeiServer, make_http: Callable[..., HttpReranker]
) -> None:
    assert make_http().rerank(QUERY, []) == []
    assert tei.state.requests == []


def test_http_uses_a_client_passed_in_and_leaves_it_open(tei: TeiServer) -> None:
    with httpx.Client() as client:
        reranker = HttpReranker(tei.url, client=client)
        assert len(reranker.rerank(QUERY, DOCS)) == len(DOCS)
        reranker.close()
        assert not client.is_closed
        assert len(reranker.rerank(QUERY, DOCS)) == len(DOCS)


def test_http_is_thread_safe(tei: TeiServer, make_http: Callable[..., HttpReranker]) -> None:
    reranker = make_http()
    expected = [_overlap(QUERY, d) for d in DOCS]
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _: reranker.rerank(QUERY, DOCS), range(32)))
    for scores in results:
        assert scores == pytest.approx(expected)


def test_http_reranker_satisfies_the_protocol() -> None:
    reranker = HttpReranker("http://127.0.0.1:9", model="m")
    assert isinstance(reranker, Reranker)
    assert reranker.name == "tei:m"
    assert HttpReranker("http://h:80/").name == "tei:http://h:80"


# --------------------------------------------------------------------------------------
# HTTP: failures are RerankError, promptly, and never leak documents
# --------------------------------------------------------------------------------------

FAILURE_MODES = [
    "http500",
    "http413",
    "malformed",
    "html",
    "wrong_shape",
    "item_not_object",
    "out_of_range",
    "negative_index",
    "duplicate",
    "missing",
    "extra",
    "string_score",
    "bool_index",
    "nan",
    "infinite",
    "logits_unasked",
]


@pytest.mark.parametrize("mode", FAILURE_MODES)
def test_http_bad_responses_raise_rerank_error(
    tei: TeiServer, make_http: Callable[..., HttpReranker], mode: str
) -> None:
    tei.state.mode = mode
    docs = [*DOCS, SECRET]
    with pytest.raises(RerankError) as info:
        make_http().rerank(QUERY, docs)
    message = str(info.value)
    assert tei.url in message
    assert SECRET not in message
    assert SECRET not in repr(info.value.context)
    assert info.value.context["url"] == tei.url + "/rerank"


@pytest.mark.parametrize("mode", ["nan", "infinite", "string_score", "duplicate"])
def test_http_bad_raw_scores_raise_rerank_error(
    tei: TeiServer, make_http: Callable[..., HttpReranker], mode: str
) -> None:
    tei.state.mode = mode
    with pytest.raises(RerankError):
        make_http(raw_scores=True).rerank(QUERY, DOCS)


@pytest.mark.parametrize(("mode", "status"), [("http500", 500), ("http413", 413)])
def test_http_status_is_reported(
    tei: TeiServer, make_http: Callable[..., HttpReranker], mode: str, status: int
) -> None:
    tei.state.mode = mode
    with pytest.raises(RerankError, match=f"HTTP {status}") as info:
        make_http().rerank(QUERY, DOCS)
    assert info.value.context["status"] == status


def test_http_wrong_path_is_a_404(tei: TeiServer) -> None:
    with (
        HttpReranker(tei.url + "/v1") as reranker,
        pytest.raises(RerankError, match="HTTP 404"),
    ):
        reranker.rerank(QUERY, DOCS)


def test_http_server_down_raises_rerank_error(
    tei: TeiServer, make_http: Callable[..., HttpReranker]
) -> None:
    reranker = make_http()
    assert len(reranker.rerank(QUERY, DOCS)) == len(DOCS)  # a pooled connection may exist
    tei.stop()
    with pytest.raises(RerankError, match="connect") as info:
        reranker.rerank(QUERY, [SECRET])
    assert SECRET not in str(info.value)
    assert isinstance(info.value.__cause__, httpx.ConnectError)


def test_http_slow_server_times_out_promptly(
    tei: TeiServer, make_http: Callable[..., HttpReranker]
) -> None:
    tei.state.mode = "slow"
    tei.state.delay = 10.0
    reranker = make_http(timeout=0.5)
    started = time.monotonic()
    with pytest.raises(RerankError, match="timed out") as info:
        reranker.rerank(QUERY, DOCS)
    # the timeout ended the call (the server answers after 10 s, a load can only delay it)
    assert time.monotonic() - started > 0.3
    assert isinstance(info.value.__cause__, httpx.TimeoutException)


def test_http_trickling_body_hits_the_overall_deadline(
    tei: TeiServer, make_http: Callable[..., HttpReranker]
) -> None:
    # each byte arrives well within the read timeout, the whole body would take ~30 s
    tei.state.mode = "trickle"
    reranker = make_http(timeout=0.6)
    # only an overall deadline ends it: the read timeout never fires, and the whole body
    # would have come (and succeeded) after ~30 s
    with pytest.raises(RerankError, match="timed out"):
        reranker.rerank(QUERY, DOCS)


def test_http_bad_arguments_raise_rerank_error(make_http: Callable[..., HttpReranker]) -> None:
    reranker = make_http()
    with pytest.raises(RerankError):
        reranker.rerank(QUERY, "a string is not a list of documents")
    with pytest.raises(RerankError):
        reranker.rerank(QUERY, ["ok", 3])  # type: ignore[list-item]
    with pytest.raises(RerankError):
        reranker.rerank(None, ["ok"])  # type: ignore[arg-type]


def test_http_constructor_validates_and_does_no_io() -> None:
    HttpReranker("http://127.0.0.1:1")  # nothing listens there; constructing is fine
    for bad_url in ["", "127.0.0.1:8080", "ftp://host", "http://"]:
        with pytest.raises(ValidationError):
            HttpReranker(bad_url)
    for bad_timeout in [0, -1.0, float("nan"), float("inf")]:
        with pytest.raises(ValidationError):
            HttpReranker("http://h", timeout=bad_timeout)


def test_http_from_env() -> None:
    assert HttpReranker.from_env({}) is None
    assert HttpReranker.from_env({"AGENTMEM_RERANKER_URL": "  "}) is None
    reranker = HttpReranker.from_env({"AGENTMEM_RERANKER_URL": "http://tei:80"})
    assert reranker is not None
    assert (reranker.url, reranker.timeout) == ("http://tei:80/rerank", 2.0)
    reranker = HttpReranker.from_env(
        {"AGENTMEM_RERANKER_URL": "http://tei:80/", "AGENTMEM_RERANKER_TIMEOUT": "0.75"}
    )
    assert reranker is not None
    assert reranker.timeout == 0.75
    for bad in ["soon", "-1", "0", "nan"]:
        with pytest.raises(ValidationError, match="AGENTMEM_RERANKER_TIMEOUT"):
            HttpReranker.from_env(
                {"AGENTMEM_RERANKER_URL": "http://tei", "AGENTMEM_RERANKER_TIMEOUT": bad}
            )
    with pytest.raises(ValidationError, match="AGENTMEM_RERANKER_URL"):
        HttpReranker.from_env({"AGENTMEM_RERANKER_URL": "tei:80"})


def test_http_from_env_reads_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTMEM_RERANKER_URL", raising=False)
    assert HttpReranker.from_env() is None
    monkeypatch.setenv("AGENTMEM_RERANKER_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("AGENTMEM_RERANKER_TIMEOUT", "3")
    reranker = HttpReranker.from_env()
    assert reranker is not None
    assert reranker.timeout == 3.0


# ======================================================================================
# A tiny real ONNX cross-encoder
# ======================================================================================

CORPUS = [
    "red apple pie recipe with cinnamon",
    "how to bake a red apple pie",
    "green apple and pear salad",
    "stock market news today",
    "the cat sat on the mat",
    "a dog chased the cat in the park",
    "weather forecast rain tomorrow",
    "python programming tutorial for beginners",
]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
DIM = 64
SCALE = 40.0
BIAS = -2.0


def _build_tokenizer() -> Tokenizer:
    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(CORPUS, trainer=WordLevelTrainer(special_tokens=SPECIALS))
    cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    assert cls_id is not None and sep_id is not None
    tokenizer.post_processor = processors.BertProcessing(("[SEP]", sep_id), ("[CLS]", cls_id))
    # like an HF export: padding and truncation configured in tokenizer.json
    tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]"), pad_token="[PAD]")
    tokenizer.enable_truncation(max_length=512)
    return tokenizer


def _embedding_table(vocab_size: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((vocab_size, DIM)).astype(np.float32)
    table /= np.linalg.norm(table, axis=1, keepdims=True)
    table[: len(SPECIALS)] = 0.0  # [PAD], [UNK], [CLS], [SEP] carry no meaning
    return table


def _build_model(
    path: Path,
    vocab_size: int,
    *,
    output: str = "n1",
    int32: bool = False,
    token_types: bool = True,
) -> np.ndarray:
    """Save a cross-encoder whose logit is SCALE * <mean emb(segment A), mean emb(B)> + BIAS.

    Segments come from token_type_ids (0: [CLS] query [SEP], 1: document [SEP]), means are
    masked by attention_mask. Documents sharing words with the query get a larger logit.
    Without token_types, the logit is SCALE * sum(mean embedding) + BIAS instead.
    Returns the embedding table.
    """
    table = _embedding_table(vocab_size)
    id_type = TensorProto.INT32 if int32 else TensorProto.INT64
    names = ["input_ids", "attention_mask", *(["token_type_ids"] if token_types else [])]
    inputs = [helper.make_tensor_value_info(n, id_type, ["batch", "seq"]) for n in names]
    inits = [
        numpy_helper.from_array(table, "table"),
        numpy_helper.from_array(np.full((DIM, 1), SCALE, np.float32), "w"),
        numpy_helper.from_array(np.array([BIAS], np.float32), "bias"),
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
        numpy_helper.from_array(np.array([2], np.int64), "axis2"),
        numpy_helper.from_array(np.array([1e-6], np.float32), "eps"),
        numpy_helper.from_array(np.array([0.5], np.float32), "half"),
        numpy_helper.from_array(np.array([-0.5], np.float32), "neg_half"),
    ]
    n = helper.make_node
    nodes = [
        n("Gather", ["table", "input_ids"], ["emb"], axis=0),  # (B, L, D)
        n("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
    ]

    def masked_mean(mask: str, out: str) -> None:
        nodes.extend(
            [
                n("Unsqueeze", [mask, "axis2"], [f"{out}_m3"]),
                n("Mul", ["emb", f"{out}_m3"], [f"{out}_e"]),
                n("ReduceSum", [f"{out}_e", "axis1"], [f"{out}_sum"], keepdims=0),
                n("ReduceSum", [mask, "axis1"], [f"{out}_cnt"], keepdims=1),
                n("Max", [f"{out}_cnt", "eps"], [f"{out}_den"]),
                n("Div", [f"{out}_sum", f"{out}_den"], [out]),  # (B, D)
            ]
        )

    if token_types:
        nodes.extend(
            [
                n("Cast", ["token_type_ids"], ["types"], to=TensorProto.FLOAT),
                n("Mul", ["mask", "types"], ["mask_b"]),
                n("Sub", ["mask", "mask_b"], ["mask_a"]),
            ]
        )
        masked_mean("mask_a", "mean_a")
        masked_mean("mask_b", "mean_b")
        nodes.append(n("Mul", ["mean_a", "mean_b"], ["features"]))
    else:
        masked_mean("mask", "features")
    nodes.extend(
        [
            n("MatMul", ["features", "w"], ["dot"]),
            n("Add", ["dot", "bias"], ["logit"]),  # (B, 1)
        ]
    )
    out_shape: list[str | int | None]
    if output == "n1":
        out_name, out_shape = "logit", ["batch", 1]
    elif output == "n":
        nodes.append(n("Squeeze", ["logit", "axis1"], ["scores"]))
        out_name, out_shape = "scores", ["batch"]
    elif output == "n2":  # two-class head [-l/2, +l/2]: softmax positive == sigmoid(l)
        nodes.extend(
            [
                n("Mul", ["logit", "neg_half"], ["neg"]),
                n("Mul", ["logit", "half"], ["pos"]),
                n("Concat", ["neg", "pos"], ["scores"], axis=1),
            ]
        )
        out_name, out_shape = "scores", ["batch", 2]
    elif output == "n3":
        nodes.append(n("Concat", ["logit", "logit", "logit"], ["scores"], axis=1))
        out_name, out_shape = "scores", ["batch", 3]
    else:
        raise AssertionError(output)
    graph = helper.make_graph(
        nodes,
        "tiny_cross_encoder",
        inputs,
        [helper.make_tensor_value_info(out_name, TensorProto.FLOAT, out_shape)],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return table


@dataclass
class TinyModel:
    dir: Path
    table: np.ndarray

    def expected(self, query: str, docs: list[str], max_length: int = 512) -> list[float]:
        """The reference: the model's math in numpy over independently made encodings."""
        tokenizer = Tokenizer.from_file(str(self.dir / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=max_length)
        out = []
        for doc in docs:
            enc = tokenizer.encode(query, doc)
            ids, types = np.array(enc.ids), np.array(enc.type_ids)
            emb = self.table[ids].astype(np.float64)
            mean_a = emb[types == 0].mean(axis=0)
            mean_b = emb[types == 1].mean(axis=0)
            out.append(_sigmoid(SCALE * float(mean_a @ mean_b) + BIAS))
        return out


def _make_model_dir(root: Path, **kwargs: Any) -> TinyModel:
    root.mkdir(parents=True, exist_ok=True)
    tokenizer = _build_tokenizer()
    tokenizer.save(str(root / "tokenizer.json"))
    table = _build_model(root / "model.onnx", tokenizer.get_vocab_size(), **kwargs)
    return TinyModel(root, table)


@pytest.fixture
def tiny(tmp_path: Path) -> TinyModel:
    return _make_model_dir(tmp_path / "tiny-cross-encoder")


ONNX_DOCS = [
    "stock market news today",
    "red apple pie recipe with cinnamon",
    "green apple and pear salad",
    "the cat sat on the mat",
    "how to bake a red apple pie",
    "weather forecast rain tomorrow",
    "unknown words only zzz qqq",
    "python programming tutorial for beginners",
    "a dog chased the cat in the park",
    "red",
    "",
]


def test_onnx_scores_match_the_reference(tiny: TinyModel) -> None:
    reranker = OnnxCrossEncoderReranker(tiny.dir)
    scores = reranker.rerank(QUERY, ONNX_DOCS)
    assert len(scores) == len(ONNX_DOCS)
    assert all(isinstance(s, float) and 0.0 <= s <= 1.0 for s in scores)
    assert scores == pytest.approx(tiny.expected(QUERY, ONNX_DOCS), abs=1e-5)


def test_onnx_documents_sharing_query_words_score_higher(tiny: TinyModel) -> None:
    values = OnnxCrossEncoderReranker(tiny.dir).rerank(QUERY, ONNX_DOCS)
    scores = dict(zip(ONNX_DOCS, values, strict=True))
    relevant = ["red apple pie recipe with cinnamon", "how to bake a red apple pie"]
    unrelated = ["stock market news today", "the cat sat on the mat", "unknown words only zzz qqq"]
    for good in relevant:
        for bad in unrelated:
            assert scores[good] > scores[bad] + 0.3
    assert scores["green apple and pear salad"] > max(scores[b] for b in unrelated)
    assert scores["stock market news today"] == pytest.approx(_sigmoid(BIAS), abs=0.05)


def test_onnx_preserves_input_order(tiny: TinyModel) -> None:
    reranker = OnnxCrossEncoderReranker(tiny.dir)
    scores = reranker.rerank(QUERY, ONNX_DOCS)
    assert reranker.rerank(QUERY, ONNX_DOCS[::-1]) == pytest.approx(scores[::-1], abs=1e-6)
    perm = [3, 0, 10, 4, 1, 9, 2, 8, 5, 7, 6]
    assert reranker.rerank(QUERY, [ONNX_DOCS[i] for i in perm]) == pytest.approx(
        [scores[i] for i in perm], abs=1e-6
    )


def test_onnx_is_deterministic(tiny: TinyModel) -> None:
    first = OnnxCrossEncoderReranker(tiny.dir).rerank(QUERY, ONNX_DOCS)
    again = OnnxCrossEncoderReranker(tiny.dir)
    assert again.rerank(QUERY, ONNX_DOCS) == first
    assert again.rerank(QUERY, ONNX_DOCS) == first


@pytest.mark.parametrize("batch_size", [1, 2, 3, 16])
def test_onnx_batching_does_not_change_scores(tiny: TinyModel, batch_size: int) -> None:
    reference = OnnxCrossEncoderReranker(tiny.dir, batch_size=16).rerank(QUERY, ONNX_DOCS)
    scores = OnnxCrossEncoderReranker(tiny.dir, batch_size=batch_size).rerank(QUERY, ONNX_DOCS)
    assert scores == pytest.approx(reference, abs=1e-6)


def test_onnx_truncates_to_max_length(tiny: TinyModel) -> None:
    long_doc = " ".join(["cat"] * 40) + " red apple pie recipe"
    short_doc = "red apple pie recipe"
    docs = [long_doc, short_doc, "stock market news"]
    reranker = OnnxCrossEncoderReranker(tiny.dir, max_length=16)
    scores = reranker.rerank(QUERY, docs)
    assert scores == pytest.approx(tiny.expected(QUERY, docs, max_length=16), abs=1e-5)
    # the matching words fell off the end of the long document
    assert scores[0] < scores[1]
    untruncated = OnnxCrossEncoderReranker(tiny.dir).rerank(QUERY, docs)
    assert untruncated[0] > scores[0]


@pytest.mark.parametrize("output", ["n", "n1", "n2"])
def test_onnx_output_layouts(tmp_path: Path, output: str) -> None:
    model = _make_model_dir(tmp_path / output, output=output)
    scores = OnnxCrossEncoderReranker(model.dir).rerank(QUERY, ONNX_DOCS)
    assert scores == pytest.approx(model.expected(QUERY, ONNX_DOCS), abs=1e-5)


def test_onnx_int32_inputs(tmp_path: Path) -> None:
    model = _make_model_dir(tmp_path / "int32", int32=True)
    scores = OnnxCrossEncoderReranker(model.dir).rerank(QUERY, ONNX_DOCS)
    assert scores == pytest.approx(model.expected(QUERY, ONNX_DOCS), abs=1e-5)


def test_onnx_feeds_only_declared_inputs(tmp_path: Path) -> None:
    model = _make_model_dir(tmp_path / "no-types", token_types=False)
    docs = ["red apple", "cat"]
    scores = OnnxCrossEncoderReranker(model.dir).rerank("pie", docs)
    tokenizer = Tokenizer.from_file(str(model.dir / "tokenizer.json"))
    tokenizer.no_padding()
    expected = []
    for doc in docs:
        mean = model.table[tokenizer.encode("pie", doc).ids].astype(np.float64).mean(axis=0)
        expected.append(_sigmoid(SCALE * float(mean.sum()) + BIAS))
    assert scores == pytest.approx(expected, abs=1e-5)


def test_onnx_model_in_onnx_subdirectory(tmp_path: Path, tiny: TinyModel) -> None:
    hub = tmp_path / "hub-layout"
    (hub / "onnx").mkdir(parents=True)
    (hub / "tokenizer.json").write_bytes((tiny.dir / "tokenizer.json").read_bytes())
    (hub / "onnx" / "model.onnx").write_bytes((tiny.dir / "model.onnx").read_bytes())
    scores = OnnxCrossEncoderReranker(hub).rerank(QUERY, ONNX_DOCS)
    assert scores == pytest.approx(tiny.expected(QUERY, ONNX_DOCS), abs=1e-5)


def test_onnx_is_thread_safe_from_a_cold_start(tiny: TinyModel) -> None:
    reranker = OnnxCrossEncoderReranker(tiny.dir, batch_size=3)
    barrier = threading.Barrier(8)

    def call(i: int) -> list[float]:
        barrier.wait()
        return reranker.rerank(QUERY, ONNX_DOCS[i % 3 :])

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(call, range(8)))
    expected = tiny.expected(QUERY, ONNX_DOCS)
    for i, scores in enumerate(results):
        assert scores == pytest.approx(expected[i % 3 :], abs=1e-5)


def test_onnx_empty_and_bad_arguments(tiny: TinyModel) -> None:
    reranker = OnnxCrossEncoderReranker(tiny.dir)
    assert reranker.rerank(QUERY, []) == []
    with pytest.raises(RerankError):
        reranker.rerank(QUERY, [b"bytes"])  # type: ignore[list-item]
    with pytest.raises(RerankError):
        reranker.rerank(QUERY, "not a list")
    for field_name, kwargs in [
        ("batch_size", {"batch_size": 0}),
        ("max_length", {"max_length": 0}),
    ]:
        with pytest.raises(ValidationError, match=field_name):
            OnnxCrossEncoderReranker(tiny.dir, **kwargs)


def test_onnx_satisfies_the_protocol_and_is_lazy(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "ms-marco-MiniLM-L-6-v2"
    reranker = OnnxCrossEncoderReranker(missing)  # no file access in the constructor
    assert isinstance(reranker, Reranker)
    assert reranker.name == "onnx:ms-marco-MiniLM-L-6-v2"


def test_onnx_missing_directory_raises_rerank_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    reranker = OnnxCrossEncoderReranker(missing)
    with pytest.raises(RerankError, match="no-such-model"):
        reranker.rerank(QUERY, ["doc"])
    with pytest.raises(RerankError, match="no-such-model"):
        reranker.load()


def test_onnx_missing_files_raise_rerank_error_naming_the_path(
    tmp_path: Path, tiny: TinyModel
) -> None:
    no_model = tmp_path / "no-model"
    no_model.mkdir()
    (no_model / "tokenizer.json").write_bytes((tiny.dir / "tokenizer.json").read_bytes())
    with pytest.raises(RerankError, match=r"model\.onnx") as info:
        OnnxCrossEncoderReranker(no_model).rerank(QUERY, ["doc"])
    assert str(no_model) in str(info.value)

    no_tokenizer = tmp_path / "no-tokenizer"
    no_tokenizer.mkdir()
    (no_tokenizer / "model.onnx").write_bytes((tiny.dir / "model.onnx").read_bytes())
    with pytest.raises(RerankError, match=r"tokenizer\.json") as info:
        OnnxCrossEncoderReranker(no_tokenizer).load()
    assert str(no_tokenizer / "tokenizer.json") in str(info.value)


def test_onnx_corrupt_files_raise_rerank_error(tmp_path: Path, tiny: TinyModel) -> None:
    bad_model = tmp_path / "bad-model"
    bad_model.mkdir()
    (bad_model / "tokenizer.json").write_bytes((tiny.dir / "tokenizer.json").read_bytes())
    (bad_model / "model.onnx").write_bytes(b"this is not a protobuf")
    with pytest.raises(RerankError, match=r"model\.onnx"):
        OnnxCrossEncoderReranker(bad_model).rerank(QUERY, ["doc"])

    bad_tokenizer = tmp_path / "bad-tokenizer"
    bad_tokenizer.mkdir()
    (bad_tokenizer / "model.onnx").write_bytes((tiny.dir / "model.onnx").read_bytes())
    (bad_tokenizer / "tokenizer.json").write_text("{not json")
    with pytest.raises(RerankError, match=r"tokenizer\.json"):
        OnnxCrossEncoderReranker(bad_tokenizer).rerank(QUERY, ["doc"])


def test_onnx_unexpected_output_shape_raises_rerank_error(tmp_path: Path) -> None:
    model = _make_model_dir(tmp_path / "three-class", output="n3")
    with pytest.raises(RerankError, match="output shape"):
        OnnxCrossEncoderReranker(model.dir).rerank(QUERY, ONNX_DOCS)


def test_rerank_error_is_an_agentmem_error() -> None:
    assert issubclass(RerankError, AgentMemError)
