"""Engine benchmark: random-vs-random full games (to 21) and legal-move generation time.

Usage: python bench/bench_engine.py [--games N] [--warmup N] [--runs R] [--json FILE]

Runs on one core (pinned when the OS allows). For each table size it plays ``--warmup`` games to
fill the engine's memo of table arithmetic (as a long-running referee would), then ``--runs`` timed
batches of ``--games`` games and reports the median games/s. Legal-move generation is timed per
call on every state of the timed games, recomputed from scratch (the per-state memo cleared).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from referee.rules import GameState, RuleOptions, apply, legal_moves, new_game  # noqa: E402
from referee.rules.legal import _generate  # noqa: E402


def play_game(options: RuleOptions, seed: int, states: list[GameState] | None = None) -> int:
    """One random-vs-random game; returns the number of plays."""
    rng = random.Random(seed)
    state = new_game(options, seed=seed)
    plays = 0
    while not state.is_over:
        if states is not None:
            states.append(state)
        state = apply(state, rng.choice(legal_moves(state)))
        plays += 1
    return plays


def bench_table(options: RuleOptions, games: int, warmup: int, runs: int) -> dict[str, float]:
    seed = 10_000 * options.players
    for _ in range(warmup):
        play_game(options, seed)
        seed += 1
    rates = []
    plays = 0
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(games):
            plays += play_game(options, seed)
            seed += 1
        rates.append(games / (time.perf_counter() - start))
    states: list[GameState] = []
    for i in range(min(games, 200)):
        play_game(options, 999_000 + i, states)
    timings = []
    for state in states:
        t0 = time.perf_counter()
        _generate(state)
        timings.append(time.perf_counter() - t0)
    timings.sort()
    return {
        "games_per_s": statistics.median(rates),
        "games_per_s_min": min(rates),
        "games_per_s_max": max(rates),
        "plays_per_game": plays / (games * runs),
        "legal_median_us": statistics.median(timings) * 1e6,
        "legal_p99_us": timings[int(len(timings) * 0.99)] * 1e6,
        "legal_calls": len(timings),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    tables = {
        "2 players": RuleOptions(players=2),
        "3 players": RuleOptions(players=3),
        "4 players (partnerships)": RuleOptions(players=4),
    }
    report = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(), "tables": {}}
    print(f"Python {report['python']} on {report['machine']}, {report['cpus']} CPUs; one core; "
          f"{args.runs} runs x {args.games} games after {args.warmup} warm-up games")
    for name, options in tables.items():
        r = bench_table(options, args.games, args.warmup, args.runs)
        report["tables"][name] = r
        print(
            f"{name:26s} {r['games_per_s']:7.1f} games/s (min {r['games_per_s_min']:.1f}, max {r['games_per_s_max']:.1f}), "
            f"{r['plays_per_game']:.0f} plays/game; legal moves median {r['legal_median_us']:.1f} us, "
            f"p99 {r['legal_p99_us']:.1f} us over {r['legal_calls']} states"
        )
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report["peak_rss_mib"] = peak_mib
    print(f"peak resident memory {peak_mib:.0f} MiB (includes the bounded memo of table patterns)")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
