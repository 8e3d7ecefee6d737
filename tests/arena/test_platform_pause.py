"""A full disk under the bots' log folder (a real tmpfs, filled) is the platform's fault, never a
bot's (arena/play/claimed.py, pause.py): `arena run` stops with one line and exit 4, keeps what
it played, and a rerun once there is room finishes with the results of a run that never saw it;
under a queue the worker whose disk is full pauses (its line, its metric, `arena status`) while
the other plays every game, each stored once, with the single-process standings. Real bot
processes, real gRPC, real databases, a real file system out of space."""

from __future__ import annotations

import errno
import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from arena.config import load_config
from arena.play.claimed import MAX_PLATFORM_FAULTS
from arena.store.store import Store
from referee.errors import EXIT_PLATFORM
from tests.arena.queue_support import log_text, query, run_queued, start_worker, stop, wait_for, worker_name
from tests.arena.runs_support import (
    PLAY_TIMEOUT_S,
    SCHEDULE,
    Outcome,
    assert_complete,
    outcome_of,
    tournament_file,
)
from tests.arena.runs_support import reference  # noqa: F401 - a fixture
from tests.arena_support import new_marker, run_arena, wait_no_marked_processes
from tests.metrics_support import file_reader, metrics_url, scrape, total

PAGE = 4096  # tmpfs counts its size in pages
TMPFS_PAGES = 16


