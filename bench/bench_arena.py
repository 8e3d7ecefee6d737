"""Arena benchmark: a 6-bot, 2-player round robin of the sample random and greedy bots.

Usage: python bench/bench_arena.py [--games-per-pairing 40] [--concurrency K] [--runs R] [--database URL]

Runs the tournament exactly as ``arena run`` does (run_tournament, non-terminal output) in this
process and reports games/s (from the first game started to the last stored, bot start-up
included), peak memory of the arena process and of the largest bot, and where the CPU went:
the arena's own bookkeeping (storage, ratings, standings: timed by wrapping those calls), the
referee (the rest of this process) and the bots (their processes' CPU, collected when they exit).
A bot's peak memory is its own VmHWM, sampled from /proc while it runs: RUSAGE_CHILDREN's maxrss
would report the forked copy of the arena before it exec'd the bot.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import io
import json
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402

from arena.cli import live as live_run
from arena.config import load_config  # noqa: E402
from arena.play import rate, runner
from arena.rating import standings
from arena.store import store as storage  # noqa: E402

BOOKKEEPING = {"cpu": 0.0}


def _timed(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            BOOKKEEPING["cpu"] += time.thread_time() - start
    return wrapper


def _instrument() -> None:
    """Count the CPU of every storage call and of standings: the arena's bookkeeping."""
    for name in ("claim", "finish", "fail", "counts", "outcomes", "ratings", "bots",
                 "requeue_running", "standings_tally", "add_games", "create_tournament", "tournament_id", "tournament",
                 "update_bot_specs", "upgrade"):
        setattr(storage.Store, name, _timed(getattr(storage.Store, name)))
    runner.apply_ratings = _timed(rate.apply_ratings)  # type: ignore[attr-defined]
    runner.standings_of = _timed(standings.standings_of)  # type: ignore[attr-defined]
    live_run.fitting_standings_table = _timed(standings.fitting_standings_table)  # type: ignore[attr-defined]


def tournament_file(folder: Path, games_per_pairing: int, concurrency: int, database: str | None) -> Path:
    py = sys.executable
    bots = [(f"random{i}", f"{py} {ROOT / 'sample_bots/random/random_bot.py'}", {"CASINO_BOT_SEED": str(i)}) for i in range(3)]
    bots += [(f"greedy{i}", f"{py} {ROOT / 'sample_bots/greedy/greedy_bot.py'}", {}) for i in range(3)]
    lines = ['name = "bench"', "players = 2", f"games_per_pairing = {games_per_pairing}", f"concurrency = {concurrency}",
             "seed = 11"]
    if database:
        lines.append(f"database = {json.dumps(database)}")
    lines += ["[time]", "move_ms = 2000"]
    for name, command, env in bots:
        lines += ["[[bots]]", f'name = "{name}"', f"command = {json.dumps(command)}"]
        if env:
            lines.append("env = { " + ", ".join(f'{k} = "{v}"' for k, v in env.items()) + " }")
    path = folder / "bench.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


class BotMemorySampler:
    """Peak VmHWM of this process's descendants and count of its direct children (the bots, or
    their sandboxes: a sandboxed bot runs below bubblewrap), read from /proc on Linux."""

    def __init__(self, interval_s: float = 0.2) -> None:
        self.interval_s = interval_s
        self.peak_kib: dict[int, int] = {}
        self.children: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> "BotMemorySampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        me = os.getpid()
        while not self._stop.wait(self.interval_s):
            parents: dict[int, int] = {}
            peaks: dict[int, int] = {}
            for status in Path("/proc").glob("[0-9]*/status"):
                try:
                    fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
                except OSError:  # the process ended between listing and reading
                    continue
                pid = int(status.parent.name)
                parents[pid] = int(fields.get("PPid", "0").strip() or 0)
                if "VmHWM" in fields:
                    peaks[pid] = int(fields["VmHWM"].split()[0])
            for pid, peak in peaks.items():
                up, hops = parents.get(pid, 0), 0
                while up not in (0, 1, me) and hops < 20:  # is it below this process?
                    up, hops = parents.get(up, 0), hops + 1
                if up == me:
                    self.peak_kib[pid] = max(self.peak_kib.get(pid, 0), peak)
                    if parents.get(pid) == me:
                        self.children.add(pid)

    @property
    def largest_mib(self) -> float:
        return max(self.peak_kib.values(), default=0) / 1024

    @property
    def bot_processes(self) -> int:
        return len(self.children)


