"""Queue benchmark: games/s of queue workers against the single-process run, the queue's per-game costs, a scaling model.

Usage: python bench/bench_queue.py [--quick] [--rounds 3] [--games-per-pairing 20] [--workers 1,2,4]
       [--many-workers 32] [--many-games 1280] [--private-server | --pg-url URL] [--json FILE]

1. Throughput: a 6-bot round robin of the sample bots (three random, three greedy; 2 players,
   15 pairings x ``--games-per-pairing``), played single-process (``arena run``, concurrency =
   cores) and queued (``arena run --queue`` with 1, 2, 4 ``arena worker --concurrency 1``
   processes), each on a fresh PostgreSQL database, the settings taking turns over ``--rounds``.
   games/s is games / (last game stored - first game started), from the games' own timestamps.
2. Per-game costs of each run: the coordinator's CPU (its process and every child it reaped, from
   wait4), the workers' (with their bots), the database's (utime + stime in /proc/<pid>/stat of the
   PostgreSQL backends serving the run's database, sampled every 0.2 s; with --private-server the
   whole server's, reaped backends included, through the postmaster's cutime/cstime), and its
   writes (pg_stat_database: commits, tuples inserted / updated / deleted; WAL bytes with
   --private-server). Queue latency: each worker's gap between storing one game and starting the
   next, and, with the workers idle, the time from committing a trivial job (a rating pass) to its
   end, over ``--probes`` jobs.
3. Many cheap workers: ``--many-workers`` workers play one-deal games between two built-in random
   bots (``python -m referee.bots.builtin``, no sandbox), after a 1-worker run of the same games;
   the database's CPU with every worker idle is measured over ``--idle-s``. Then the model: per-game
   database CPU c_db, idle database CPU per worker r_idle and a worker's time per game t_game give
   where one PostgreSQL core is saturated (games/s and workers), checked against the many-worker run.

Everything runs on this machine: workers, coordinator and database share its cores.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psycopg
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from arena.play.queue import RATE_TASK, defer_rating, make_app
from arena.store.store import Store, engine_url

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
SAMPLE_S = 0.2  # how often the database backends' CPU is read
RUN_TIMEOUT_S = 1800.0  # one tournament run, start to end
READY_TIMEOUT_S = 180.0  # workers connected and listening
STOP_TIMEOUT_S = 60.0  # a worker's exit after SIGTERM
CONNECTIONS_PER_WORKER = 4  # measured: LISTEN, procrastinate's pool (1 idle), the store's pool (part 1 re-measures)
NAME = "qbench"


def fail(message: str) -> None:
    """One line and exit status 2 (a bad argument, a server that cannot take the run)."""
    sys.stderr.write(f"bench_queue: error: {message}\n")
    raise SystemExit(2)


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def arena(*args: str) -> list[str]:
    return [sys.executable, "-m", "arena.cli", *args]


# --- processes: CPU of a child through wait4 ---------------------------------------------------


def reap(proc: subprocess.Popen[bytes], timeout_s: float) -> tuple[int, float]:
    """Wait (bounded) for ``proc`` and return its exit status and CPU seconds (its own and every
    descendant it reaped); SIGKILL once the bound is past."""
    deadline = time.monotonic() + timeout_s
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage.ru_utime + usage.ru_stime
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            deadline = time.monotonic() + 30
        time.sleep(0.05)


@dataclass
class Workers:
    """``arena worker`` processes (one session each); ``stop`` gives their CPU."""

    url: str
    count: int
    logs: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        for i in range(self.count):
            with open(self.logs / f"worker{i}.log", "ab") as out:
                self.procs.append(subprocess.Popen(
                    arena("-v", "worker", "--db", self.url, "--concurrency", "1", "--name", f"w{i}",
                          "--logs", str(self.logs / f"bots{i}")),
                    cwd=ROOT, env=child_env(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True))

    def stop(self) -> float:
        """SIGTERM every worker, wait for each (bounded); their CPU seconds in all."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        cpu = 0.0
        for proc in self.procs:
            cpu += reap(proc, STOP_TIMEOUT_S)[1]
        self.procs.clear()
        return cpu


