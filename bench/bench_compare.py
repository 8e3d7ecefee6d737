"""Time to a verdict: `arena compare` with the CI recipe of docs/statistics.md, whole command.

Usage: python bench/bench_compare.py [--runs 5] [--matchups lookahead-greedy,greedy-random]
       [--against OLD_TREE] [--concurrency K] [--move-time 200] [--json FILE]

Each run is one `arena compare --candidate A --baseline B --move-time 200 --margin1 1
--max-units 100 --seed S` process (run S uses seed S, so every tree plays the same decks in run S),
timed from its start to its exit: what a CI job waits for (imports, bot start-ups, the games, the
bots' shutdown). ``--against OLD_TREE`` also runs the code of another checkout of the project
(its ``arena`` package, its sample bots, with this Python), alternating with this one run by run
(old, new, new, old, ...) so a drifting machine moves both alike. Prints each run (wall time,
pairs, verdict, the report's own ``elapsed_s``) and the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ["--margin1", "1", "--max-units", "100"]  # docs/statistics.md, "As a CI gate"


def one_run(tree: Path, candidate: str, baseline: str, seed: int, move_time: int,
            concurrency: int | None) -> dict[str, Any]:
    """One whole `arena compare` process of ``tree``'s code: wall time, pairs, status."""
    def bot(name: str) -> str:  # a sample bot in its package's folder (in older trees, beside the SDK)
        script = tree / "sample_bots" / name / f"{name}_bot.py"
        return f"{sys.executable} {script if script.exists() else tree / 'sample_bots/python' / f'{name}_bot.py'}"
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp:
        report_path = Path(tmp) / "report.json"
        command = [sys.executable, "-m", "arena.cli", "compare", "--candidate", bot(candidate), "--baseline",
                   bot(baseline), "--move-time", str(move_time), *RECIPE, "--seed", str(seed),
                   "--json", str(report_path)]
        if concurrency is not None:
            command += ["--concurrency", str(concurrency)]
        env = {**os.environ, "PYTHONPATH": str(tree)}
        started = time.perf_counter()
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=900, check=False)
        wall = time.perf_counter() - started
        if done.returncode not in (0, 1, 3):
            raise SystemExit(f"arena compare exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
        report = json.loads(report_path.read_text())
    return {"wall_s": wall, "pairs": report["pairs"], "status": report["status"], "elapsed_s": report["elapsed_s"],
            "failures": len(report["failures"])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--matchups", default="lookahead-greedy,greedy-random",
                        help="candidate-baseline pairs of sample bots, comma-separated")
    parser.add_argument("--against", type=Path, help="another checkout of the project, run alternately with this one")
    parser.add_argument("--concurrency", type=int, help="--concurrency for both (default: each version's default)")
    parser.add_argument("--move-time", type=int, default=200)
    parser.add_argument("--json", type=Path, help="write every run as JSON")
    args = parser.parse_args()
    trees = {"this": ROOT} if args.against is None else {"old": args.against.resolve(), "this": ROOT}
    matchups = [tuple(m.split("-")) for m in args.matchups.split(",")]
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs ({len(os.sched_getaffinity(0))} usable); "
          f"recipe --move-time {args.move_time} {' '.join(RECIPE)}; concurrency {args.concurrency or 'default'}")
    results: dict[str, dict[str, list[dict[str, Any]]]] = {f"{c}-{b}": {t: [] for t in trees} for c, b in matchups}
    for run in range(1, args.runs + 1):
        order = list(trees) if run % 2 else list(reversed(trees))
        for candidate, baseline in matchups:
            key = f"{candidate}-{baseline}"
            for name in order:
                r = one_run(trees[name], candidate, baseline, run, args.move_time, args.concurrency)
                results[key][name].append(r)
                print(f"run {run} {key:18s} {name:4s}: {r['wall_s']:6.2f} s, {r['pairs']} pairs, {r['status']}, "
                      f"report elapsed {r['elapsed_s']:.2f} s, {r['failures']} failures", flush=True)
    for key, by_tree in results.items():
        medians = {name: statistics.median(r["wall_s"] for r in runs) for name, runs in by_tree.items()}
        parts = []
        for name, m in medians.items():
            walls = ", ".join(f"{r['wall_s']:.1f}" for r in by_tree[name])
            pairs = ", ".join(str(r["pairs"]) for r in by_tree[name])
            parts.append(f"{name} {m:.2f} s (runs {walls}; pairs {pairs})")
        line = ", ".join(parts)
        ratio = f"; this/old {medians['this'] / medians['old']:.2f}" if "old" in medians else ""
        print(f"{key}: median wall {line}{ratio}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
