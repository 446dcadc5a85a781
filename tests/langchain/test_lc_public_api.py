"""The public surface of ``langchain_agentmem`` and its import boundaries."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import langchain_agentmem

EXPECTED_ALL = [
    "ADVISORY_HEADER",
    "TOOL_CLASSES",
    "AgentMemChatMessageHistory",
    "AgentMemMiddleware",
    "AgentMemRetriever",
    "AgentMemStore",
    "AgentMemTool",
    "AnswerInput",
    "AnswerTool",
    "CompactInput",
    "CompactTool",
    "DeleteKnowledgeInput",
    "DeleteKnowledgeTool",
    "DeleteMemoryInput",
    "DeleteMemoryTool",
    "GetAgentStateInput",
    "GetAgentStateTool",
    "GetKnowledgeInput",
    "GetKnowledgeTool",
    "ListKnowledgeInput",
    "ListKnowledgeTool",
    "ReadToolOutputInput",
    "ReadToolOutputTool",
    "RecallInput",
    "RecallTool",
    "RememberFactInput",
    "RememberFactTool",
    "SearchMemoryInput",
    "SearchMemoryTool",
    "SessionDetailInput",
    "SessionDetailTool",
    "SetAgentStateInput",
    "SetAgentStateTool",
    "StoreMemoryInput",
    "StoreMemoryTool",
    "UpsertKnowledgeInput",
    "UpsertKnowledgeTool",
    "create_memory_tools",
    "format_hits",
]


def test_all_is_pinned() -> None:
    assert langchain_agentmem.__all__ == EXPECTED_ALL


def test_every_public_name_resolves() -> None:
    for name in langchain_agentmem.__all__:
        assert getattr(langchain_agentmem, name) is not None, name


def test_tool_classes_are_the_core_tools() -> None:
    from agentmem.tools import ALL_TOOLS

    assert list(langchain_agentmem.TOOL_CLASSES) == list(ALL_TOOLS)
    assert sorted(langchain_agentmem.TOOL_CLASSES) == [
        "answer",
        "compact",
        "delete_knowledge",
        "delete_memory",
        "get_agent_state",
        "get_knowledge",
        "list_knowledge",
        "read_tool_output",
        "recall",
        "remember_fact",
        "search_memory",
        "session_detail",
        "set_agent_state",
        "store_memory",
        "upsert_knowledge",
    ]


def test_package_ships_py_typed() -> None:
    from importlib.resources import files

    assert files("langchain_agentmem").joinpath("py.typed").is_file()


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_core_adapters_need_only_langchain_core() -> None:
    """Without langgraph and langchain, everything but the store and middleware works,
    and those two fail with an ImportError naming the extra to install."""
    proc = _run(
        """
        import sys
        for name in ("langgraph", "langchain"):
            sys.modules[name] = None  # blocks the import
        import langchain_agentmem as lca
        assert lca.AgentMemRetriever and lca.create_memory_tools
        for name, extra in (("AgentMemStore", "langgraph"),
                            ("AgentMemMiddleware", "langchain-agents")):
            try:
                getattr(lca, name)
            except ImportError as exc:
                assert f"pip install 'agentmem-layer[{extra}]'" in str(exc), exc
            else:
                raise AssertionError(name + " imported without its dependency")
        print("ok")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_importing_the_package_does_not_import_langgraph_or_langchain() -> None:
    proc = _run(
        """
        import sys
        import langchain_agentmem
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("langgraph", "langchain"))
        print(loaded)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
