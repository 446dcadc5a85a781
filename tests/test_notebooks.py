"""Execute every notebook in ``notebooks/`` top to bottom, offline, on the embedded default.

The notebooks are committed without outputs; this test checks that too, then runs each one
with nbclient in a fresh kernel whose working directory is ``notebooks/`` (as Jupyter's) and
whose ``AGENTMEM_HOME`` points at a temporary directory. The notebooks promise to leave nothing
behind: the kernel's ``TMPDIR`` is a directory of its own, which must be empty afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

NOTEBOOKS_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
#: What dependencies keep in the temp dir for every process that uses them (shared and reused,
#: not a notebook's data): onnxruntime's session file (written on import) and tiktoken's cache
#: of the encoding file.
DEPENDENCY_CACHES = {".ses", "data-gym-cache"}
#: Smaller runs of the notebooks' own size knobs (each line must be in the notebook as is):
#: every cell still runs; the golden set's quality bar is tests/core/test_eval_golden.py's.
SMALLER_RUNS = {
    "04_quality_and_speed.ipynb": {
        "MAX_CASES = None": "MAX_CASES = 40",
        "N_MEMORIES, N_RECALLS = 500, 100": "N_MEMORIES, N_RECALLS = 100, 20",
    },
}


def test_there_are_notebooks() -> None:
    assert len(NOTEBOOKS) >= 4, NOTEBOOKS


def test_the_dev_environment_has_jupyter_nbconvert() -> None:
    """`jupyter nbconvert --to notebook --execute` runs a notebook the way a reader would."""
    jupyter = Path(sys.executable).with_name("jupyter")
    run = subprocess.run(
        [str(jupyter), "nbconvert", "--version"], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for n, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name} cell {n} has outputs"
            assert cell.execution_count is None, f"{path.name} cell {n} has an execution count"


@pytest.fixture
def kernel_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The kernel inherits this environment: a private AGENTMEM_HOME, a private TMPDIR (which
    is returned) and no Jupyter config."""
    home = tmp_path / "agentmem-home"
    home.mkdir()
    monkeypatch.setenv("AGENTMEM_HOME", str(home))
    kernel_tmp = tmp_path / "kernel-tmp"
    kernel_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(kernel_tmp))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "jupyter-config"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYTHONWARNINGS", "ignore")  # kernel-side warnings are not test failures
    return kernel_tmp


def _python3_kernel_uses_this_interpreter() -> None:
    # jupyter_client replaces a kernelspec's leading "python" with sys.executable, so the
    # ipykernel "python3" spec runs in the same virtualenv as the test.
    argv = KernelSpecManager().get_kernel_spec("python3").argv
    assert argv[0] in ("python", "python3", sys.executable), argv


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path: Path, kernel_env: Path) -> None:
    _run(path, kernel_env)


#: A first cell that makes matplotlib unimportable in the kernel, as where it is not installed.
WITHOUT_MATPLOTLIB = """
import sys

class _NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

for _name in [n for n in sys.modules if n == "matplotlib" or n.startswith("matplotlib.")]:
    del sys.modules[_name]
sys.meta_path.insert(0, _NotInstalled())
"""


@pytest.mark.slow
def test_the_quality_notebook_runs_without_matplotlib(kernel_env: Path) -> None:
    """``agentmem-layer[all]`` installs no matplotlib: the notebook skips its plot, saying so,
    and prints every number."""
    nb = _run(NOTEBOOKS_DIR / "04_quality_and_speed.ipynb", kernel_env, WITHOUT_MATPLOTLIB)
    printed = "".join(
        out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs
    )
    assert "matplotlib is not installed: no plot (pip install matplotlib)" in printed
    assert "recall latency ms: p50" in printed  # the numbers are all there


def _run(path: Path, kernel_env: Path, first_cell: str | None = None) -> nbformat.NotebookNode:
    """Execute the notebook at ``path`` (``first_cell`` run before its own), check what it
    printed and left behind, and return it with its outputs."""
    _python3_kernel_uses_this_interpreter()
    before = set(os.listdir(NOTEBOOKS_DIR))
    nb = nbformat.read(path, as_version=4)
    for line, smaller in SMALLER_RUNS.get(path.name, {}).items():
        (cell,) = [c for c in nb.cells if c.cell_type == "code" and line in c.source.splitlines()]
        cell.source = cell.source.replace(line, smaller)
    if first_cell is not None:
        nb.cells.insert(0, nbformat.v4.new_code_cell(first_cell))
    # Extra last cell: the kernel must run in this virtualenv.
    nb.cells.append(nbformat.v4.new_code_cell("import sys; print(sys.executable)"))
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS_DIR)}},
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    errors = [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type == "error"
    ]
    assert not errors, errors
    # a cell shows what it prints, never a stray value of its last line (a flush's True)
    stray = [
        (n, out["data"].get("text/plain"))
        for n, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type == "execute_result"
        and out["data"].get("text/plain") in ("True", "False")
    ]
    assert not stray, f"{path.name}: cells show a bare True/False: {stray}"
    executable = "".join(o.get("text", "") for o in nb.cells[-1].outputs).strip()
    assert executable == sys.executable, f"kernel ran {executable}, not {sys.executable}"
    leftovers = sorted(set(os.listdir(NOTEBOOKS_DIR)) - before)
    assert not leftovers, f"{path.name} wrote into notebooks/: {leftovers}"
    left_in_tmp = sorted(set(os.listdir(kernel_env)) - DEPENDENCY_CACHES)
    assert not left_in_tmp, f"{path.name} left temporary files behind: {left_in_tmp}"
    return nb