def one_run(games_per_pairing: int, concurrency: int, database: str | None) -> dict[str, float]:
    BOOKKEEPING["cpu"] = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        config = load_config(tournament_file(Path(tmp), games_per_pairing, concurrency, database))
        children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_before, wall_before = time.process_time(), time.perf_counter()
        with BotMemorySampler() as sampler:
            status = asyncio.run(live_run.run_tournament(config, Console(file=io.StringIO(), width=120)))
        wall = time.perf_counter() - wall_before
        cpu = time.process_time() - cpu_before
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        if status != 0:
            raise SystemExit(f"tournament exited {status}")
        store = storage.Store(config.database)
        tid = store.tournament_id("bench")
        assert tid is not None
        games = store.counts(tid)["done"]
        if database:  # leave a shared database clean for the next run
            with store.engine.begin() as conn:
                from sqlalchemy import text
                conn.execute(text("DELETE FROM tournaments WHERE name = 'bench'"))
        store.close()
    bots_cpu = (children.ru_utime + children.ru_stime) - (children_before.ru_utime + children_before.ru_stime)
    total = cpu + bots_cpu
    return {
        "games": games, "wall_s": wall, "games_per_s": games / wall,
        "arena_cpu_s": BOOKKEEPING["cpu"], "referee_cpu_s": cpu - BOOKKEEPING["cpu"], "bots_cpu_s": bots_cpu,
        "arena_share": BOOKKEEPING["cpu"] / total, "referee_share": (cpu - BOOKKEEPING["cpu"]) / total,
        "bots_share": bots_cpu / total,
        "arena_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "bot_peak_mib": sampler.largest_mib, "bot_processes": sampler.bot_processes,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games-per-pairing", type=int, default=40, help="even; 15 pairings x 40 = 600 games")
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--database", help="SQLAlchemy URL (default: a SQLite file in a temporary folder)")
    args = parser.parse_args()
    _instrument()
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; 6 bots (3 random, 3 greedy), "
          f"{15 * args.games_per_pairing} games, concurrency {args.concurrency}, database {args.database or 'SQLite file'}")
    results = []
    for k in range(args.runs):
        r = one_run(args.games_per_pairing, args.concurrency, args.database)
        results.append(r)
        print(f"run {k + 1}: {r['games']} games in {r['wall_s']:.1f} s = {r['games_per_s']:.1f} games/s; CPU: arena "
              f"{r['arena_cpu_s']:.1f} s ({r['arena_share']:.1%}), referee {r['referee_cpu_s']:.1f} s ({r['referee_share']:.1%}), "
              f"bots {r['bots_cpu_s']:.1f} s ({r['bots_share']:.1%}); peak RSS arena {r['arena_peak_mib']:.0f} MiB, "
              f"largest bot {r['bot_peak_mib']:.0f} MiB ({r['bot_processes']} bot processes)")
    med = {key: statistics.median(r[key] for r in results) for key in results[0]}
    rates = ", ".join(f"{r['games_per_s']:.1f}" for r in results)
    print(f"median of {args.runs}: {med['games_per_s']:.1f} games/s (runs: {rates}); "
          f"arena bookkeeping {med['arena_share']:.1%} of all CPU, referee {med['referee_share']:.1%}, bots {med['bots_share']:.1%}; "
          f"peak RSS arena {med['arena_peak_mib']:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
