"""Queue workers and coordinators as real processes, for the scale-out tests (docs/scale-out.md)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import psycopg

from arena.play.queue import PLAY_TASK
from arena.store.store import Store
from tests.arena_support import ROOT, arena_argv, arena_env

# Short heartbeats so a killed worker is found dead in seconds, not the production 30 s.
WORKER_TIMING = ("--heartbeat", "0.5", "--stalled-after", "4", "--grace", "2")
FOLLOW_TIMEOUT_S = 240
T = TypeVar("T")


def start_worker(url: str, log: Path, concurrency: int = 1, extra: Sequence[str] = ()) -> subprocess.Popen[bytes]:
    """An `arena worker` on ``url``, its output in ``log``, in a session of its own (a kill -9 of
    its group stands for a lost machine)."""
    out = open(log, "ab")  # noqa: SIM115 - the child keeps it; ours is closed below
    try:
        return subprocess.Popen(
            arena_argv("-v", "worker", "--db", url, "--concurrency", str(concurrency), *WORKER_TIMING, *extra),
            cwd=ROOT, env=arena_env(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    finally:
        out.close()


@contextmanager
def workers(url: str, folder: Path, count: int, concurrency: int = 1) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` workers for the length of the block; stopped with SIGTERM (then SIGKILL) after it."""
    folder.mkdir(parents=True, exist_ok=True)
    procs = [start_worker(url, folder / f"worker{i}.log", concurrency) for i in range(count)]
    try:
        yield procs
    finally:
        stop(procs)


def stop(procs: list[subprocess.Popen[bytes]]) -> list[int | None]:
    """SIGTERM each live process of ``procs`` and wait for it (bounded, then its group is killed);
    their exit statuses."""
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            kill_group(proc)
    return [proc.returncode for proc in procs]


def run_queued(path: Path, *extra: str, timeout: float = FOLLOW_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """`arena run FILE --queue` to its end."""
    return subprocess.run(arena_argv("run", str(path), "--queue", *extra), check=False, cwd=ROOT, env=arena_env(),
                          capture_output=True, text=True, timeout=timeout)


def wait_settled(store: Store, tid: int, timeout_s: float = FOLLOW_TIMEOUT_S) -> dict[str, int]:
    """Poll until no game of ``tid`` is pending or running; the counts."""
    deadline = time.monotonic() + timeout_s
    while True:
        counts = store.counts(tid)
        if counts["pending"] + counts["running"] == 0:
            return counts
        assert time.monotonic() < deadline, f"games not settled within {timeout_s} s: {counts}"
        time.sleep(0.1)


def log_text(folder: Path) -> str:
    """Every worker log in ``folder``, for failure messages."""
    return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(folder.glob("*.log")))


def libpq(url: str) -> str:
    """A SQLAlchemy PostgreSQL URL as psycopg reads it."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def query(url: str, sql: str, args: Sequence[object] = ()) -> list[tuple[Any, ...]]:
    """Rows of one query on its own connection (opened and closed here, so a cut connection is no matter)."""
    with psycopg.connect(libpq(url), autocommit=True, connect_timeout=10) as conn:
        cursor = conn.execute(sql, args)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description is not None else []


def game_rows(url: str) -> dict[int, tuple[str, int, str | None]]:
    """Every game by number: (status, attempt, worker)."""
    return {n: (s, a, w) for n, s, a, w in query(url, "SELECT number, status, attempt, worker FROM games")}


def play_jobs(url: str) -> list[tuple[str, str, int]]:
    """Every play_game job left in the queue: (status, queueing lock, attempts)."""
    return [tuple(r) for r in query(  # type: ignore[misc]
        url, "SELECT status::text, queueing_lock, attempts FROM procrastinate_jobs WHERE task_name = %s ORDER BY id",
        (PLAY_TASK,))]


def worker_name(proc: subprocess.Popen[bytes]) -> str:
    """The name a worker started by ``start_worker`` writes in games.worker (host:pid)."""
    return f"{socket.gethostname()}:{proc.pid}"


def wait_for(check: Callable[[], T | None], what: str | Callable[[], str], timeout_s: float = FOLLOW_TIMEOUT_S,
             poll_s: float = 0.05) -> T:
    """Poll ``check`` until it returns something true (bounded); that value. ``what`` may be a
    callable, for a failure message that shows the state at the deadline (logs, queue rows)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {timeout_s:.0f} s: {what() if callable(what) else what}")
        time.sleep(poll_s)


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, start time) of a process from /proc, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[19])


def descendants(root: int) -> set[tuple[int, int]]:
    """Every live process below ``root`` in the process tree, as (pid, start time) so a reused pid
    is not mistaken for one of them."""
    children: dict[int, list[tuple[int, int]]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None and stat[0] != "Z":
            children.setdefault(stat[1], []).append((int(entry.name), stat[2]))
    found: set[tuple[int, int]] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child[0])
    return found


def still_alive(processes: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """Those of ``processes`` still running (a zombie, exited but not reaped, is not)."""
    alive = set()
    for pid, started in processes:
        stat = _stat(pid)
        if stat is not None and stat[0] != "Z" and stat[2] == started:
            alive.add((pid, started))
    return alive


def kill_group(proc: subprocess.Popen[Any]) -> None:
    """kill -9 the process group ``proc`` leads (a lost machine), and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)
