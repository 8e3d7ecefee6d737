"""Does a slow database show up in the bots' move times? A tournament with every commit delayed.

Usage: python bench/bench_slow_database.py [--commit-delay-ms 50] [--games-per-pairing 10] [--runs 3]
       [--code DIR]

Runs a 4-bot round robin (two random, two greedy sample bots, 2 players, concurrency 2) the way
``arena run`` does (``run_tournament``, in this process) with every database commit made
``--commit-delay-ms`` slower (a SQLAlchemy ``commit`` event that sleeps: a loaded or remote
database), then reads the bots' move times as the referee measured them (the records'
``timings_us``). The sample bots answer in about a millisecond, so whatever the referee measures
beyond that is time the arena kept the referee from reading the answer. ``--code DIR`` runs
another checkout's arena and bots (e.g. an older version), to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commit-delay-ms", type=float, default=50.0)
    parser.add_argument("--games-per-pairing", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout whose arena and bots run")
    args = parser.parse_args()
    sys.path.insert(0, str(args.code))
    from rich.console import Console
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    from arena.cli.live import run_tournament
    from arena.config import load_config
    from arena.store.store import Store

    delay_s = args.commit_delay_ms / 1000

    def slow_commit(_conn: object) -> None:
        time.sleep(delay_s)

    if delay_s > 0:
        event.listen(Engine, "commit", slow_commit)
    bots_dir = args.code / "sample_bots" / "python"
    print(f"code {args.code}; commits {args.commit_delay_ms:g} ms slower; 4 bots, "
          f"{6 * args.games_per_pairing} games a run, concurrency 2")
    medians, p99s, worst = [], [], []
    for k in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            lines = ['name = "slow-db"', "players = 2", f"games_per_pairing = {args.games_per_pairing}",
                     "concurrency = 2", f"seed = {k + 1}", "[time]", "move_ms = 2000"]
            for i, kind in enumerate(("random", "random", "greedy", "greedy")):
                script = args.code / "sample_bots" / kind / f"{kind}_bot.py"  # else beside the SDK (older code)
                command = f"{sys.executable} {script if script.exists() else bots_dir / (kind + '_bot.py')}"
                lines += ["[[bots]]", f'name = "{kind}{i}"', f"command = {json.dumps(command)}",
                          f'env = {{ CASINO_BOT_SEED = "{i}" }}']
            path = Path(tmp) / "slow.toml"
            path.write_text("\n".join(lines) + "\n")
            config = load_config(path)
            status = asyncio.run(run_tournament(config, Console(file=io.StringIO(), width=120)))
            if status != 0:
                raise SystemExit(f"the tournament exited {status}")
            store = Store(config.database)
            try:
                tid = store.tournament_id("slow-db")
                assert tid is not None
                us = sorted(t for _, record in store.records(tid) for _, t in record["timings_us"])
            finally:
                store.close()
        ms = [u / 1000 for u in us]
        medians.append(statistics.median(ms))
        p99s.append(ms[int(0.99 * (len(ms) - 1))])
        worst.append(ms[-1])
        print(f"run {k + 1}: {len(ms)} moves: median {medians[-1]:.2f} ms, p99 {p99s[-1]:.2f} ms, "
              f"max {worst[-1]:.1f} ms", flush=True)
    print(f"median of runs: median {statistics.median(medians):.2f} ms, p99 {statistics.median(p99s):.2f} ms, "
          f"max {statistics.median(worst):.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
