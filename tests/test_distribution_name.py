"""agentmem installs as ``agentmem-layer`` (PyPI's ``agentmem`` is another project).

Everything a user types to install it names that distribution: ``pyproject.toml`` and its
self-referencing extras, the README, the docs and the messages that print a ``pip`` command.
The import packages and the ``agentmem`` command keep their names.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import agentmem
from agentmem.distribution import DISTRIBUTION, installed_version, pip_install

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
#: ``agentmem`` as a distribution: after ``pip install`` or before ``[extra]`` / ``==version``
#: (``agentmem-layer``, ``langchain_agentmem`` and ``agentmem serve`` are other names).
_OLD_NAME = re.compile(
    r"pip install[\w\s\-=\"'.,\[\]]*?(?<![\w\-./])agentmem(?![\w\-])|(?<![\w\-])agentmem(?:\[|==)"
)


def test_the_project_is_distributed_under_the_declared_name() -> None:
    project = PYPROJECT["project"]
    assert project["name"] == DISTRIBUTION == "agentmem-layer"
    assert project["scripts"] == {"agentmem": "agentmem.cli:main"}
    extras = PYPROJECT["project"]["optional-dependencies"]
    own = [
        r for reqs in extras.values() for r in reqs if r.split("[")[0] in ("agentmem", DISTRIBUTION)
    ]
    assert own and all(r.startswith(f"{DISTRIBUTION}[") for r in own), own
    packages = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    assert packages == ["agentmem*", "langchain_agentmem*", "llamaindex_agentmem*"]


def test_pip_commands_name_the_distribution() -> None:
    assert pip_install() == "pip install 'agentmem-layer'"
    assert pip_install("mcp") == "pip install 'agentmem-layer[mcp]'"


def test_version_lookups_ask_for_this_distribution() -> None:
    assert installed_version() == agentmem.__version__  # the editable install of this checkout
    core = Path(agentmem.__file__).parent
    lookups = [
        str(p.relative_to(core))
        for p in core.rglob("*.py")
        if "importlib.metadata" in p.read_text(encoding="utf-8")
    ]
    assert lookups == ["distribution.py"]


def _user_facing_files() -> list[Path]:
    roots = ["core", "langchain_agentmem", "llamaindex_agentmem", "notebooks", "benchmarks"]
    files = [REPO / "README.md", REPO / "Makefile", REPO / "pyproject.toml"]
    for root in roots:
        files += [
            p
            for p in (REPO / root).rglob("*")
            if p.suffix in (".py", ".md", ".ipynb", ".txt") or p.name == "NOTICE"
        ]
    return files


def test_no_install_command_names_the_other_project() -> None:
    found = []
    for path in _user_facing_files():
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _OLD_NAME.search(line):
                found.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert found == []


def test_the_old_name_pattern_finds_what_it_should() -> None:
    assert _OLD_NAME.search('pip install "agentmem[all]"')
    assert _OLD_NAME.search("pip install agentmem")
    assert _OLD_NAME.search("agentmem==0.1.0")
    assert not _OLD_NAME.search('pip install "agentmem-layer[all]"')
    assert not _OLD_NAME.search("pip install -e .  # then: agentmem serve")
    assert not _OLD_NAME.search("from langchain_agentmem import AgentMemRetriever")