# --- the database server -------------------------------------------------------------------------


def proc_cpu(pid: int) -> float | None:
    """utime + stime of ``pid`` in seconds, None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) * TICK_S


def server_cpu(postmaster: int) -> float:
    """The whole server's CPU: the postmaster, its live children, and its reaped ones (cutime)."""
    fields = Path(f"/proc/{postmaster}/stat").read_text().rsplit(")", 1)[1].split()
    total = sum(int(f) for f in fields[11:15]) * TICK_S
    for child in Path("/proc").glob("[0-9]*/stat"):
        try:
            parts = child.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(parts[1]) == postmaster:
            total += (int(parts[11]) + int(parts[12])) * TICK_S
    return total


class Server:
    """A PostgreSQL server reachable at ``admin_url`` (a database to create others from)."""

    def __init__(self, admin_url: str, private: bool) -> None:
        self.admin_url = admin_url
        self.private = private
        with self.connect() as conn:
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]  # type: ignore[index]
            self.max_connections = int(conn.execute("SHOW max_connections").fetchone()[0])  # type: ignore[index]
        stat = Path(f"/proc/{pid}/stat")
        if not stat.exists():
            fail("the PostgreSQL server is not on this machine: its backends' CPU cannot be read")
        self.postmaster = int(stat.read_text().rsplit(")", 1)[1].split()[1])

    def connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.admin_url, autocommit=True)

    def url(self, database: str) -> str:
        return make_url(self.admin_url).set(database=database).render_as_string(hide_password=False)

    def connections_in_use(self) -> int:
        with self.connect() as conn:
            return int(conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'")
                       .fetchone()[0])  # type: ignore[index]

    @contextmanager
    def database(self, name: str) -> Iterator[str]:
        """A fresh database for the block (dropped after it, with whatever is still connected)."""
        with self.connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        try:
            yield self.url(name)
        finally:
            with self.connect() as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def counters(self, name: str) -> dict[str, float]:
        """The database's commits and tuple writes so far, and the server's WAL position."""
        with self.connect() as conn:
            conn.execute("SELECT pg_stat_clear_snapshot()")
            row = conn.execute("SELECT xact_commit, tup_inserted, tup_updated, tup_deleted, "
                               "pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') FROM pg_stat_database "
                               "WHERE datname = %s", (name,)).fetchone()
        assert row is not None
        keys = ("commits", "inserted", "updated", "deleted", "wal_bytes")
        return {k: float(v) for k, v in zip(keys, row)}


