"""``pip install agentmem-layer`` alone gives a working memory: build the wheel, install it into a
fresh virtualenv (no extras, nothing added by hand) and run the README's core example there.

This is what a new user does; it catches anything the wheel lacks (the MiniLM tokenizer, the
golden dataset) or a dependency that pulls in PyTorch. The distribution is ``agentmem-layer``
(another project owns ``agentmem`` on PyPI); it installs the ``agentmem`` import package and
command.

The wheel is installed by pip (``--no-deps``); its dependencies are not downloaded and unpacked
again (over a minute of the suite): the fresh venv gets links to the copies ``make install``
put in this interpreter's environment, of exactly the distributions the wheel's own
``Requires-Dist`` reach (no extras, markers evaluated, each installed version checked against
its specifier). Anything outside that closure (the extras, the checkout, PyTorch) is not
importable there, so a base dependency missing from ``pyproject.toml`` still fails the example,
and one that requires torch fails here (torch is not installed).
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _readme import core_example
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "core", "langchain_agentmem", "llamaindex_agentmem")
CHECK = """
import importlib.metadata, importlib.util, json, sys
from agentmem.embeddings import default_embedder, model_files_problem
from agentmem.evaluation import dataset_path, golden_dataset_path, load_dataset
from agentmem.evaluation.suite import load_family, load_locomo_empty, plan
assert model_files_problem(default_embedder()) is None, model_files_problem(default_embedder())
print(json.dumps({
    "torch": importlib.util.find_spec("torch") is not None,
    "agentmem": importlib.util.find_spec("agentmem").origin,
    "golden_cases": len(load_dataset(golden_dataset_path()).cases),
    "calibration_cases": len(load_dataset(dataset_path("calibration")).cases),
    "distributions": sorted(
        d.metadata["Name"] for d in importlib.metadata.distributions()
        if d.metadata["Name"].startswith("agentmem")
    ),
    "suite": {name: len(load_family(name).cases) for name in plan(None)[0]},
    "locomo_empty": len(load_locomo_empty()),
}))
"""


def _run(args: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTMEM_", "PYTHON"))}
    env.pop("VIRTUAL_ENV", None)
    proc = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, f"{args} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


def _dependency_closure(wheel_dist: importlib.metadata.Distribution) -> list[str]:
    """The distributions ``wheel_dist``'s requirements reach (without extras), as installed in
    this interpreter's environment; fails naming any that is missing or of a wrong version."""
    wanted: dict[str, set[str]] = {}  # canonical name -> the extras asked of it
    todo: list[tuple[importlib.metadata.Distribution, set[str]]] = [(wheel_dist, set())]
    while todo:
        dist, extras = todo.pop()
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is not None and not any(
                req.marker.evaluate({"extra": extra}) for extra in extras | {""}
            ):
                continue
            name = canonicalize_name(req.name)
            try:
                found = importlib.metadata.distribution(name)
            except importlib.metadata.PackageNotFoundError:
                pytest.fail(f"{dist.metadata['Name']} requires {req}, not installed here")
            assert req.specifier.contains(found.version, prereleases=True), (
                f"{dist.metadata['Name']} requires {req}; {found.version} is installed"
            )
            if name not in wanted or not req.extras <= wanted[name]:
                wanted[name] = wanted.get(name, set()) | req.extras
                todo.append((found, wanted[name]))
    return sorted(wanted)


def _link_installed(names: list[str], site_packages: Path) -> None:
    """Symlink every file of the named installed distributions into ``site_packages`` (file by
    file: namespace packages such as ``google`` are shared by several distributions)."""
    for name in names:
        dist = importlib.metadata.distribution(name)
        assert dist.files is not None, f"{name} has no RECORD"
        for file in dist.files:
            if file.parts[0] == "..":  # console scripts: the example needs none of theirs
                continue
            target = site_packages / file
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.symlink_to(Path(str(dist.locate_file(file))).resolve())


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the wheel built from this checkout; returns its bin dir."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    for name in SOURCES:  # build from a copy: the build writes build/ and *.egg-info
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            src.mkdir(exist_ok=True)
            shutil.copyfile(path, src / name)
    dist = root / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)], root)
    (wheel,) = dist.glob("agentmem_layer-*.whl")
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], root)
    bin_dir = venv / "bin"
    pip = [sys.executable, "-m", "pip", "--python", str(bin_dir / "python"), "install", "-q"]
    _run([*pip, "--no-deps", "--no-index", "--no-compile", str(wheel)], root)
    (site_packages,) = venv.glob("lib/python*/site-packages")
    (wheel_dist,) = importlib.metadata.distributions(path=[str(site_packages)])
    _link_installed(_dependency_closure(wheel_dist), site_packages)
    return bin_dir


@pytest.mark.slow
def test_fresh_install_runs_the_readme_core_example(installed: Path, tmp_path: Path) -> None:
    example = tmp_path / "example.py"
    example.write_text(core_example(), encoding="utf-8")
    # -I: the checkout is not on sys.path, only what the wheel installed
    proc = _run([str(installed / "python"), "-I", str(example)], tmp_path, timeout=300)
    assert "I prefer email over phone calls" in proc.stdout
    assert "retrying" not in proc.stderr and "failed" not in proc.stderr, proc.stderr


@pytest.mark.slow
def test_fresh_install_has_the_model_files_the_golden_set_and_the_suite_and_no_torch(
    installed: Path, tmp_path: Path
) -> None:
    import json

    proc = _run([str(installed / "python"), "-I", "-c", CHECK], tmp_path, timeout=300)
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found["torch"] is False
    assert str(installed.parent) in found["agentmem"]  # the installed copy, not the checkout
    assert found["golden_cases"] > 100 and found["calibration_cases"] > 50
    assert found["distributions"] == ["agentmem-layer"]
    assert (installed / "agentmem").is_file()  # the command keeps its name
    # the evaluation suite's families are package data too (calibrate() fits on them)
    assert set(found["suite"]) >= {
        "paraphrase",
        "identifiers",
        "tool_outputs",
        "documents",
        "temporal",
    }
    assert all(n >= 50 for n in found["suite"].values()) and found["locomo_empty"] >= 10


@pytest.mark.slow
def test_the_wheel_ships_every_file_the_inspector_serves(installed: Path, tmp_path: Path) -> None:
    # the package is imported without its extra (fastapi may be missing): only files are read
    script = (
        "import importlib.util, pathlib; "
        "root = pathlib.Path(importlib.util.find_spec('agentmem').origin).parent / 'inspector'; "
        "print(sorted(str(p.relative_to(root)) for p in root.rglob('*') if p.suffix in "
        "('.html', '.css')))"
    )
    proc = _run([str(installed / "python"), "-I", "-c", script], tmp_path, timeout=120)
    shipped = proc.stdout.strip().splitlines()[-1]
    source = REPO / "core" / "agentmem" / "inspector"
    expected = sorted(
        str(p.relative_to(source)) for p in source.rglob("*") if p.suffix in (".html", ".css")
    )
    assert shipped == str(expected)
    assert "static/style.css" in expected and "templates/search.html" in expected
