"""Vectors on a Chroma server named by URL (``AGENTMEM_CHROMA_URL``, ``--chroma-url``).

Every operation that touches vectors runs against the session's real ``chroma run``: writes,
recall, forget and erasure (the deletion reaches the server), reindex, doctor, stats,
export/import, the CLI and ``agentmem serve``. Each test has a Chroma database of its own.
Nothing vector-related may appear under the data dir.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentmem import ValidationError
from agentmem.cli import main
from agentmem.config import ChromaAddress, Settings
from agentmem.maintenance import transfer
from agentmem.maintenance.doctor import diagnose
from agentmem.models import Identity
from agentmem.storage.chroma_server import http_client
from agentmem.storage.vector_index import collection_name

FACTS = [
    "The customer is allergic to peanuts and shellfish",
    "The deploy key for staging is KX-93-ZQ-771",
    "My daughter plays the violin every evening",
]


def _no_vectors_under(home: Path) -> None:
    names = sorted(p.name for p in home.iterdir())
    assert "chroma" not in names, names
    assert not [n for n in names if n.startswith("chroma")], names


def _server_ids(client: Any, tenant: str, partition: str) -> set[str]:
    name = collection_name(tenant, partition)
    if name not in {c.name for c in client.list_collections()}:
        return set()
    return set(client.get_collection(name).get(include=[])["ids"])


@pytest.mark.both_backends
def test_chroma_url_setting_drives_every_vector_operation(
    make_memory, chroma_url: str, chroma_client: Any, tmp_path: Path
) -> None:
    settings = Settings(chroma_url=chroma_url)
    mem = make_memory(settings=settings)
    acme = mem.bind("acme", user_id="u1", session_id="s1")
    bob = mem.bind("acme", user_id="u2", session_id="s9")
    facts = acme.remember_many(FACTS)
    bobs = bob.remember("Bob keeps a violin in the attic")
    assert mem.flush(timeout=120) is True
    _no_vectors_under(mem.home)
    assert _server_ids(chroma_client, "acme", "user:u1") == {f.id for f in facts}

    # recall: vector half (paraphrase) and keyword half (exact token)
    assert acme.recall("musical instrument child").items[0].id == facts[2].id
    assert acme.recall("KX-93-ZQ-771").items[0].id == facts[1].id

    # doctor and stats see the server's vectors
    report = diagnose(mem.context)
    assert report.ok, report
    assert report.vectors == 4
    stats = mem.stats()
    assert stats.live == 4 and stats.vector_pending == 0
    assert stats.disk_bytes["vectors"] == 0  # nothing of the vectors is in the data dir

    # forget reaches the server
    assert acme.forget(facts[0].id) is True
    assert mem.flush(timeout=120)
    assert _server_ids(chroma_client, "acme", "user:u1") == {facts[1].id, facts[2].id}

    # erasure of a user reaches the server; the other user's vectors stay
    receipt = mem.erase(tenant_id="acme", user_id="u1")
    assert receipt.vectors == 2
    assert _server_ids(chroma_client, "acme", "user:u1") == set()
    assert _server_ids(chroma_client, "acme", "user:u2") == {bobs.id}
    assert diagnose(mem.context).ok

    # reindex rebuilds the server-side collections from the records
    chroma_client.delete_collection(collection_name("acme", "user:u2"))
    assert diagnose(mem.context).ok is False  # the missing vectors are found on the server
    assert mem.reindex() == 1
    assert _server_ids(chroma_client, "acme", "user:u2") == {bobs.id}
    assert bob.recall("string instrument stored upstairs").items[0].id == bobs.id

    _no_vectors_under(mem.home)


def test_export_import_between_stores_on_a_chroma_server(
    make_memory, chroma_url: str, chroma_client: Any
) -> None:
    mem = make_memory(settings=Settings(chroma_url=chroma_url))
    bob = mem.bind("acme", user_id="u2", session_id="s9")
    bobs = bob.remember("Bob keeps a violin in the attic")
    assert mem.flush(timeout=120)
    # export from this store, import into another store on another Chroma database
    lines = [json.dumps(line) for line in transfer.export_lines(mem.context)]
    other_url = chroma_url.replace("?database=", "?database=other-")
    other = make_memory(settings=Settings(chroma_url=other_url))
    plan = transfer.parse_lines(lines, Identity(tenant_id="acme"))
    transfer.apply_plan(other.context, plan)
    assert other.flush(timeout=120)
    other_client = http_client(ChromaAddress.parse(other_url))
    assert _server_ids(other_client, "acme", "user:u2") == {bobs.id}
    found = other.bind("acme", user_id="u2").recall("string instrument stored upstairs")
    assert found.items[0].id == bobs.id
    _no_vectors_under(other.home)
    _no_vectors_under(mem.home)


def test_environment_variable_names_the_server(
    make_memory, chroma_url: str, chroma_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTMEM_CHROMA_URL", chroma_url)
    mem = make_memory()
    fact = mem.bind("acme", user_id="u1").remember(FACTS[2])
    assert mem.flush(timeout=120)
    assert _server_ids(chroma_client, "acme", "user:u1") == {fact.id}
    _no_vectors_under(mem.home)


def test_a_caller_client_wins_over_the_url(
    make_memory, chroma_url: str, chroma_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the URL names another database: the explicit client's database gets the vectors
    monkeypatch.setenv("AGENTMEM_CHROMA_URL", chroma_url.replace("?database=", "?database=x-"))
    mem = make_memory(chroma_client=chroma_client)
    fact = mem.bind("acme", user_id="u1").remember(FACTS[0])
    assert mem.flush(timeout=120)
    assert _server_ids(chroma_client, "acme", "user:u1") == {fact.id}


@pytest.mark.parametrize(
    "url",
    ["chroma:8000", "ftp://chroma", "http://chroma/api", "http://chroma?db=x", "http://h:70000"],
)
def test_malformed_url_is_refused_naming_it(url: str, tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="chroma_url"):
        Settings(chroma_url=url)
    with pytest.raises(ValidationError, match="chroma_url"):
        Settings.from_env({"AGENTMEM_CHROMA_URL": url})
    # the CLI stops before touching the data dir
    home = tmp_path / "home"
    assert main(["--home", str(home), "--chroma-url", url, "stats"]) == 2
    assert not home.exists()


def test_unreachable_server_keeps_writes_and_degrades_recall(
    make_memory, caplog: pytest.LogCaptureFixture
) -> None:
    url = "http://127.0.0.1:9?database=x"  # the discard port: nothing listens
    mem = make_memory(settings=Settings(chroma_url=url))  # no I/O yet
    m = mem.bind("acme", user_id="u1")
    fact = m.remember("The deploy key for staging is KX-93-ZQ-771")  # acknowledged
    result = m.recall("KX-93-ZQ-771")
    assert result.degraded is True  # no vector half; the keyword half still answers
    assert result.items[0].id == fact.id
    assert mem.flush(timeout=3) is False  # the vectors stay pending until the server is back
    assert mem.stats().vector_pending == 1
    assert "Chroma server http://127.0.0.1:9 (tenant default_tenant, database x)" in caplog.text
    _no_vectors_under(mem.home)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    status = main(list(argv))
    return status, capsys.readouterr().out


def test_cli_commands_take_chroma_url(
    capsys: pytest.CaptureFixture[str], chroma_url: str, chroma_client: Any, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    base = ["--home", str(home), "--chroma-url", chroma_url, "--tenant", "acme", "--user", "u1"]
    ids = []
    for fact in FACTS:
        status, out = _cli(capsys, *base, "--json", "remember", fact)
        assert status == 0, out
        ids.append(json.loads(out)["id"])
    status, out = _cli(capsys, *base, "--json", "recall", "musical instrument child")
    assert status == 0 and json.loads(out)["items"][0]["id"] == ids[2]
    status, out = _cli(capsys, *base, "--json", "reindex")
    assert status == 0, out
    assert _server_ids(chroma_client, "acme", "user:u1") == set(ids)
    status, out = _cli(capsys, *base, "--json", "doctor")
    assert status == 0 and json.loads(out)["ok"] is True, out
    status, out = _cli(capsys, *base, "--json", "stats")
    assert status == 0 and json.loads(out)["live"] == 3
    status, out = _cli(capsys, *base, "forget", ids[0])
    assert status == 0
    status, out = _cli(capsys, *base, "--json", "doctor")  # drains the indexer at open
    assert _cli(capsys, *base, "--json", "reindex")[0] == 0
    assert _server_ids(chroma_client, "acme", "user:u1") == set(ids[1:])
    dump = tmp_path / "dump.jsonl"
    store = base[:4]  # export writes whole tenants: no identity flags (it refuses them)
    assert _cli(capsys, *store, "export", "-o", str(dump))[0] == 0
    assert _cli(capsys, *base, "erase", "--tenant", "acme", "--user", "u1")[0] == 0
    assert _server_ids(chroma_client, "acme", "user:u1") == set()
    assert _cli(capsys, *base, "import", str(dump))[0] == 0
    status, out = _cli(capsys, *base, "--json", "recall", "musical instrument child")
    assert json.loads(out)["items"][0]["id"] == ids[2]
    status, out = _cli(capsys, *base, "--json", "keys", "create", "--tenant", "acme")
    assert status == 0 and json.loads(out)["key"]
    _no_vectors_under(home)


@pytest.mark.slow
def test_serve_keeps_vectors_on_the_server(
    chroma_url: str, chroma_client: Any, tmp_path: Path
) -> None:
    from agentmem import connect

    home = tmp_path / "served"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    env["AGENTMEM_CHROMA_URL"] = chroma_url
    created = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentmem.cli",
            "--home",
            str(home),
            "--json",
            "keys",
            "create",
            "--tenant",
            "acme",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    key = json.loads(created.stdout)["key"]
    from _agentmem_server import ServerProcess

    # the flag form on the serve command line, the environment variable for keys above
    server = ServerProcess(home, env={}, global_args=["--chroma-url", chroma_url]).start()
    try:
        with connect(server.url, api_key=key) as client:
            m = client.bind(user_id="u1")
            fact = m.remember(FACTS[2])
            assert m.recall("musical instrument child").items[0].id == fact.id
            assert client.flush(timeout=60)
        assert _server_ids(chroma_client, "acme", "user:u1") == {fact.id}
    finally:
        assert server.stop() == 0
    _no_vectors_under(home)