@contextmanager
def full_tmpfs(folder: Path, free_pages: int = 0) -> Iterator[Path]:
    """A tmpfs of TMPFS_PAGES pages mounted on ``folder``, filled but for ``free_pages`` (a bot's
    log of a few lines takes one); yields its filler file (delete it to free the space). Always
    unmounted on the way out; the test is skipped when this machine does not let it mount one."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_PAGES * PAGE // 1024}k", "tmpfs",
                              str(folder)], capture_output=True, text=True, timeout=30, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): {mounted.stderr.strip()}")
    try:
        filler = folder / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            for _ in range(TMPFS_PAGES + 1):
                os.write(fd, bytes(PAGE))
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
        finally:
            os.close(fd)
        assert filler.stat().st_size >= (TMPFS_PAGES - 1) * PAGE, "the tmpfs did not fill"
        if free_pages:
            with open(filler, "r+b") as out:
                out.truncate(filler.stat().st_size - free_pages * PAGE)
        probe = folder / "probe"
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT, 0o600)
        try:  # nothing more than free_pages fits: the disk is full for the bots
            with pytest.raises(OSError) as full:
                for _ in range(free_pages + 1):
                    os.write(fd, bytes(PAGE))
        finally:
            os.close(fd)
            probe.unlink()
        assert full.value.errno == errno.ENOSPC
        yield filler
    finally:
        if subprocess.run(["umount", str(folder)], capture_output=True, timeout=30, check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True, timeout=30, check=False)


def test_a_full_disk_stops_a_run_with_exit_4_and_a_rerun_finishes_it_as_if_it_never_happened(
        reference: Outcome, tmp_path: Path) -> None:  # noqa: F811 - a fixture
    marker = new_marker()
    folder = tmp_path / "run"
    path = tournament_file(folder, marker, concurrency=1)
    url = load_config(path).database
    # room for two bots' logs: games 1 and 2 (bots 1 and 2) are played, game 3's first new bot cannot start
    assert SCHEDULE[0].seat_bots == (0, 1) and SCHEDULE[1].seat_bots == (1, 0) and SCHEDULE[2].seat_bots == (2, 3)
    with full_tmpfs(folder / "runs-logs", free_pages=2):
        stopped = run_arena("run", str(path), timeout=PLAY_TIMEOUT_S)
        left = wait_no_marked_processes(marker)
    assert stopped.returncode == EXIT_PLATFORM, f"{stopped.stdout}\n{stopped.stderr}"
    assert stopped.stderr.count("\n") == 1, stopped.stderr  # one line, no traceback
    line = stopped.stderr
    assert line.startswith("arena: error: platform fault (disk): cannot write the bot's log "), line
    assert "No space left on device" in line and "2/12 played and kept" in line, line
    assert left == [], "bot processes left running"

    store = Store(url)
    try:
        tid = store.tournament_id("runs")
        assert tid is not None
        games = {g.number: g for g in store.games(tid)}
        history = store.rating_history(tid)
        faults = dict(query_games(store, tid))
    finally:
        store.close()
    assert [n for n, g in games.items() if g.status == "done"] == [1, 2], "the games played are kept"
    for number in (1, 2):
        g = games[number]
        assert (g.seat_bots, g.deck_seed, g.status, g.result) == reference.games[number]
    third = games[3]
    assert (third.status, third.result) == ("pending", None), "not stored as a result: to be played again"
    assert third.error is not None and third.error.startswith(f"platform fault 1/{MAX_PLATFORM_FAULTS} (disk): ")
    assert faults == {n: (1 if n == 3 else 0) for n in games}
    assert all(g.status == "pending" and g.result is None for n, g in games.items() if n > 3)
    assert tuple(history) == tuple(h for h in reference.history if h[0] in (1, 2)), \
        "rated exactly as the fault-free run, up to the fault"

    # the space is back (unmounted): the same command resumes and ends as the fault-free run
    done = run_arena("run", str(path), timeout=PLAY_TIMEOUT_S)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert wait_no_marked_processes(marker) == []
    outcome = outcome_of(url)
    assert_complete(outcome)
    assert outcome.games == reference.games
    assert outcome.history == reference.history
    assert outcome.standings == reference.standings


def query_games(store: Store, tid: int) -> list[tuple[int, int]]:
    """(number, platform faults) of every game of ``tid``."""
    with store.engine.connect() as conn:
        from sqlalchemy import text

        return [(n, f) for n, f in conn.execute(text(
            "SELECT number, platform_faults FROM games WHERE tournament_id = :tid"), {"tid": tid})]


def test_a_worker_whose_disk_is_full_pauses_and_the_other_plays_every_game(
        reference: Outcome, pg_url: str, tmp_path: Path) -> None:  # noqa: F811 - a fixture
    marker = new_marker()
    path = tournament_file(tmp_path, marker, concurrency=1, database=pg_url)
    queued = run_queued(path, "--detach")
    assert queued.returncode == 0, queued.stderr
    logs = tmp_path / "logs"
    logs.mkdir()
    bad_log, good_log = logs / "full.log", logs / "good.log"
    procs: list[subprocess.Popen[bytes]] = []
    with full_tmpfs(tmp_path / "full-disk") as filler:
        try:
            # the worker with the full disk first, alone: it takes a game, cannot start its bots, pauses;
            # its checks 0.25 s, then doubling up to 12 times that (3 s): the space freed below is seen
            # within 3 s, not the 12 s a 1 s first wait grows to while the other worker plays every game
            bad = start_worker(pg_url, bad_log, extra=["--logs", str(tmp_path / "full-disk"), "--pause-check", "0.25",
                                                       "--metrics-listen", "127.0.0.1:0"])
            procs.append(bad)
            metrics = metrics_url(file_reader(bad_log), lambda: bad.poll() is None)
            wait_for(lambda: "arena worker: paused: disk: " in bad_log.read_text(errors="replace"),
                     lambda: f"the worker's pause line:\n{log_text(logs)}", timeout_s=120)
            paused = scrape(metrics)
            assert total(paused, "arena_worker_paused") == 1
            assert total(paused, "arena_worker_pauses_total", condition="disk") == 1
            shown = run_arena("status", str(path), "--format", "json")
            assert shown.returncode == 0, shown.stderr
            (pause,) = json.loads(shown.stdout)["queue"]["paused"]
            assert (pause["name"], pause["condition"]) == (worker_name(bad), "disk")
            assert "No space left on device" in pause["reason"], pause
            table = run_arena("status", str(path))
            assert f"worker {worker_name(bad)}: paused since" in table.stdout, table.stdout

            good = start_worker(pg_url, good_log, extra=["--logs", str(tmp_path / "good-logs")])
            procs.append(good)
            followed = run_queued(path)
            assert followed.returncode == 0, f"{followed.stdout}\n{followed.stderr}\n{log_text(logs)}"
            assert total(scrape(metrics), "arena_worker_paused") == 1, "still paused: its disk is still full"

            # space freed: its next check passes, it says so in one line and takes games again
            filler.unlink()
            wait_for(lambda: "arena worker: resumed: disk cleared after" in bad_log.read_text(errors="replace"),
                     lambda: f"the worker's resume line:\n{log_text(logs)}", timeout_s=60)
            assert total(scrape(metrics), "arena_worker_paused") == 0
            assert json.loads(run_arena("status", str(path), "--format", "json").stdout)["queue"]["paused"] == []
        finally:
            statuses = stop(procs)
    assert statuses == [0, 0], f"{statuses}\n{log_text(logs)}"
    assert wait_no_marked_processes(marker) == [], "bot processes left running"
    outcome = outcome_of(pg_url)
    assert_complete(outcome)  # every game stored once, done, rated once
    assert outcome.games == reference.games
    assert outcome.history == reference.history
    assert outcome.standings == reference.standings
    rows = query(pg_url, "SELECT number, worker, platform_faults FROM games ORDER BY number")
    assert {w for _, w, _ in rows} == {worker_name(good)}, "the other worker played every game"
    assert sum(f for _, _, f in rows) == 1, "one game met the full disk, once: the worker paused at once"
    bad_text = bad_log.read_text(errors="replace")
    assert bad_text.count("arena worker: paused:") == 1 and bad_text.count("arena worker: resumed:") == 1, bad_text
    for name in (bad_log, good_log):
        assert "Traceback" not in name.read_text(errors="replace"), log_text(logs)


def test_a_database_pause_is_checked_by_a_round_trip_to_the_database(tmp_path: Path) -> None:
    """A paused worker fetches no job, so no game of its can be the database's check: the pause
    asks the database itself, and resumes once it answers."""
    import asyncio
    from types import SimpleNamespace

    from sqlalchemy import create_engine

    from arena.play.pause import WorkerPause
    from referee.errors import PlatformFault

    store = SimpleNamespace(engine=create_engine(f"sqlite:///{tmp_path / 'missing' / 'arena.db'}"))
    said: list[str] = []
    pause = WorkerPause("w", lambda: [tmp_path], lambda: store, lambda: None, 0.05, said.append)  # type: ignore[arg-type,return-value]

    async def run() -> None:
        pause.enter(PlatformFault("database", "lost its connection"))
        await asyncio.sleep(0.4)
        assert pause.paused, said  # the database does not answer: still paused
        store.engine = create_engine("sqlite://")
        for _ in range(100):
            if not pause.paused:
                break
            await asyncio.sleep(0.05)
        assert not pause.paused, said
        await pause.close()

    asyncio.run(run())
    assert said[0].startswith("paused: database: ") and said[-1].startswith("resumed: database cleared"), said
