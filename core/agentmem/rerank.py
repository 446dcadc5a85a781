"""Rerankers: score (query, document) pairs with a cross-encoder.

Recall over-fetches candidates, fuses them, and may then hand the fused list to a
:class:`Reranker` for the final ordering. Every reranker returns one score per document,
in input order, higher is better, mapped into ``[0, 1]``. Any failure is raised as
:class:`~agentmem.errors.RerankError` and nothing else, so recall can catch exactly that
one class and fall back to the fused order (fail-open).

Two backends:

* :class:`HttpReranker` calls a Hugging Face Text Embeddings Inference (TEI) server's
  ``POST /rerank``. By default TEI itself maps the model's logit into ``[0, 1]``
  (``raw_scores=false``: a sigmoid for single-logit cross-encoders); with
  ``raw_scores=True`` TEI returns raw logits and this client applies the sigmoid.
* :class:`OnnxCrossEncoderReranker` runs an exported BERT-style cross-encoder locally with
  onnxruntime. The model returns logits; a single logit is passed through a sigmoid, a
  two-class head is turned into the probability of the last (positive) class.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import httpx
import numpy as np

from agentmem.config import RerankConfig
from agentmem.errors import RerankError, ValidationError

if TYPE_CHECKING:
    from types import TracebackType

    from numpy.typing import NDArray
    from tokenizers import Tokenizer

__all__ = [
    "HttpReranker",
    "OnnxCrossEncoderReranker",
    "Reranker",
]

ENV_RERANKER_URL = "AGENTMEM_RERANKER_URL"
_DEFAULT_TIMEOUT = 2.0
_MAX_RESPONSE_BYTES = 8 * 1024 * 1024
_SCORE_SLACK = 1e-6


@runtime_checkable
class Reranker(Protocol):
    """Scores documents against a query with a cross-encoder.

    Implementations must be safe to call from several threads at once.

    Example:
        >>> def best_first(reranker: Reranker, query: str, docs: list[str]) -> list[str]:
        ...     scores = reranker.rerank(query, docs)
        ...     return [d for _, d in sorted(zip(scores, docs), reverse=True)]
    """

    @property
    def name(self) -> str:
        """A short, stable identifier of the backend and model (for logs and results)."""
        ...

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """Score every document against the query.

        Args:
            query: The recall query.
            documents: Candidate texts. May be empty.

        Returns:
            One score per document, in the same order as ``documents``, each in
            ``[0, 1]``, higher meaning more relevant.

        Raises:
            RerankError: On any failure; no other exception escapes.
        """
        ...


def _sigmoid(x: float) -> float:
    """Numerically stable logistic function."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def _check_inputs(query: object, documents: object) -> list[str]:
    """Validate rerank arguments, raising RerankError (the only error rerankers raise)."""
    if not isinstance(query, str):
        raise RerankError(f"query must be a str, got {type(query).__name__}")
    if isinstance(documents, str | bytes) or not isinstance(documents, Sequence):
        raise RerankError(f"documents must be a sequence of str, got {type(documents).__name__}")
    docs = list(documents)
    for i, doc in enumerate(docs):
        if not isinstance(doc, str):
            raise RerankError(f"documents[{i}] must be a str, got {type(doc).__name__}", index=i)
    return docs


# --------------------------------------------------------------------------------------
# HTTP (Text Embeddings Inference)
# --------------------------------------------------------------------------------------


