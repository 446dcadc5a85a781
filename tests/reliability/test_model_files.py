"""Unusable model files of the default embedder are reported once, loudly, with the fix.

A store opened while ``tokenizer.json`` is missing (or the wrong size) warns at open with a
:class:`~agentmem.embeddings.ModelFilesWarning` naming the ``pip`` command; a file of the
right size whose checksum fails is reported once at the first write. Either way the indexer
does not retry (retrying cannot fix a file): the rows are flagged at once, stay
keyword-searchable, and recall says ``degraded``. ``agentmem doctor`` reports the files.
"""

from __future__ import annotations

import json
import logging
import shutil
import warnings
from pathlib import Path

import pytest

from agentmem import embeddings
from agentmem.cli import main
from agentmem.embeddings import ModelFilesWarning, OnnxMiniLMEmbedder, default_embedder
from agentmem.maintenance.doctor import diagnose
from agentmem.storage.rows import VEC_FAILED

IDENT = {"tenant_id": "acme", "user_id": "u1", "agent_id": "support", "session_id": "s1"}
FIX = "pip install --force-reinstall --no-deps agentmem-layer"
PACKAGED_TOKENIZER = embeddings._TOKENIZER_FILE


def _write_many(mem, n: int) -> list[str]:
    m = mem.bind(**IDENT)
    return [m.add_message("user", f"My order {4700 + i} arrived damaged").id for i in range(n)]


def _no_sleep(mem) -> list[float]:
    delays: list[float] = []
    mem.indexer._sleep = delays.append
    return delays


def test_missing_tokenizer_warns_once_at_open_and_writes_are_not_retried(
    make_memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    missing = tmp_path / "gone" / "tokenizer.json"
    monkeypatch.setattr(embeddings, "_TOKENIZER_FILE", missing)
    with pytest.warns(ModelFilesWarning) as caught:
        mem = make_memory(embedder=default_embedder(), background=False)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert f"tokenizer file {missing} is missing" in message
    assert FIX in message and "agentmem reindex" in message
    assert caught[0].filename.endswith("conftest.py")  # the line that called AgentMemory(...)

    delays = _no_sleep(mem)
    mem.indexer.batch_size = 4  # three batches
    caplog.set_level(logging.WARNING, logger="agentmem")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing more is warned per write or batch
        ids = _write_many(mem, 10)
        assert mem.flush()
    assert delays == []  # no retry with backoff
    assert [r for r in caplog.records if r.name == "agentmem.write.indexer"] == []  # said at open
    states = {r[0] for r in mem.records.read("SELECT vec_pending FROM memories")}
    assert states == {VEC_FAILED}
    m = mem.bind(**IDENT)
    result = m.recall("order 4705 damaged")
    assert ids[5] in [h.id for h in result.items] and result.degraded is True


def test_corrupt_tokenizer_is_reported_once_at_the_first_write(
    make_memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    corrupt = tmp_path / "tokenizer.json"
    data = bytearray(PACKAGED_TOKENIZER.read_bytes())
    data[1000] ^= 0x01  # same size: the open-time check passes, the checksum does not
    corrupt.write_bytes(bytes(data))
    monkeypatch.setattr(embeddings, "_TOKENIZER_FILE", corrupt)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mem = make_memory(embedder=default_embedder(), background=False)
    delays = _no_sleep(mem)
    mem.indexer.batch_size = 4
    caplog.set_level(logging.WARNING, logger="agentmem")
    _write_many(mem, 10)
    assert mem.flush()
    assert delays == []
    said = [r for r in caplog.records if r.name == "agentmem.write.indexer"]
    assert len(said) == 1 and said[0].levelno == logging.ERROR
    assert f"checksum mismatch for {corrupt}" in said[0].getMessage()
    assert FIX in said[0].getMessage()
    assert mem.stats().vector_failed == 10

    # after the fix (the file is restored), reindex embeds every row
    shutil.copyfile(PACKAGED_TOKENIZER, corrupt)
    assert mem.reindex() == 10
    stats = mem.stats()
    assert (stats.vector_failed, stats.vector_pending) == (0, 0)
    result = mem.bind(**IDENT).recall("a parcel that came broken")
    assert result.items and result.degraded is False


def test_a_healthy_install_opens_without_a_warning(make_memory) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_memory(embedder=default_embedder())


def test_doctor_reports_the_model_files(
    make_memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mem = make_memory(background=False)
    report = diagnose(mem.context)
    assert report.ok
    assert [(f["role"], f["ok"], f["sha256_verified"]) for f in report.model_files] == [
        ("model", True, True),
        ("tokenizer", True, True),
    ]
    home = mem.home
    mem.close()
    assert main(["--home", str(home), "doctor"]) == 0
    out = capsys.readouterr().out
    assert "model files: ok" in out

    truncated = tmp_path / "tokenizer.json"
    truncated.write_bytes(PACKAGED_TOKENIZER.read_bytes()[:1000])
    monkeypatch.setattr(embeddings, "_TOKENIZER_FILE", truncated)
    with pytest.warns(ModelFilesWarning):
        assert main(["--home", str(home), "--json", "doctor"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False
    bad = [f for f in data["model_files"] if not f["ok"]]
    assert [f["role"] for f in bad] == ["tokenizer"]
    assert bad[0]["fix"].startswith(FIX)
    assert any("tokenizer file" in p and FIX in p for p in data["problems"])
    with pytest.warns(ModelFilesWarning):
        assert main(["--home", str(home), "doctor"]) == 1
    out = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert "model files unusable" in out
    assert "1,000 bytes, expected 466,247" in out and FIX in out
    assert "agentmem reindex" not in out  # nothing was written: only the file needs fixing

    # rows written meanwhile failed to embed: fix the file, then reindex
    with pytest.warns(ModelFilesWarning):
        mem = make_memory(path=home, embedder=default_embedder(), background=False)
    mem.bind(**IDENT).add_message("user", "My order 4711 arrived damaged")
    mem.flush()
    mem.close()
    with pytest.warns(ModelFilesWarning):
        assert main(["--home", str(home), "doctor"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "drift found" in out and "rows whose embedding failed: 1" in out
    assert "fix the model files first" in out
    assert "run `agentmem reindex` after that" in out


def test_a_custom_embedder_has_no_model_files_to_report(make_memory, hash_embedder) -> None:
    mem = make_memory(embedder=hash_embedder, background=False)
    assert diagnose(mem.context).model_files is None
    assert OnnxMiniLMEmbedder(tmp := Path("/nonexistent")).check_files()[0].ok is False
    assert str(tmp) in (OnnxMiniLMEmbedder(tmp).check_files()[0].fix or "")
