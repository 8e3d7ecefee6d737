"""Live games benchmark: how late a play reaches a browser, and what the live writes cost a run.

Usage: python bench/bench_live.py delay [--games 6] [--move-ms 20]
       python bench/bench_live.py cost [--runs 3] [--games-per-pairing 4]

``delay``: an `arena run` in this process of a bot that sleeps ``--move-ms`` per move against the
greedy bot, one game at a time, with `arena web` as a real server in another process; a thread
follows each game's /events stream. Every play's time is taken where the referee reports it (the
play observer) and every event's when it is read; a play's delay is from it being made to the
first event whose count includes it (plays made before the stream connected are left out).
``cost``: the 6-bot round robin of bench_arena.py (random and greedy bots, SQLite), runs with and
without the live writes in turn; games/s of each.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console

from arena.cli import live as live_run
from arena.config import load_config
from arena.play import live, runner
from bench.bench_arena import tournament_file

PLAYS: dict[int, list[tuple[int, float]]] = {}  # game number -> (plays, time made)


def _record_plays() -> None:
    """Wrap the live writer's observer: note each play's time where the referee reports it."""
    original = live.LiveWriter.observer

    def observer(self: live.LiveWriter, task: Any) -> Any:
        inner = original(self, task)

        def observe(game: Any) -> None:
            PLAYS.setdefault(task.number, []).append((game.plays, time.time()))
            inner(game)
        return observe
    live.LiveWriter.observer = observer  # type: ignore[method-assign]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _follow(base: str, games: int, events: dict[int, list[tuple[int, float, float]]]) -> None:
    """Follow games 1..games in turn: (plays, time read, time connected) of every plays event."""
    for number in range(1, games + 1):
        while True:
            try:
                stream = urllib.request.urlopen(f"{base}/t/live-bench/games/{number}/events", timeout=60)
                break
            except OSError:  # the server is not up yet, or the game is not scheduled yet
                time.sleep(0.05)
        connected = time.time()
        event = ""
        with stream:
            for raw in stream:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event == "plays":
                    events.setdefault(number, []).append((json.loads(line[6:])["plays"], time.time(), connected))
                elif line.startswith("data: ") and event == "done":
                    break


def delay(games: int, move_ms: int) -> None:
    _record_plays()
    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite:///{tmp}/live.db"
        sleepy = shlex.join([sys.executable, str(ROOT / "tests/bots/scripted_bot.py"), "sleep", "--after", "1",
                             "--ms", str(move_ms)])
        greedy = shlex.join([sys.executable, str(ROOT / "sample_bots/greedy/greedy_bot.py")])
        path = Path(tmp) / "live.toml"
        path.write_text("\n".join([
            'name = "live-bench"', "players = 2", f"games_per_pairing = {games}", "duplicate = false", "seed = 3",
            "concurrency = 1", f"database = {json.dumps(db)}", "[time]", "move_ms = 5000",
            "[[bots]]", 'name = "sleepy"', f"command = {json.dumps(sleepy)}",
            "[[bots]]", 'name = "greedy"', f"command = {json.dumps(greedy)}"]) + "\n")
        config = load_config(path)
        from arena.store.store import Store
        Store(db).close()  # the schema, before the server opens it
        port = _free_port()
        server = subprocess.Popen([sys.executable, "-m", "arena.cli", "web", "--db", db, "--listen", f"127.0.0.1:{port}"],
                                  cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        events: dict[int, list[tuple[int, float, float]]] = {}
        follower = threading.Thread(target=_follow, args=(f"http://127.0.0.1:{port}", games, events), daemon=True)
        try:
            follower.start()
            time.sleep(1.0)  # the server listening before the first game
            status = asyncio.run(live_run.run_tournament(config, Console(file=io.StringIO(), width=120)))
            follower.join(timeout=60)
        finally:
            server.terminate()
            server.wait(timeout=30)
    delays = []
    for number, plays in PLAYS.items():
        seen = events.get(number, [])
        for count, made in plays:
            if not seen or count == 0 or made < seen[0][2]:
                continue
            reached = next((read for n, read, _ in seen if n >= count), None)
            if reached is not None:
                delays.append((reached - made) * 1000)
    delays.sort()
    print(f"exit {status}; {len(delays)} plays followed over {len(PLAYS)} games, "
          f"{sum(len(v) for v in events.values())} events")
    if delays:
        print(f"delay play -> event: median {statistics.median(delays):.0f} ms, "
              f"p90 {delays[int(len(delays) * 0.9)]:.0f} ms, worst {delays[-1]:.0f} ms")


def cost(runs: int, games_per_pairing: int) -> None:
    original = runner.TournamentRunner.__init__
    results: dict[bool, list[float]] = {True: [], False: []}
    for run in range(runs * 2):
        on = run % 2 == 0

        def init(self: runner.TournamentRunner, *args: Any, _on: bool = on, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            self.live = _on
        runner.TournamentRunner.__init__ = init  # type: ignore[method-assign]
        with tempfile.TemporaryDirectory() as tmp:
            config = load_config(tournament_file(Path(tmp), games_per_pairing, 2, None))
            start = time.monotonic()
            asyncio.run(live_run.run_tournament(config, Console(file=io.StringIO(), width=120)))
            elapsed = time.monotonic() - start
            from arena.store.store import Store
            store = Store(config.database)
            tid = store.tournament_id(config.name)
            assert tid is not None
            done = store.counts(tid)["done"]
            store.close()
        results[on].append(done / elapsed)
        print(f"run {run + 1}: live writes {'on ' if on else 'off'}: {done} games in {elapsed:.1f} s, "
              f"{done / elapsed:.1f} games/s", flush=True)
    for on in (True, False):
        print(f"live writes {'on ' if on else 'off'}: median {statistics.median(results[on]):.1f} games/s "
              f"({', '.join(f'{r:.1f}' for r in results[on])})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    d = sub.add_parser("delay")
    d.add_argument("--games", type=int, default=6)
    d.add_argument("--move-ms", type=int, default=20)
    c = sub.add_parser("cost")
    c.add_argument("--runs", type=int, default=3)
    c.add_argument("--games-per-pairing", type=int, default=4)
    args = parser.parse_args()
    if args.what == "delay":
        delay(args.games, args.move_ms)
    else:
        cost(args.runs, args.games_per_pairing)


if __name__ == "__main__":
    main()
