"""Every benchmark script under bench/ still imports what it uses: modules move (issue 11 moved
most of them), and a benchmark is run by hand, rarely, so a stale import would otherwise be found
only by the next person who needs its figures. ``--help`` imports the script and exits."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

SCRIPTS = sorted(p.name for p in (ROOT / "bench").glob("*.py"))


def test_the_bench_folder_has_scripts() -> None:
    assert "bench_protocol.py" in SCRIPTS and "bench_sandbox.py" in SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_benchmark_script_starts(script: str) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / script), "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout
