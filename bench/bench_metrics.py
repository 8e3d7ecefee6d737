"""What do the metrics and structured logs cost a tournament? Games/s with and without them.

Usage: python bench/bench_metrics.py --old DIR [--games-per-pairing 20] [--runs 3]

Plays the same 6-bot round robin of the fast sample bots (random and greedy, 2 players,
concurrency 2, SQLite) as a real ``arena run`` process, in three ways, alternated run by run so a
noisy machine weighs on each alike:

- ``old``: the checkout ``--old DIR`` (the code before the metrics: none recorded, no JSON logs);
- ``new``: this checkout with neither flag (the metrics are still recorded, only not served);
- ``new+obs``: this checkout as a deployment runs it: ``arena --log-format json -v run FILE
  --metrics-listen 127.0.0.1:0`` (every game's log lines as JSON at INFO, the metrics served and
  scraped once a second by this script, as Prometheus would, more often than it would).

Games/s is over the play itself: (games - 1) / (last game's finish - first game's finish), from
the database, so the process's start-up is not in it. Prints each run, then the median of each
way and the ratios to ``old``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOTS = [("random", "random_bot.py"), ("greedy", "greedy_bot.py")]


def tournament(folder: Path, code: Path, games_per_pairing: int, seed: int) -> Path:
    lines = ['name = "obs"', "players = 2", f"games_per_pairing = {games_per_pairing}", "duplicate = true",
             "concurrency = 2", f"seed = {seed}", f'database = "sqlite:///{folder / "obs.db"}"',
             "[time]", "move_ms = 2000", "startup_ms = 20000"]
    for i in range(6):
        kind, script = BOTS[i % 2]
        command = f"{sys.executable} {code / 'sample_bots' / 'python' / script}"
        lines += ["[[bots]]", f'name = "{kind}{i}"', f"command = {json.dumps(command)}",
                  f'env = {{ CASINO_BOT_SEED = "{i}" }}']
    path = folder / "obs.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def games_per_s(db: Path) -> tuple[int, float]:
    import sqlite3

    with sqlite3.connect(db) as conn:
        stamps = sorted(datetime.fromisoformat(t) for (t,) in conn.execute(
            "SELECT finished_at FROM games WHERE status = 'done'"))
    span = (stamps[-1] - stamps[0]).total_seconds()
    return len(stamps), (len(stamps) - 1) / span


def scraper(stderr_path: Path, stop: threading.Event, scrapes: list[int]) -> None:
    """Scrape the run's metrics once a second while it runs (as Prometheus would)."""
    url = None
    while not stop.is_set():
        if url is None and stderr_path.exists():
            found = re.search(r"metrics at (http://\S+)", stderr_path.read_text(errors="replace"))
            url = found.group(1) if found else None
        if url is not None:
            try:
                with urllib.request.urlopen(url, timeout=5) as answer:
                    answer.read()
                scrapes[0] += 1
            except OSError:
                pass
        stop.wait(1.0)


def one_run(way: str, code: Path, games_per_pairing: int, seed: int) -> tuple[int, float, int, int]:
    with tempfile.TemporaryDirectory(prefix="bench-obs-") as tmp:
        folder = Path(tmp)
        path = tournament(folder, code, games_per_pairing, seed)
        argv = [sys.executable, "-m", "arena.cli"]
        if way == "new+obs":
            argv += ["--log-format", "json", "-v", "run", str(path), "--metrics-listen", "127.0.0.1:0"]
        else:
            argv += ["run", str(path)]
        stderr_path = folder / "stderr.log"
        stop, scrapes = threading.Event(), [0]
        watcher = threading.Thread(target=scraper, args=(stderr_path, stop, scrapes), daemon=True)
        watcher.start()
        with stderr_path.open("wb") as err:
            done = subprocess.run(argv, cwd=code, env={**os.environ, "PYTHONPATH": str(code)},
                                  stdout=subprocess.DEVNULL, stderr=err, timeout=3600)
        stop.set()
        watcher.join()
        if done.returncode != 0:
            raise SystemExit(f"{way}: arena run exited {done.returncode}:\n{stderr_path.read_text()[-2000:]}")
        log_lines = len(stderr_path.read_text(errors="replace").splitlines())
        n, rate = games_per_s(folder / "obs.db")
        return n, rate, log_lines, scrapes[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="a checkout of the code before the metrics")
    parser.add_argument("--games-per-pairing", type=int, default=20, help="even; 15 pairings each")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    ways = {"old": args.old.resolve(), "new": ROOT, "new+obs": ROOT}
    rates: dict[str, list[float]] = {way: [] for way in ways}
    print(f"{15 * args.games_per_pairing} games a run, 6 sample bots, concurrency 2, {os.cpu_count()} cores")
    for k in range(args.runs):
        order = list(ways) if k % 2 == 0 else list(reversed(ways))  # alternate which goes first
        for way in order:
            n, rate, lines, scrapes = one_run(way, ways[way], args.games_per_pairing, seed=k + 1)
            rates[way].append(rate)
            print(f"run {k + 1} {way:8}: {n} games, {rate:.2f} games/s, {lines} log lines, {scrapes} scrapes",
                  flush=True)
    medians = {way: statistics.median(r) for way, r in rates.items()}
    for way, m in medians.items():
        print(f"median {way:8}: {m:.2f} games/s, ratio to old {m / medians['old']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
