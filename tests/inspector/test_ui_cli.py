"""``agentmem --home DIR ui`` as a user runs it: a real process on loopback, read-only beside
the process writing to the dir; ``--writable`` refused while that process holds it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from _agentmem_server import ServerProcess

from agentmem import AgentMemory


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    return subprocess.run(
        [sys.executable, "-m", "agentmem.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def test_a_missing_data_dir_is_refused(tmp_path: Path) -> None:
    done = _cli("--home", str(tmp_path / "nowhere"), "ui")
    assert done.returncode == 2 and "no data dir" in done.stderr
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.slow
def test_read_only_beside_the_writer(tmp_path: Path) -> None:
    home = tmp_path / "mem"
    with AgentMemory(home) as writer:  # the application, holding the dir
        m = writer.bind("acme", user_id="u1")
        m.remember("Alice lives in Porto")
        writer.flush()
        refused = _cli("--home", str(home), "ui", "--writable", "--port", "0")
        assert refused.returncode == 1 and "Without --writable" in refused.stderr
        with ServerProcess(home, command="ui") as ui:
            assert ui.url.startswith("http://127.0.0.1:")
            pages = httpx.Client(base_url=ui.url, timeout=30)
            assert "Alice lives in Porto" in pages.get("/ui/rows?tenant=acme").text
            m.remember("Bob keeps bees")  # written after the inspector opened the dir
            assert "Bob keeps bees" in pages.get("/ui/rows?tenant=acme").text
            found = pages.get("/ui/search?q=who+keeps+bees&tenant=acme&user=u1").text
            assert 'id="result"' in found and "Bob keeps bees" in found.split('id="result"')[1]
            row = writer.records.read("SELECT id FROM memories LIMIT 1")[0][0]
            assert pages.post(f"/ui/memories/{row}/forget").status_code == 403
            assert pages.get("/ui", headers={"host": "rebound.example"}).status_code == 421
            assert "Alice" not in ui.output() and "bees" not in ui.output()