@contextmanager
def private_server() -> Iterator[str]:
    """A throwaway PostgreSQL cluster (initdb) on a free loopback port: its processes are this
    benchmark's alone, and it takes hundreds of connections. The admin URL."""
    initdb = shutil.which("initdb") or next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))), None)
    if initdb is None:
        fail("--private-server needs PostgreSQL's initdb (Debian: apt-get install postgresql)")
    bindir = Path(initdb).parent
    as_user: list[str] = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    folder = Path(tempfile.mkdtemp(prefix="bench-queue-pg-"))
    if as_user:
        shutil.chown(folder, "postgres", "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = folder / "data"
    subprocess.run([*as_user, str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"],
                   check=True, capture_output=True, timeout=120)
    with open(folder / "server.log", "wb") as log:
        server = subprocess.Popen([*as_user, str(bindir / "postgres"), "-D", str(data), "-p", str(port), "-k",
                                   str(folder), "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=400",
                                   "-c", "shared_preload_libraries=pg_stat_statements"],
                                  stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                psycopg.connect(url, connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                if server.poll() is not None or time.monotonic() > deadline:
                    fail(f"the private PostgreSQL server did not start: {(folder / 'server.log').read_text()[-500:]}")
                time.sleep(0.2)
        yield url
    finally:
        server.send_signal(signal.SIGINT)  # fast shutdown
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)


class DatabaseCpu:
    """CPU of the backends serving one database (sampled), and of the whole server."""

    def __init__(self, server: Server, name: str) -> None:
        self.server, self.name = server, name
        self._seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self.max_backends = 0

    def __enter__(self) -> Self:
        self._conn = self.server.connect()
        self._server_start = server_cpu(self.server.postmaster)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._conn.close()

    def _sample(self) -> None:
        pids = [r[0] for r in self._conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", (self.name,))]
        self.max_backends = max(self.max_backends, len(pids))
        for pid in pids:
            cpu = proc_cpu(pid)
            if cpu is not None:
                self._seen[pid] = max(self._seen.get(pid, 0.0), cpu)

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self._sample()

    def database_s(self) -> float:
        """The database's backends' CPU since the start (every backend is new in a fresh database)."""
        self._sample()
        return sum(self._seen.values())

    def server_s(self) -> float:
        return server_cpu(self.server.postmaster) - self._server_start


# --- tournaments -------------------------------------------------------------------------------


def sample_tournament(path: Path, url: str, games_per_pairing: int, seed: int) -> None:
    """Six sample bots (three random, three greedy), 2 players, concurrency = cores."""
    py, bots = sys.executable, ROOT / "sample_bots"
    lines = [f'name = "{NAME}"', "players = 2", f"games_per_pairing = {games_per_pairing}",
             f"concurrency = {os.cpu_count() or 1}", f"seed = {seed}", f"database = {json.dumps(url)}",
             "[time]", "move_ms = 2000", "startup_ms = 30000"]
    for i in range(3):
        lines += ["[[bots]]", f'name = "random{i}"', f"command = {json.dumps(shlex.join([py, str(bots / 'random' / 'random_bot.py')]))}",
                  f'env = {{ CASINO_BOT_SEED = "{i + 1}" }}']
    for i in range(3):
        lines += ["[[bots]]", f'name = "greedy{i}"', f"command = {json.dumps(shlex.join([py, str(bots / 'greedy' / 'greedy_bot.py')]))}"]
    path.write_text("\n".join(lines) + "\n")


def cheap_tournament(path: Path, url: str, games: int, seed: int) -> None:
    """Two built-in random bots, one-deal games, no sandbox: the least a game can cost."""
    builtin = shlex.join([sys.executable, "-m", "referee.bots.builtin"])
    lines = [f'name = "{NAME}"', "players = 2", f"games_per_pairing = {games}", "concurrency = 1",
             f"seed = {seed}", f"database = {json.dumps(url)}", "[rules]", "max_deals = 1",
             "[time]", "move_ms = 5000", "startup_ms = 60000", "[sandbox]", 'mode = "none"']
    for i in range(2):
        lines += ["[[bots]]", f'name = "builtin{i}"', f"command = {json.dumps(builtin + f' --seed {i + 1}')}"]
    path.write_text("\n".join(lines) + "\n")


def game_times(url: str) -> dict[str, Any]:
    """Throughput and queue gaps from the stored games' timestamps."""
    engine = create_engine(engine_url(make_url(url)))
    try:
        with engine.connect() as conn:
            rows = conn.execute(text(
                "SELECT status, attempt, worker, extract(epoch FROM started_at), extract(epoch FROM finished_at) "
                "FROM games ORDER BY started_at")).all()
    finally:
        engine.dispose()
    done = [r for r in rows if r[0] == "done"]
    if not done:
        raise SystemExit(f"no game was played: {[r[0] for r in rows][:5]}")
    first, last = min(float(r[3]) for r in done), max(float(r[4]) for r in done)
    gaps: list[float] = []
    by_worker: dict[str, list[tuple[float, float]]] = {}
    for r in done:
        by_worker.setdefault(r[2] or "", []).append((float(r[3]), float(r[4])))
    for games in by_worker.values():
        games.sort()
        gaps += [b[0] - a[1] for a, b in itertools.pairwise(games)]
    ends = sorted(float(r[4]) for r in done)
    lo, hi = int(0.1 * len(ends)), int(0.9 * len(ends))  # between them no bot is starting and none is idle
    return {"games": len(done), "failed": sum(r[0] == "failed" for r in rows), "retried": sum(r[1] > 1 for r in rows),
            "span_s": last - first, "games_per_s": len(done) / (last - first),
            "steady_games_per_s": (hi - lo) / (ends[hi] - ends[lo]) if ends[hi] > ends[lo] else 0.0,
            "game_s": statistics.median(float(r[4]) - float(r[3]) for r in done),
            "gap_s": statistics.median(gaps) if gaps else 0.0,
            "gap_p90_s": sorted(gaps)[int(0.9 * (len(gaps) - 1))] if gaps else 0.0}


def wait_listening(server: Server, name: str, count: int) -> None:
    """Until ``count`` workers listen for jobs on the database (bounded)."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    with server.connect() as conn:
        while True:
            n = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND query LIKE 'LISTEN%%'",
                             (name,)).fetchone()[0]  # type: ignore[index]
            if n >= count:
                return
            if time.monotonic() > deadline:
                raise SystemExit(f"only {n} of {count} workers were listening after {READY_TIMEOUT_S:g} s")
            time.sleep(0.2)


def probe_latency(url: str, probes: int) -> float:
    """With the workers idle: median seconds from committing a rating-pass job to its end."""
    engine = create_engine(engine_url(make_url(url)))
    app = make_app()
    times = []
    try:
        with engine.connect() as conn:
            tid = conn.execute(text("SELECT id FROM tournaments")).scalar_one()
        for _ in range(probes):
            with engine.begin() as conn:
                defer_rating(app, conn, tid)
            start = time.perf_counter()
            deadline = start + 30
            with engine.connect() as conn:
                while conn.execute(text("SELECT count(*) FROM procrastinate_jobs WHERE task_name = :t AND status IN "
                                        "('todo', 'doing')"), {"t": RATE_TASK}).scalar_one():
                    conn.commit()
                    if time.perf_counter() > deadline:
                        raise SystemExit("a probe job was not run within 30 s")
                    time.sleep(0.002)
            times.append(time.perf_counter() - start)
            time.sleep(0.1)
    finally:
        engine.dispose()
    return statistics.median(times)


# --- one run -------------------------------------------------------------------------------------


def one_run(server: Server, folder: Path, workers: int, kind: str, size: int, seed: int, probes: int = 0,
            idle_s: float = 0.0, statements: bool = False) -> dict[str, Any]:
    """One tournament on a fresh database: ``workers`` 0 is the single-process ``arena run``."""
    name = f"bench_queue_{os.getpid()}"
    with server.database(name) as url:
        path = folder / "t.toml"
        (sample_tournament if kind == "sample" else cheap_tournament)(path, url, size, seed)
        Store(url).close()  # the schema, before anything is measured
        if statements:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        pool = Workers(url, workers, folder / f"logs-{workers}")
        result: dict[str, Any] = {"workers": workers}
        try:
            if workers:
                pool.start()
                wait_listening(server, name, workers)
                if idle_s:
                    with DatabaseCpu(server, name) as cpu:
                        time.sleep(idle_s)
                        result["idle_db_s_per_worker_s"] = cpu.database_s() / idle_s / workers
                        result["idle_server_s_per_worker_s"] = cpu.server_s() / idle_s / workers
            before = server.counters(name)
            if statements:  # the extension lives in the run's database
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute("SELECT pg_stat_statements_reset()")
            command = arena("run", str(path), "--queue") if workers else arena("run", str(path))
            with DatabaseCpu(server, name) as cpu:
                with open(folder / "run.log", "wb") as out:
                    run = subprocess.Popen(command, cwd=ROOT, env=child_env(), stdout=out, stderr=subprocess.STDOUT,
                                           start_new_session=True)
                    status, run_cpu = reap(run, RUN_TIMEOUT_S)
                db_s, server_s, backends = cpu.database_s(), cpu.server_s(), cpu.max_backends
            if status != 0:
                raise SystemExit(f"{shlex.join(command)} exited {status}:\n{(folder / 'run.log').read_text()[-3000:]}")
            if statements:
                result["statements"] = top_statements(url, name)
            if workers and probes:
                result["probe_s"] = probe_latency(url, probes)
        finally:
            result["workers_cpu_s"] = pool.stop()
        after = server.counters(name)
        result.update(game_times(url))
    games = result["games"]
    result.update({"run_cpu_s": run_cpu, "db_cpu_s": db_s, "server_cpu_s": server_s, "backends": backends,
                   **{f"{k}_per_game": (after[k] - before[k]) / games for k in after}})
    result["total_cpu_per_game"] = (run_cpu + result["workers_cpu_s"] + (server_s if server.private else db_s)) / games
    return result


def top_statements(url: str, name: str, count: int = 8) -> list[str]:
    """The statements that took the most execution time in the database since the reset."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT s.calls, s.total_exec_time, left(regexp_replace(s.query, '\\s+', ' ', 'g'), 110) "
            "FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s "
            "ORDER BY s.total_exec_time DESC LIMIT %s", (name, count)).fetchall()
    return [f"{calls} calls, {ms:.0f} ms: {query}" for calls, ms, query in rows]


def describe(r: dict[str, Any], private: bool) -> str:
    who = f"{r['workers']} worker(s)" if r["workers"] else "single process"
    db = r["server_cpu_s"] if private else r["db_cpu_s"]
    line = (f"{who}: {r['games']} games in {r['span_s']:.1f} s = {r['games_per_s']:.2f} games/s "
            f"(steady {r['steady_games_per_s']:.2f}); per game: "
            f"{'coordinator' if r['workers'] else 'arena run'} {1000 * r['run_cpu_s'] / r['games']:.1f} ms CPU, "
            f"workers {1000 * r['workers_cpu_s'] / r['games']:.1f} ms, database {1000 * db / r['games']:.2f} ms "
            f"({'whole server' if private else 'its backends'}; backends {r['backends']}), "
            f"all {1000 * r['total_cpu_per_game']:.1f} ms; {r['commits_per_game']:.1f} commits, "
            f"{r['inserted_per_game']:.1f} ins / {r['updated_per_game']:.1f} upd / {r['deleted_per_game']:.1f} del "
            f"tuples")
    if private:
        line += f", {r['wal_bytes_per_game'] / 1024:.1f} KiB WAL"
    if r["workers"]:
        line += f"; game {r['game_s'] * 1000:.0f} ms, worker gap {r['gap_s'] * 1000:.1f} ms (p90 {r['gap_p90_s'] * 1000:.1f})"
        if "probe_s" in r:
            line += f", idle job latency {r['probe_s'] * 1000:.1f} ms"
    if r["failed"] or r["retried"]:
        line += f"; FAILED {r['failed']}, retried {r['retried']}"
    return "\n    ".join([line, *r.get("statements", [])])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a fast smoke: 1 round, 30 games, 1 and 2 workers, "
                        "4 cheap workers")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--games-per-pairing", type=int, default=20, help="x 15 pairings (default 300 games)")
    parser.add_argument("--workers", default="1,2,4", help="worker counts to compare with the single process")
    parser.add_argument("--many-workers", type=int, default=32, help="workers of the cheap run (0: no part 3)")
    parser.add_argument("--many-games", type=int, default=1280, help="games of the cheap run")
    parser.add_argument("--probes", type=int, default=10, help="idle-latency jobs after each queued run")
    parser.add_argument("--idle-s", type=float, default=15.0, help="seconds the many idle workers are measured")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres",
                        help="a database of the server to create the runs' databases on")
    parser.add_argument("--private-server", action="store_true",
                        help="start a throwaway PostgreSQL cluster instead (exact server CPU, 400 connections)")
    parser.add_argument("--statements", action="store_true",
                        help="with --private-server: print the statements that took the database's time in each run")
    parser.add_argument("--json", type=Path, help="write every run's figures here")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.games_per_pairing, args.workers = 1, 2, "1,2"
        args.many_workers, args.many_games, args.probes, args.idle_s = 4, 40, 3, 2.0
    try:
        counts = [int(w) for w in args.workers.split(",")]
    except ValueError:
        fail(f"--workers must be counts separated by commas, not {args.workers!r}")
    if any(c < 1 for c in counts) or args.rounds < 0 or args.games_per_pairing < 1 or args.many_workers < 0:
        fail("--workers and --games-per-pairing must be at least 1, --rounds (0: no part 1) and --many-workers "
             "(0: no part 3) at least 0")
    if args.statements and not args.private_server:
        fail("--statements needs --private-server (pg_stat_statements is loaded at the server's start)")
    with (private_server() if args.private_server else _given(args.pg_url)) as admin:
        return measure(Server(admin, args.private_server), args, counts)


@contextmanager
def _given(url: str) -> Iterator[str]:
    try:
        psycopg.connect(url, connect_timeout=5).close()
    except psycopg.OperationalError as exc:
        fail(f"cannot connect to {url}: {str(exc).strip().splitlines()[0]}")
    yield url


def measure(server: Server, args: argparse.Namespace, counts: list[int]) -> int:
    cores = os.cpu_count() or 1
    private = server.private
    print(f"Python {sys.version.split()[0]}, {cores} CPUs; PostgreSQL {'private server' if private else server.admin_url}"
          f" (max_connections {server.max_connections}); {15 * args.games_per_pairing} games of 6 sample bots, "
          f"{args.rounds} round(s): single process (concurrency {cores}) and {counts} worker(s) of concurrency 1",
          flush=True)
    results: dict[str, Any] = {"rounds": [], "many": {}}
    settings = [0, *counts]
    with tempfile.TemporaryDirectory(prefix="bench-queue-") as tmp:
        folder = Path(tmp)
        for k in range(args.rounds):
            order = settings[k % len(settings):] + settings[:k % len(settings)]  # each setting leads once in turn
            runs = {}
            for w in order:
                runs[w] = one_run(server, folder, w, "sample", args.games_per_pairing, args.seed,
                                  probes=args.probes if k == args.rounds - 1 else 0, statements=args.statements)
                print(f"round {k + 1}: {describe(runs[w], private)}", flush=True)
            ratios = ", ".join(f"{w} worker(s) {runs[w]['games_per_s'] / runs[0]['games_per_s']:.2f}" for w in counts)
            print(f"round {k + 1}: games/s against the single process: {ratios}", flush=True)
            results["rounds"].append({str(w): r for w, r in runs.items()})
        if args.rounds:
            summary(results["rounds"], settings, private)
        if args.many_workers:
            many(server, folder, args, results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(f"own CPU {resource.getrusage(resource.RUSAGE_SELF).ru_utime:.1f} s")
    return 0


def summary(rounds: list[dict[str, dict[str, Any]]], settings: list[int], private: bool) -> None:
    """Medians over the rounds."""
    single = statistics.median(r["0"]["games_per_s"] for r in rounds)
    for w in settings:
        rs = [r[str(w)] for r in rounds]
        rate = statistics.median(r["games_per_s"] for r in rs)
        ratio = statistics.median(r[str(w)]["games_per_s"] / r["0"]["games_per_s"] for r in rounds)
        med = {key: statistics.median(r[key] for r in rs) for key in rs[0] if isinstance(rs[0][key], (int, float))}
        db = (med["server_cpu_s"] if private else med["db_cpu_s"]) / med["games"]
        print(f"median, {f'{w} worker(s)' if w else 'single process'}: {rate:.2f} games/s "
              f"(runs {', '.join(format(r['games_per_s'], '.2f') for r in rs)}), ratio {ratio:.2f} (single {single:.2f}); "
              f"per game {1000 * med['run_cpu_s'] / med['games']:.1f} ms {'coordinator' if w else 'arena run'}, "
              f"database {1000 * db:.2f} ms, all {1000 * med['total_cpu_per_game']:.1f} ms CPU, "
              f"{med['commits_per_game']:.1f} commits", flush=True)


def many(server: Server, folder: Path, args: argparse.Namespace, results: dict[str, Any]) -> None:
    """Part 3: the cheap games with one worker, then with many, and the model."""
    n = args.many_workers
    need = n * CONNECTIONS_PER_WORKER + 10
    free = server.max_connections - server.connections_in_use()
    if need > free:
        fail(f"{n} workers need about {need} connections ({CONNECTIONS_PER_WORKER} each), the server has {free} free "
             f"of max_connections {server.max_connections}: use --private-server or fewer --many-workers")
    one = one_run(server, folder, 1, "cheap", max(args.many_games // 4, 10), args.seed, probes=args.probes,
                  statements=args.statements)
    print(f"cheap games: {describe(one, server.private)}", flush=True)
    lots = one_run(server, folder, n, "cheap", args.many_games, args.seed, probes=args.probes, idle_s=args.idle_s,
                   statements=args.statements)
    print(f"cheap games: {describe(lots, server.private)}", flush=True)
    results["many"] = {"1": one, str(n): lots}
    db_key = "server_cpu_s" if server.private else "db_cpu_s"
    idle_key = "idle_server_s_per_worker_s" if server.private else "idle_db_s_per_worker_s"
    c_db = one[db_key] / one["games"]
    c_coord = lots["run_cpu_s"] / lots["games"]  # the longer run: its start-up spread over more games
    c_worker = one["workers_cpu_s"] / one["games"]
    t_game = 1 / one["steady_games_per_s"]  # one worker, no bot starting: its wall time per game, queue gap included
    r_idle = lots[idle_key]
    n_star = 1 / (c_db / t_game + r_idle)
    cores = os.cpu_count() or 1
    predicted = cores / (c_db + c_coord + c_worker)
    c_db_many = lots[db_key] / lots["games"]
    print(f"model: per game c_db = {1000 * c_db:.2f} ms database CPU, c_coord = {1000 * c_coord:.2f} ms, worker (referee "
          f"and bots) {1000 * c_worker:.1f} ms; t_game = {1000 * t_game:.0f} ms a game on one worker; idle database CPU "
          f"r_idle = {1000 * r_idle:.3f} ms per worker-second")
    print(f"model: one database core saturates at 1/c_db = {1 / c_db:.0f} games/s, reached with "
          f"N* = 1/(c_db/t_game + r_idle) = {n_star:.0f} workers ({n_star / t_game:.0f} games/s) per database core; "
          f"the coordinator's core at 1/c_coord = {1 / c_coord:.0f} games/s; at {CONNECTIONS_PER_WORKER} connections a "
          f"worker, max_connections 100 admits {(100 - 10) // CONNECTIONS_PER_WORKER} workers")
    print(f"model: here {n} workers share {cores} cores with the coordinator and the database: predicted "
          f"{cores}/(c_db + c_coord + c_worker) = {predicted:.1f} games/s, measured {lots['games_per_s']:.1f} "
          f"({lots['games_per_s'] / predicted:.2f} of it); database CPU per game {1000 * c_db_many:.2f} ms at {n} "
          f"workers against {1000 * c_db:.2f} at 1 (idle share {1000 * r_idle * n / lots['games_per_s']:.2f} ms)",
          flush=True)
    results["model"] = {"c_db_s": c_db, "c_coord_s": c_coord, "c_worker_s": c_worker, "t_game_s": t_game,
                        "r_idle": r_idle, "n_star": n_star, "predicted_games_per_s": predicted,
                        "measured_games_per_s": lots["games_per_s"], "c_db_many_s": c_db_many}


if __name__ == "__main__":
    raise SystemExit(main())
