"""Run the whole test suite while every core is kept busy by another process, several times.

Usage: python bench/suite_on_a_busy_machine.py [--runs 3] [--burners N] [-- PYTEST-ARGS...]

Starts ``--burners`` busy-loop processes (default: one per core, at the same priority as the
tests), then runs ``python -m pytest -q`` (the README's test command, from this checkout's venv
or the current interpreter) ``--runs`` times in a row, and prints each run's verdict, its
closing line and its wall time. The burners are stopped on every exit. No test's verdict may
depend on how busy the machine is: every run must pass (docs/benchmarks.md, "The test suite on a
busy machine").
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def burn() -> None:
    """Keep one core busy until killed."""
    x = 0
    while True:
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--burners", type=int, default=os.cpu_count() or 1)
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args()
    burners = [multiprocessing.Process(target=burn, daemon=True) for _ in range(args.burners)]
    for b in burners:
        b.start()
    print(f"{os.cpu_count()} cores, {args.burners} busy-loop processes running", flush=True)
    failed = 0
    try:
        for k in range(1, args.runs + 1):
            start = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args.pytest_args],
                                  cwd=ROOT, capture_output=True, text=True)
            wall = time.monotonic() - start
            lines = [line for line in done.stdout.splitlines() if line.strip()]
            closing = lines[-1] if lines else "(no output)"
            verdict = "passed" if done.returncode == 0 else f"FAILED (exit {done.returncode})"
            print(f"run {k}: {verdict} in {wall / 60:.1f} min: {closing}", flush=True)
            if done.returncode != 0:
                failed += 1
                print("\n".join(line for line in lines if line.startswith(("FAILED", "ERROR")))[-4000:], flush=True)
    finally:
        for b in burners:
            b.kill()
    print(f"{args.runs - failed} of {args.runs} runs passed with every core busy")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
