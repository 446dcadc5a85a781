"""The name agentmem is installed by, and the ``pip`` command messages print.

The index's ``agentmem`` is another project, so this one is distributed as
:data:`DISTRIBUTION` (``pip install "agentmem-layer[all]"``). The import packages keep their
names (``agentmem``, ``langchain_agentmem``, ``llamaindex_agentmem``), and so does the
``agentmem`` command.

Example:
    >>> pip_install("server")
    "pip install 'agentmem-layer[server]'"
"""

from __future__ import annotations

import importlib.metadata

__all__ = ["DISTRIBUTION", "installed_version", "pip_install"]

#: The distribution (``[project].name`` in ``pyproject.toml``).
DISTRIBUTION = "agentmem-layer"


def installed_version() -> str | None:
    """The installed distribution's version; None when running from a source tree (a
    package named ``agentmem`` installed beside it is another project's)."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def pip_install(extra: str | None = None) -> str:
    """The command that installs agentmem, with ``extra`` when given."""
    target = f"{DISTRIBUTION}[{extra}]" if extra else DISTRIBUTION
    return f"pip install '{target}'"
