"""The core never imports an agent framework (DESIGN.md convention 1).

A fresh interpreter installs a meta path finder that refuses (and records) every import of
LangChain, LangGraph, LlamaIndex or the adapter packages, then imports every module of
``agentmem`` and drives the API end to end on a temporary data dir.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

BLOCKER = textwrap.dedent(
    """
    import importlib.abc
    import sys

    BLOCKED = ("langchain", "llama_index", "langgraph", "llamaindex")
    attempts = []

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path=None, target=None):
            if fullname.split(".")[0].startswith(BLOCKED):
                attempts.append(fullname)
                raise ImportError(f"{fullname} is blocked in this test")
            return None

    sys.meta_path.insert(0, Blocker())
    """
)

SCRIPT = BLOCKER + textwrap.dedent(
    """
    import json
    import pkgutil
    import importlib

    # the blocker works: a framework that is installed cannot be imported
    try:
        import langchain_core  # noqa: F401
    except ImportError:
        blocker_works = True
    else:
        blocker_works = False
    attempts.clear()

    import agentmem
    from agentmem import AgentMemory

    modules = []
    for info in pkgutil.walk_packages(agentmem.__path__, "agentmem."):
        if info.name.endswith("__main__"):
            continue
        importlib.import_module(info.name)
        modules.append(info.name)

    with AgentMemory(sys.argv[1]) as mem:
        m = mem.bind(tenant_id="acme", user_id="u1", agent_id="a1", session_id="s1")
        m.add_message("user", "My daughter plays the violin every evening")
        m.remember("The deploy key for staging is KX-93-ZQ-771")
        key = m.add_tool_output("call_1", "tool says: all green").source_ref
        m.add_document("Refunds are accepted within 30 days of delivery.", source_ref="r.md")
        assert mem.flush(timeout=120)
        paraphrase = [h.content for h in m.recall("musical instrument child").items]
        exact = [h.content for h in m.recall("KX-93-ZQ-771").items]
        tool = m.read_tool_output(key)
        forgotten = m.forget(m.recall("refund").items[0].id)

    loaded = sorted(
        name for name in sys.modules if name.split(".")[0].startswith(
            ("langchain", "llama_index", "langgraph", "llamaindex")
        )
    )
    print(json.dumps({
        "blocker_works": blocker_works,
        "attempts": attempts,
        "loaded": loaded,
        "modules": modules,
        "paraphrase": paraphrase,
        "exact": exact,
        "tool": tool,
        "forgotten": forgotten,
    }))
    """
)


def test_core_runs_with_frameworks_blocked(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "mem")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["blocker_works"] is True
    assert out["attempts"] == []
    assert out["loaded"] == []
    # every module of the core was imported, not just the package
    assert {"agentmem.memory", "agentmem.recall.engine", "agentmem.cli"} <= set(out["modules"])
    assert out["paraphrase"][0] == "My daughter plays the violin every evening"
    assert out["exact"][0] == "The deploy key for staging is KX-93-ZQ-771"
    assert out["tool"] == "tool says: all green"
    assert out["forgotten"] is True


def test_blocker_detects_a_framework_import(tmp_path: Path) -> None:
    """The check above can fail: a module that imports LangChain is caught."""
    (tmp_path / "leaky.py").write_text("import langchain_core.documents\n")
    script = BLOCKER + "\ntry:\n    import leaky\nexcept ImportError:\n    pass\nprint(attempts)\n"
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        check=True,
    )
    assert "langchain_core" in done.stdout
