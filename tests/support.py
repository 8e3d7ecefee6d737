"""Helpers shared by test modules."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_referee(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the ``referee`` command as a real process from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", "referee.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