class HttpReranker:
    """A reranker served over HTTP by Hugging Face Text Embeddings Inference (TEI).

    Sends ``POST {base_url}/rerank`` with ``{"query", "texts", "raw_scores", "truncate":
    true}`` and expects TEI's answer: a JSON list of ``{"index": int, "score": float}``,
    one entry per text (TEI sorts them by descending score; this client maps them back to
    input order). The response is validated strictly; anything unexpected raises
    :class:`RerankError`.

    Scores: with ``raw_scores=False`` (default) TEI already returns values in ``[0, 1]``
    (sigmoid of the logit) and they are used as-is; with ``raw_scores=True`` TEI returns
    logits and this client applies the sigmoid.

    Timeouts: ``timeout`` bounds each network phase (connect, write, each read) and also
    the whole call (an overall deadline checked while the body streams in), so a call
    returns or fails within roughly ``timeout`` seconds.

    The constructor does no I/O; the ``httpx.Client`` is created on first use (or pass
    your own ``client``, which is then not closed by :meth:`close`). Instances are
    thread-safe.

    Example:
        >>> reranker = HttpReranker("http://rerank.internal:80", timeout=1.5)
        >>> reranker.name
        'tei:http://rerank.internal:80'
        >>> # scores = reranker.rerank("cats", ["a cat sat", "stock prices"])  # [0.97, 0.01]
        >>> reranker.close()
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = _DEFAULT_TIMEOUT,
        model: str | None = None,
        client: httpx.Client | None = None,
        raw_scores: bool = False,
    ) -> None:
        """Configure the reranker; no network traffic happens here.

        Args:
            base_url: Root URL of the TEI server, e.g. ``http://martha-rerank:80``.
            timeout: Seconds allowed for one rerank call; must be positive and finite.
            model: Optional model name. TEI serves one model and ignores it; when set it is
                sent as ``"model"`` for gateways that route on it, and used in :attr:`name`.
            client: An ``httpx.Client`` to use instead of a lazily created one.
            raw_scores: Ask TEI for raw logits and apply the sigmoid client-side.

        Raises:
            ValidationError: ``base_url`` is not an http(s) URL or ``timeout`` is invalid.
        """
        url = base_url.strip().rstrip("/") if isinstance(base_url, str) else ""
        if not url.startswith(("http://", "https://")) or len(url) <= len("https://"):
            raise ValidationError("base_url", "must be an http:// or https:// URL")
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise ValidationError("timeout", "must be a positive, finite number of seconds")
        self._base_url = url
        self._url = f"{url}/rerank"
        self._timeout = float(timeout)
        self._model = model
        self._raw_scores = bool(raw_scores)
        self._client = client
        self._owns_client = client is None
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: RerankConfig) -> HttpReranker | None:
        """The reranker a :class:`~agentmem.config.RerankConfig` asks for; None when it has
        no URL (rerank disabled).

        Raises:
            ValidationError: The URL is malformed.
        """
        if not config.url:
            return None
        try:
            return cls(config.url, timeout=config.timeout)
        except ValidationError as exc:
            raise ValidationError(ENV_RERANKER_URL, str(exc)) from exc

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> HttpReranker | None:
        """:meth:`from_config` of ``RerankConfig.from_env(environ)`` (``AGENTMEM_RERANKER_URL``,
        ``AGENTMEM_RERANKER_TIMEOUT``).

        Example:
            >>> HttpReranker.from_env({}) is None
            True
            >>> HttpReranker.from_env({"AGENTMEM_RERANKER_URL": "http://tei:80"}).timeout
            2.0
        """
        return cls.from_config(RerankConfig.from_env(environ))

    @property
    def name(self) -> str:
        """``tei:<model>`` when a model name was given, else ``tei:<base_url>``."""
        return f"tei:{self._model or self._base_url}"

    @property
    def url(self) -> str:
        """The full ``/rerank`` endpoint URL."""
        return self._url

    @property
    def timeout(self) -> float:
        """Seconds allowed for one rerank call."""
        return self._timeout

    def _get_client(self) -> httpx.Client:
        client = self._client
        if client is not None:
            return client
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(timeout=self._timeout)
            return self._client

    def close(self) -> None:
        """Close the lazily created HTTP client (a client passed in is left open)."""
        if not self._owns_client:
            return
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> HttpReranker:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"HttpReranker({self._base_url!r}, timeout={self._timeout}, model={self._model!r})"

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """Score ``documents`` against ``query`` with the TEI server.

        Args:
            query: The recall query.
            documents: Candidate texts; an empty sequence returns ``[]`` without a request.

        Returns:
            One score in ``[0, 1]`` per document, in input order.

        Raises:
            RerankError: Connection refused, timeout, HTTP error status, non-JSON body or
                a response that does not score each document exactly once with a finite
                number. The message names the URL (and status), never the documents.
        """
        try:
            docs = _check_inputs(query, documents)
            if not docs:
                return []
            payload: dict[str, Any] = {
                "query": query,
                "texts": docs,
                "raw_scores": self._raw_scores,
                "truncate": True,
            }
            if self._model is not None:
                payload["model"] = self._model
            status, body = self._post(payload)
            return self._parse(status, body, len(docs))
        except RerankError:
            raise
        except Exception as exc:  # a reranker raises RerankError and nothing else
            raise RerankError(
                f"reranker at {self._url} failed unexpectedly: {type(exc).__name__}",
                url=self._url,
            ) from exc

    def _post(self, payload: dict[str, Any]) -> tuple[int, bytes]:
        deadline = time.monotonic() + self._timeout
        client = self._get_client()
        try:
            with client.stream(
                "POST",
                self._url,
                json=payload,
                headers={"Accept": "application/json"},
                timeout=self._timeout,
            ) as response:
                chunks: list[bytes] = []
                size = 0
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > _MAX_RESPONSE_BYTES:
                        raise RerankError(
                            f"reranker at {self._url} sent more than {_MAX_RESPONSE_BYTES} bytes",
                            url=self._url,
                            status=response.status_code,
                        )
                    if time.monotonic() > deadline:
                        raise RerankError(
                            f"reranker at {self._url} timed out after {self._timeout:g}s "
                            "(response too slow)",
                            url=self._url,
                            status=response.status_code,
                        )
                    chunks.append(chunk)
                return response.status_code, b"".join(chunks)
        except httpx.TimeoutException as exc:
            raise RerankError(
                f"reranker at {self._url} timed out after {self._timeout:g}s "
                f"({type(exc).__name__})",
                url=self._url,
            ) from exc
        except httpx.ConnectError as exc:
            raise RerankError(
                f"cannot connect to reranker at {self._url}: {exc}", url=self._url
            ) from exc
        except httpx.HTTPError as exc:
            raise RerankError(
                f"request to reranker at {self._url} failed: {type(exc).__name__}",
                url=self._url,
            ) from exc

    def _parse(self, status: int, body: bytes, n_docs: int) -> list[float]:
        url = self._url
        if status != 200:
            detail = ""
            try:
                err = json.loads(body)
            except ValueError:
                err = None
            if isinstance(err, dict) and isinstance(err.get("error_type"), str):
                detail = f" ({err['error_type'][:64]})"
            raise RerankError(
                f"reranker at {url} returned HTTP {status}{detail}", url=url, status=status
            )
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise RerankError(
                f"reranker at {url} returned a body that is not valid JSON", url=url, status=status
            ) from exc
        if not isinstance(data, list):
            raise RerankError(
                f"reranker at {url} returned a JSON {type(data).__name__}, expected a list of "
                '{"index", "score"} objects',
                url=url,
                status=status,
            )
        scores: list[float | None] = [None] * n_docs
        for pos, item in enumerate(data):
            if not isinstance(item, dict):
                raise RerankError(
                    f"reranker at {url}: result {pos} is not an object", url=url, status=status
                )
            index = item.get("index")
            score = item.get("score")
            if isinstance(index, bool) or not isinstance(index, int):
                raise RerankError(
                    f"reranker at {url}: result {pos} has no integer 'index'",
                    url=url,
                    status=status,
                )
            if not 0 <= index < n_docs:
                raise RerankError(
                    f"reranker at {url}: index {index} out of range for {n_docs} documents",
                    url=url,
                    status=status,
                )
            if scores[index] is not None:
                raise RerankError(
                    f"reranker at {url}: index {index} appears more than once",
                    url=url,
                    status=status,
                )
            if isinstance(score, bool) or not isinstance(score, int | float):
                raise RerankError(
                    f"reranker at {url}: result {pos} has no numeric 'score'",
                    url=url,
                    status=status,
                )
            value = float(score)
            if not math.isfinite(value):
                raise RerankError(
                    f"reranker at {url}: score for index {index} is not finite",
                    url=url,
                    status=status,
                )
            if self._raw_scores:
                value = _sigmoid(value)
            elif not -_SCORE_SLACK <= value <= 1.0 + _SCORE_SLACK:
                raise RerankError(
                    f"reranker at {url}: score {value:g} for index {index} is outside [0, 1] "
                    "(server returning raw logits? set raw_scores=True)",
                    url=url,
                    status=status,
                )
            scores[index] = min(1.0, max(0.0, value))
        missing = [i for i, s in enumerate(scores) if s is None]
        if missing:
            raise RerankError(
                f"reranker at {url}: {len(missing)} of {n_docs} documents not scored "
                f"(first missing index {missing[0]})",
                url=url,
                status=status,
            )
        return [s for s in scores if s is not None]


# --------------------------------------------------------------------------------------
# Local ONNX cross-encoder
# --------------------------------------------------------------------------------------

_KNOWN_INPUTS = frozenset({"input_ids", "attention_mask", "token_type_ids"})


class _LoadedModel:
    """The immutable result of loading a model directory (shared across threads)."""

    def __init__(
        self,
        session: Any,
        tokenizer: Tokenizer,
        input_dtypes: dict[str, type[np.integer[Any]]],
        output_name: str,
        pad_id: int,
    ) -> None:
        self.session = session
        self.tokenizer = tokenizer
        self.input_dtypes = input_dtypes
        self.output_name = output_name
        self.pad_id = pad_id


class OnnxCrossEncoderReranker:
    """A local cross-encoder run with onnxruntime from an exported model directory.

    The directory holds ``model.onnx`` (or ``onnx/model.onnx``, the Hugging Face Hub layout)
    and ``tokenizer.json``, as exported for BERT-style cross-encoders such as
    ``cross-encoder/ms-marco-MiniLM-L-6-v2``. Each (query, document) pair is encoded as a
    sentence pair (``[CLS] query [SEP] document [SEP]`` for BERT), truncated
    ``longest_first`` to ``max_length`` tokens and padded to the longest pair of its
    batch. The model gets whichever of ``input_ids``, ``attention_mask`` and
    ``token_type_ids`` it declares, in the integer type it declares.

    Scores: the first model output holds logits of shape ``(n, 1)`` or ``(n,)`` and the
    score is ``sigmoid(logit)``; for a two-class head ``(n, 2)`` the score is the softmax
    probability of the last (positive) class, ``sigmoid(l1 - l0)``.

    Files are read on the first :meth:`rerank` (or an explicit :meth:`load`), once, under a
    lock; afterwards calls run concurrently.

    Example:
        >>> reranker = OnnxCrossEncoderReranker("models/ms-marco-MiniLM-L-6-v2")
        >>> reranker.name
        'onnx:ms-marco-MiniLM-L-6-v2'
        >>> # reranker.rerank("capital of France", ["Paris is ...", "Bananas ..."])
        >>> # -> [0.998, 0.0001]
    """

    def __init__(
        self,
        model_dir: str | os.PathLike[str],
        *,
        max_length: int = 512,
        batch_size: int = 16,
    ) -> None:
        """Configure the reranker; no files are read here.

        Args:
            model_dir: Directory with ``model.onnx`` (or ``onnx/model.onnx``) and
                ``tokenizer.json``.
            max_length: Maximum tokens per (query, document) pair, special tokens included.
            batch_size: Pairs per onnxruntime call.

        Raises:
            ValidationError: ``max_length`` or ``batch_size`` is not a positive integer.
        """
        for field, value in (("max_length", max_length), ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValidationError(field, "must be a positive integer")
        self._model_dir = Path(model_dir)
        self._max_length = max_length
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._loaded: _LoadedModel | None = None

    @property
    def name(self) -> str:
        """``onnx:<directory name>``."""
        return f"onnx:{self._model_dir.name}"

    @property
    def model_dir(self) -> Path:
        """The model directory."""
        return self._model_dir

    def __repr__(self) -> str:
        return (
            f"OnnxCrossEncoderReranker({str(self._model_dir)!r}, "
            f"max_length={self._max_length}, batch_size={self._batch_size})"
        )

    def load(self) -> None:
        """Load the model and tokenizer now instead of on the first :meth:`rerank`.

        Raises:
            RerankError: A file is missing or cannot be loaded, or the model's inputs or
                outputs do not look like a cross-encoder's.
        """
        self._ensure_loaded()

    def _ensure_loaded(self) -> _LoadedModel:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _model_path(self) -> Path:
        candidates = [self._model_dir / "model.onnx", self._model_dir / "onnx" / "model.onnx"]
        for path in candidates:
            if path.is_file():
                return path
        if not self._model_dir.is_dir():
            raise RerankError(
                f"cross-encoder model directory not found: {self._model_dir}",
                path=str(self._model_dir),
            )
        raise RerankError(
            f"cross-encoder model file not found: {candidates[0]} (nor {candidates[1]})",
            path=str(candidates[0]),
        )

    def _load(self) -> _LoadedModel:
        model_path = self._model_path()
        tokenizer_path = self._model_dir / "tokenizer.json"
        if not tokenizer_path.is_file():
            raise RerankError(
                f"cross-encoder tokenizer not found: {tokenizer_path}", path=str(tokenizer_path)
            )
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - both are core dependencies
            raise RerankError(f"cannot import the ONNX cross-encoder runtime: {exc}") from exc

        try:
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
        except Exception as exc:
            raise RerankError(
                f"cannot load tokenizer {tokenizer_path}: {exc}", path=str(tokenizer_path)
            ) from exc
        padding = tokenizer.padding
        pad_id = 0
        if padding is not None and isinstance(padding.get("pad_id"), int):
            pad_id = int(padding["pad_id"])
        else:
            for token in ("[PAD]", "<pad>"):
                token_id = tokenizer.token_to_id(token)
                if token_id is not None:
                    pad_id = token_id
                    break
        try:
            tokenizer.no_padding()  # we pad per batch ourselves
            tokenizer.enable_truncation(max_length=self._max_length, strategy="longest_first")
        except Exception as exc:
            raise RerankError(
                f"cannot configure tokenizer {tokenizer_path}: {exc}", path=str(tokenizer_path)
            ) from exc

        try:
            options = ort.SessionOptions()
            options.log_severity_level = 3
            session = ort.InferenceSession(
                str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            raise RerankError(
                f"cannot load ONNX model {model_path}: {exc}", path=str(model_path)
            ) from exc

        input_dtypes: dict[str, type[np.integer[Any]]] = {}
        for inp in session.get_inputs():
            if inp.name not in _KNOWN_INPUTS:
                raise RerankError(
                    f"ONNX model {model_path} has an unsupported input {inp.name!r} "
                    f"(supported: {sorted(_KNOWN_INPUTS)})",
                    path=str(model_path),
                )
            if inp.type == "tensor(int64)":
                input_dtypes[inp.name] = np.int64
            elif inp.type == "tensor(int32)":
                input_dtypes[inp.name] = np.int32
            else:
                raise RerankError(
                    f"ONNX model {model_path}: input {inp.name!r} has type {inp.type}, "
                    "expected tensor(int64) or tensor(int32)",
                    path=str(model_path),
                )
        if "input_ids" not in input_dtypes:
            raise RerankError(
                f"ONNX model {model_path} has no 'input_ids' input", path=str(model_path)
            )
        outputs = session.get_outputs()
        if not outputs:
            raise RerankError(f"ONNX model {model_path} has no outputs", path=str(model_path))
        return _LoadedModel(session, tokenizer, input_dtypes, outputs[0].name, pad_id)

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """Score ``documents`` against ``query`` with the local cross-encoder.

        Args:
            query: The recall query.
            documents: Candidate texts; an empty sequence returns ``[]``.

        Returns:
            One score in ``[0, 1]`` per document, in input order.

        Raises:
            RerankError: Missing or unloadable model files, a tokenizer or runtime failure,
                or model output of an unexpected shape or with non-finite values.
        """
        try:
            docs = _check_inputs(query, documents)
            if not docs:
                return []
            model = self._ensure_loaded()
            scores: list[float] = []
            for start in range(0, len(docs), self._batch_size):
                batch = docs[start : start + self._batch_size]
                scores.extend(self._score_batch(model, query, batch))
            return scores
        except RerankError:
            raise
        except Exception as exc:  # a reranker raises RerankError and nothing else
            raise RerankError(
                f"cross-encoder {self.name} failed: {type(exc).__name__}: {exc}",
                path=str(self._model_dir),
            ) from exc

    def _score_batch(self, model: _LoadedModel, query: str, batch: list[str]) -> list[float]:
        encodings = model.tokenizer.encode_batch([(query, doc) for doc in batch])
        n = len(encodings)
        width = max(len(e.ids) for e in encodings)
        ids = np.full((n, width), model.pad_id, dtype=np.int64)
        mask = np.zeros((n, width), dtype=np.int64)
        types = np.zeros((n, width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            length = len(enc.ids)
            ids[row, :length] = enc.ids
            mask[row, :length] = enc.attention_mask
            types[row, :length] = enc.type_ids
        arrays = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        feed = {name: arrays[name].astype(dtype) for name, dtype in model.input_dtypes.items()}
        (raw,) = model.session.run([model.output_name], feed)
        logits = self._logits(np.asarray(raw, dtype=np.float64), n)
        if not np.all(np.isfinite(logits)):
            raise RerankError(
                f"cross-encoder {self.name} produced non-finite logits", path=str(self._model_dir)
            )
        return [_sigmoid(float(x)) for x in logits]

    def _logits(self, raw: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        """Reduce the first output to one logit per pair (see the class docstring)."""
        if raw.shape == (n,):
            return raw
        if raw.ndim == 2 and raw.shape[0] == n:
            if raw.shape[1] == 1:
                return raw[:, 0]
            if raw.shape[1] == 2:
                # softmax([l0, l1])[1] == sigmoid(l1 - l0)
                return raw[:, 1] - raw[:, 0]
        raise RerankError(
            f"cross-encoder {self.name}: output shape {raw.shape} for {n} pairs, "
            f"expected ({n},), ({n}, 1) or ({n}, 2)",
            path=str(self._model_dir),
        )
