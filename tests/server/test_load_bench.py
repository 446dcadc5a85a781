"""``benchmarks/server_load.py`` runs end to end on a tiny corpus (its figures are printed,
never asserted; this checks the script works and that the mixed load loses nothing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "server_load.py"


@pytest.mark.slow
def test_server_load_benchmark_runs(tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--memories", "300", "--clients", "2", "--duration", "2",
         "--queries", "20", "--home", str(tmp_path / "data"), "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "HTTP cost per recall" in done.stdout
    figures = json.loads(out.read_text())
    load = figures["server_load"]
    assert load["errors"] == 0 and load["lost_writes"] == 0
    assert load["acknowledged_writes"] > 0 and load["recall"]["n"] > 0
    assert figures["server_single"]["n"] == figures["inprocess_single"]["n"] == 20
