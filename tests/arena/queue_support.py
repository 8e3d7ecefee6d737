"""Queue workers and coordinators as real processes, for the scale-out tests (docs/scale-out.md)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from arena.store.store import Store
from tests.arena_support import ROOT, arena_argv, arena_env

# Short heartbeats so a killed worker is found dead in seconds, not the production 30 s.
WORKER_TIMING = ("--heartbeat", "0.5", "--stalled-after", "4", "--grace", "2")
FOLLOW_TIMEOUT_S = 240


def start_worker(url: str, log: Path, concurrency: int = 1, extra: Sequence[str] = ()) -> subprocess.Popen[bytes]:
    """An `arena worker` on ``url``, its output in ``log``, in a session of its own (a kill -9 of
    its group stands for a lost machine)."""
    out = open(log, "ab")
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
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)


def run_queued(path: Path, *extra: str, timeout: float = FOLLOW_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """`arena run FILE --queue` to its end."""
    return subprocess.run(arena_argv("run", str(path), "--queue", *extra), cwd=ROOT, env=arena_env(),
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
