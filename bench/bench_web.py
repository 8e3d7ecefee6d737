"""Web app benchmark: response times of each page of `arena web` over a database, over HTTP.

Usage: python bench/bench_web.py --db URL [--runs N] [--warmup N] [--tournament NAME] [--page-size N] [--json FILE]

Starts `arena web --db URL` as a process on a free port of 127.0.0.1, then for each page in PAGES
(the front page, a tournament's leaderboard, a bot's page, the game list's first and middle page,
a replay page, its states and its record as JSON, and a bot's private page and its private page of
one game, read by an operator the benchmark adds for its run and removes after) sends ``--warmup`` untimed requests and ``--runs``
timed ones, one after another over one kept-alive connection, as a browser would, and prints a
markdown table of the median and p99 milliseconds per page (to paste into docs/benchmarks.md),
with the machine it ran on. A page that answers 404 is "not there yet", not a failure; any other
status than 200 is, and makes the exit status 1. Make a large database with bench/make_web_db.py.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_cpu_clock import cpu_model  # the machine's CPU as the other benchmarks name it

from sqlalchemy import select

from arena.store.models import Game
from arena.store.store import StorageError, Store
from arena.store.users import add_user, remove_user

START_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Target:
    """One page to time: what to call it and its path."""

    label: str
    path: str
    private: bool = False  # read with the run's operator's token


def pages(tournament: str, bot: str, games: int, bots_game: int) -> list[Target]:
    """The app's pages over this tournament: the middle game, the game list's newest page and the
    page holding the middle game (paging is by game number: ``?before=N``), one bot's games."""
    t, b = urllib.parse.quote(tournament, safe=""), urllib.parse.quote(bot, safe="")
    middle = max(1, games // 2)
    return [
        Target("front page", "/"),
        Target("front page JSON", "/.json"),
        Target("leaderboard", f"/t/{t}"),
        Target("bot page", f"/t/{t}/bots/{b}"),
        Target("game list, newest page", f"/t/{t}/games"),
        Target(f"game list, before game {middle + 1}", f"/t/{t}/games?before={middle + 1}"),
        Target("game list, one bot's wins", f"/t/{t}/games?bot={b}&result=win&before={middle + 1}"),
        Target("game list, forfeits only", f"/t/{t}/games?forfeits=1"),
        Target(f"replay of game {middle}", f"/t/{t}/games/{middle}"),
        Target("its states JSON", f"/t/{t}/games/{middle}/states"),
        Target("its record JSON", f"/t/{t}/games/{middle}/record"),
        Target("a bot's private page", f"/t/{t}/owner/{b}", private=True),
        Target(f"its private page of game {bots_game}", f"/t/{t}/owner/{b}/games/{bots_game}", private=True),
    ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_up(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"bench_web: arena web exited with status {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"bench_web: arena web did not listen within {START_TIMEOUT_S:.0f} s")


class Client:
    """GETs over one kept-alive HTTP/1.1 connection (opened again if the server closed it)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)

    def get(self, path: str, token: str | None = None) -> tuple[int, int, float]:
        """(status, body bytes, seconds until the whole body was read)."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        for attempt in (1, 2):
            start = time.perf_counter()
            try:
                self.conn.request("GET", path, headers=headers)
                answer = self.conn.getresponse()
                body = answer.read()
                return answer.status, len(body), time.perf_counter() - start
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT_S)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


def describe(db: str, name: str | None) -> tuple[str, str, int, int]:
    """The tournament to time (the named one, else the one with the most games), its first bot, its
    games, and the first game from the middle on that the bot played."""
    store = Store(db, read_only=True)
    try:
        found = [(sum(store.counts(t.id).values()), t.id, t.name) for t in store.tournaments()
                 if name is None or t.name == name]
        if not found:
            raise StorageError(f"no tournament {name!r} in {store.url_for_people}" if name
                               else f"no tournament in {store.url_for_people}")
        games, tid, tournament = max(found)
        bots = store.bots(tid)
        first = bots[0].position if bots else -1
        with store.session() as s:  # the bot's first game from the middle on (seat_bots is JSON: read a few)
            seats = s.execute(select(Game.number, Game.seat_bots).where(
                Game.tournament_id == tid, Game.number >= max(1, games // 2)).order_by(Game.number).limit(1000)).all()
        mine = next((n for n, seated in seats if first in seated), max(1, games // 2))
        return tournament, bots[0].name if bots else "-", games, mine
    finally:
        store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="database URL (sqlite:///FILE or postgresql://...)")
    parser.add_argument("--runs", type=int, default=50, help="timed requests per page (default 50)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed requests per page first (default 3)")
    parser.add_argument("--tournament", help="the tournament whose pages are timed (default: the largest)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    if args.runs < 1 or args.warmup < 0:
        print("bench_web: --runs must be >= 1, --warmup >= 0", file=sys.stderr)
        return 2
    try:
        tournament, bot, games, bots_game = describe(args.db, args.tournament)
    except StorageError as exc:
        print(f"bench_web: {exc}", file=sys.stderr)
        return 2
    operator = f"bench-op-{os.getpid()}"  # reads the private pages; removed at the end
    store = Store(args.db)
    try:
        token = add_user(store, operator, operator=True)
    finally:
        store.close()
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "arena.cli", "web", "--db", args.db, "--listen",
                               f"127.0.0.1:{port}"], cwd=ROOT, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows: list[dict[str, object]] = []
    failed = False
    try:
        wait_until_up(port, server)
        client = Client(port)
        for target in pages(tournament, bot, games, bots_game):
            key = token if target.private else None
            status, size, _ = client.get(target.path, key)
            row: dict[str, object] = {"page": target.label, "path": target.path, "status": status, "bytes": size}
            rows.append(row)
            if status != 200:
                failed |= status != 404
                continue
            for _ in range(max(0, args.warmup - 1)):
                client.get(target.path, key)
            times = []
            for _ in range(args.runs):
                status, size, seconds = client.get(target.path, key)
                if status != 200:
                    raise SystemExit(f"bench_web: {target.path} answered {status} after answering 200")
                times.append(seconds * 1000)
            row.update(median_ms=statistics.median(times), p99_ms=p99(times), bytes=size)
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        store = Store(args.db)
        try:
            remove_user(store, operator)
        finally:
            store.close()
    machine = (f"{cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
               f"{platform.system()} {platform.release()}")
    print(f"`arena web` over {args.db.split(':', 1)[0].split('+')[0]} database: tournament {tournament!r}, "
          f"{games} games; {args.runs} timed requests per page after {args.warmup} untimed, one kept-alive "
          f"connection\nmachine: {machine}; load average {os.getloadavg()[0]:.1f} at the end\n")
    print("| page | path | median ms | p99 ms | bytes |")
    print("| --- | --- | ---: | ---: | ---: |")
    for row in rows:
        if "median_ms" in row:
            print(f"| {row['page']} | `{row['path']}` | {row['median_ms']:.1f} | {row['p99_ms']:.1f} | {row['bytes']} |")
        else:
            said = "not there yet (404)" if row["status"] == 404 else f"FAILED: status {row['status']}"
            print(f"| {row['page']} | `{row['path']}` | {said} | | |")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine, "tournament": tournament, "games": games,
                                               "runs": args.runs, "pages": rows}, indent=1) + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
