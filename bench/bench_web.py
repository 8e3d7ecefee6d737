"""Web app benchmark: response times of each page of `arena web` over a database, over HTTP.

Usage: python bench/bench_web.py --db URL [--runs N] [--warmup N] [--tournament NAME] [--page-size N] [--json FILE]

Starts `arena web --db URL` as a process on a free port of 127.0.0.1, then for each page in PAGES
(the front page, a tournament's leaderboard, a bot's page, the game list's first and middle page,
a replay page, its states and its record as JSON) sends ``--warmup`` untimed requests and ``--runs``
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

from arena.store.store import StorageError, Store

START_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Target:
    """One page to time: what to call it and its path."""

    label: str
    path: str


def pages(tournament: str, bot: str, games: int) -> list[Target]:
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

    def get(self, path: str) -> tuple[int, int, float]:
        """(status, body bytes, seconds until the whole body was read)."""
        for attempt in (1, 2):
            start = time.perf_counter()
            try:
                self.conn.request("GET", path)
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


def describe(db: str, name: str | None) -> tuple[str, str, int]:
    """The tournament to time (the named one, else the one with the most games), its first bot and its games."""
    store = Store(db, read_only=True)
    try:
        found = [(sum(store.counts(t.id).values()), t.id, t.name) for t in store.tournaments()
                 if name is None or t.name == name]
        if not found:
            raise StorageError(f"no tournament {name!r} in {store.url_for_people}" if name
                               else f"no tournament in {store.url_for_people}")
        games, tid, tournament = max(found)
        bots = store.bots(tid)
        return tournament, bots[0].name if bots else "-", games
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
        tournament, bot, games = describe(args.db, args.tournament)
    except StorageError as exc:
        print(f"bench_web: {exc}", file=sys.stderr)
        return 2
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "arena.cli", "web", "--db", args.db, "--listen",
                               f"127.0.0.1:{port}"], cwd=ROOT, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows: list[dict[str, object]] = []
    failed = False
    try:
        wait_until_up(port, server)
        client = Client(port)
        for target in pages(tournament, bot, games):
            status, size, _ = client.get(target.path)
            row: dict[str, object] = {"page": target.label, "path": target.path, "status": status, "bytes": size}
            rows.append(row)
            if status != 200:
                failed |= status != 404
                continue
            for _ in range(max(0, args.warmup - 1)):
                client.get(target.path)
            times = []
            for _ in range(args.runs):
                status, size, seconds = client.get(target.path)
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
