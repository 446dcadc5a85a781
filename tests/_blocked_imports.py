"""Run code in a fresh interpreter that cannot import the engine (for the thin-client tests).

A meta-path finder placed first refuses each blocked module, so an import of one anywhere,
even deep inside a dependency, fails loudly instead of loading it.
"""

from __future__ import annotations

import subprocess
import sys

#: What a process that only talks to a server must never load: the engine's native libraries
#: and its modules.
ENGINE_MODULES: tuple[str, ...] = (
    "chromadb",
    "tantivy",
    "onnxruntime",
    "numpy",
    "tokenizers",
    "agentmem.recall.engine",
    "agentmem.memory",
    "agentmem.context",
    "agentmem.storage.records",
)

_BLOCKER = """
import sys

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ImportError(f"{name} is blocked in this process")
        return None

sys.meta_path.insert(0, Refuse())
"""


def run_blocked(code: str, blocked: tuple[str, ...] = ENGINE_MODULES) -> str:
    """Run ``code`` where ``blocked`` cannot be imported; its stdout (it must exit 0)."""
    script = f"BLOCKED = {blocked!r}\n{_BLOCKER}\n{code}"
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout
