"""Several processes opening one new SQLite file at once (an `arena run` and an `arena web`
started together, or runs of several tournaments sharing a database): each migrates in turn
under SQLite's write lock, so none fails on the tables another has just made."""

from __future__ import annotations

import multiprocessing
from multiprocessing.synchronize import Barrier
from pathlib import Path

PROCESSES = 4
ROUNDS = 3  # fresh files: without the lock most rounds had a process fail (6 in 10 with three processes)


def _open(url: str, barrier: Barrier, results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    from arena.store.store import Store

    barrier.wait(timeout=60)  # all at once: each process has imported everything before it opens
    try:
        store = Store(url)
        results.put(("ok", store.tournaments() == []))
        store.close()
    except Exception as exc:  # what the test reports: the error each process met
        results.put((type(exc).__name__, str(exc)))


def test_processes_opening_a_new_sqlite_file_at_once_all_succeed(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")  # not fork: the test process may run threads
    seen = []
    for round_ in range(ROUNDS):
        url = f"sqlite:///{tmp_path / f'arena-{round_}.db'}"
        barrier, results = context.Barrier(PROCESSES), context.Queue()
        processes = [context.Process(target=_open, args=(url, barrier, results)) for _ in range(PROCESSES)]
        for process in processes:
            process.start()
        seen += [results.get(timeout=120) for _ in processes]
        for process in processes:
            process.join(timeout=60)
            assert process.exitcode == 0
    assert seen == [("ok", True)] * (PROCESSES * ROUNDS), [s for s in seen if s != ("ok", True)]
