"""In-process bots against the same bots over gRPC (issue 27): the same `arena compare` (greedy
candidate, random baseline, fixed seed and length, no early stop) run with the bots as sandboxed
processes over gRPC and as ``inprocess:`` bots on worker processes, alternating, N runs each; then
random against random in-process. Prints, per run and as medians: games/s on the wall clock, and
games per CPU-second of the command and everything it started (RUSAGE_CHILDREN), which a machine
loaded by others disturbs less than the wall clock. Figures: docs/benchmarks.md, "In-process bots".

    python bench/bench_inprocess.py --runs 3 --grpc-units 100 --units 2000 --concurrency 2
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GREEDY = ROOT / "sample_bots" / "greedy" / "greedy_bot.py"
RANDOM = ROOT / "sample_bots" / "random" / "random_bot.py"


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def compare(candidate: str, baseline: str, units: int, concurrency: int, extra: list[str]) -> tuple[float, float, int]:
    """One `arena compare` as its own process: (wall games/s as it reports them, games per CPU-second
    of it and its bots, games)."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "r.json"
        cpu0 = children_cpu_s()
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "arena.cli", "compare", "--candidate", candidate, "--baseline", baseline,
                        "--unit", "games", "--units", str(units), "--seed", "1", "--concurrency", str(concurrency),
                        "--json", str(report), *extra], cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
        wall = time.perf_counter() - started
        cpu = children_cpu_s() - cpu0
        data = json.loads(report.read_text())
    games = data["games"]
    return games / wall, games / cpu, games


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--grpc-units", type=int, default=100, help="games of each gRPC comparison")
    parser.add_argument("--units", type=int, default=2000, help="games of each in-process comparison")
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    py = sys.executable
    grpc_extra: list[str] = []  # the bots as arena starts them: its default sandbox
    ways = {
        "grpc": (f"{py} {GREEDY}", f"{py} {RANDOM}", args.grpc_units, grpc_extra),
        "inprocess": (f"inprocess:{GREEDY}", f"inprocess:{RANDOM}", args.units, []),
        "random-random inprocess": (f"inprocess:{RANDOM}", f"inprocess:{RANDOM}", args.units, []),
    }
    results: dict[str, list[tuple[float, float, int]]] = {name: [] for name in ways}
    print(f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.1f}, concurrency {args.concurrency}")
    for run in range(args.runs):
        for name, (candidate, baseline, units, extra) in ways.items():
            wall, cpu, games = compare(candidate, baseline, units, args.concurrency, extra)
            results[name].append((wall, cpu, games))
            print(f"run {run + 1} {name:24s} {games:5d} games  {wall:8.1f} games/s  {cpu:8.1f} games/CPU-s", flush=True)
    print()
    medians = {name: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs))
               for name, rs in results.items()}
    for name, (wall, cpu) in medians.items():
        print(f"median {name:24s} {wall:8.1f} games/s  {cpu:8.1f} games/CPU-s")
    g, i = medians["grpc"], medians["inprocess"]
    print(f"ratio in-process / gRPC: {i[0] / g[0]:.1f}x games/s, {i[1] / g[1]:.1f}x games per CPU-second")
    print(f"load at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
