"""Does the sample lookahead bot keep its own time? A 6-bot round robin on the clock.

Usage: python bench/bench_lookahead_clock.py [--move-ms 100] [--concurrency 2] [--games-per-pairing 2]
       [--runs 3] [--fraction F] [--bots-dir DIR]

Runs ``arena run`` (a real process, as a user would) on a tournament of two lookahead bots (the
time-budgeted search), two greedy and two random bots, 2 players, at ``--move-ms`` per move, then
reads the database: every failure by kind and bot, and the lookahead bots' move times as the
referee measured them (the records' ``timings_us``): median, 99th percentile, slowest, and how
many moves came within 10% of the limit. The target (docs/benchmarks.md): no timeouts at
move_ms = 100 and concurrency = 2 on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena.store.store import Store  # noqa: E402

BOTS = ("lookahead", "lookahead", "greedy", "greedy", "random", "random")


def tournament_file(folder: Path, move_ms: int, concurrency: int, games_per_pairing: int, seed: int,
                    fraction: float | None, bots_dir: Path) -> Path:
    py = sys.executable
    lines = ['name = "lookahead-clock"', "players = 2", f"games_per_pairing = {games_per_pairing}",
             f"concurrency = {concurrency}", f"seed = {seed}", "[time]", f"move_ms = {move_ms}"]
    for i, kind in enumerate(BOTS):
        script = bots_dir / kind / f"{kind}_bot.py"
        command = f"{py} {script if script.exists() else bots_dir / f'{kind}_bot.py'}"
        if kind == "lookahead" and fraction is not None:
            command += f" --time-fraction {fraction}"
        lines += ["[[bots]]", f'name = "{kind}{i}"', f"command = {json.dumps(command)}",
                  f'env = {{ CASINO_BOT_SEED = "{i}" }}']
    path = folder / "clock.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def one_run(args: argparse.Namespace, seed: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        path = tournament_file(Path(tmp), args.move_ms, args.concurrency, args.games_per_pairing, seed, args.fraction,
                               args.bots_dir)
        done = subprocess.run([sys.executable, "-m", "arena.cli", "run", str(path)], cwd=ROOT, capture_output=True,
                              text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=3600)
        if done.returncode != 0:
            raise SystemExit(f"arena run exited {done.returncode}: {done.stderr.strip()[-500:]}")
        store = Store(f"sqlite:///{Path(tmp) / 'clock.db'}")
        try:
            tid = store.tournament_id("lookahead-clock")
            assert tid is not None
            names = {b.position: b.name for b in store.bots(tid)}
            failures: Counter[str] = Counter()
            details: list[str] = []
            lookahead_us: list[int] = []
            games = 0
            for _, record in store.records(tid):
                games += 1
                seats = record["seats"]
                for f in record["failures"]:
                    bot = names[seats[f["seat"]]["bot"]]
                    failures[f"{bot}: {f['kind'].removeprefix('FAILURE_KIND_').lower()}"] += 1
                    details.append(f"game {record['game_number']} {bot} deal {f['deal'] + 1} play {f['playNumber']}: "
                                   f"{f['reason']}")
                for seat, us in record["timings_us"]:
                    if names[seats[seat]["bot"]].startswith("lookahead"):
                        lookahead_us.append(us)
        finally:
            store.close()
    lookahead_us.sort()
    limit_us = args.move_ms * 1000
    return {
        "games": games, "failures": dict(failures), "details": details, "lookahead_moves": len(lookahead_us),
        "median_ms": statistics.median(lookahead_us) / 1000,
        "p99_ms": lookahead_us[int(0.99 * (len(lookahead_us) - 1))] / 1000,
        "max_ms": lookahead_us[-1] / 1000,
        "near_limit": sum(us > 0.9 * limit_us for us in lookahead_us),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--move-ms", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--games-per-pairing", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fraction", type=float, default=None, help="the lookahead bots' --time-fraction")
    parser.add_argument("--bots-dir", type=Path, default=ROOT / "sample_bots",
                        help="where the sample bots are (sample_bots/, each in NAME/NAME_bot.py; an older version's "
                             "sample_bots/python, with every bot beside the SDK, to compare)")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs; bots {', '.join(BOTS)}; move_ms {args.move_ms}, concurrency {args.concurrency}, "
          f"{15 * args.games_per_pairing} games a run")
    timeouts = 0
    for k in range(args.runs):
        r = one_run(args, seed=100 + k)
        timeouts += sum(n for key, n in r["failures"].items() if key.endswith("timeout"))  # type: ignore[union-attr]
        print(f"run {k + 1}: {r['games']} games; lookahead moves {r['lookahead_moves']}: median {r['median_ms']:.1f} ms, "
              f"p99 {r['p99_ms']:.1f} ms, max {r['max_ms']:.1f} ms, {r['near_limit']} over 90% of the limit; "
              f"failures {r['failures'] or 'none'}")
        for line in r["details"]:  # type: ignore[union-attr]
            print(f"  {line}")
    print(f"timeouts in {args.runs} runs: {timeouts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
