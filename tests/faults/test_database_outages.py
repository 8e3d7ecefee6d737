"""Fault injection against a private PostgreSQL server (tests/faults/cluster.py): the database
restarted mid-tournament, stopped for a while and started again, stopped past the outage window;
the coordinator killed with kill -9 and started again; a worker frozen (SIGSTOP) past the stall
threshold; the workers' connections cut. Real coordinator and worker processes, real bots. Each
checks that every game is stored exactly once with the results, rating history and standings of
the same seeded tournament played in one process without faults (runs_support's ``reference``),
that no process printed a traceback, and that no bot process is left."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from arena.store.store import Store
from tests.arena.queue_support import (
    FOLLOW_TIMEOUT_S,
    WORKER_TIMING,
    game_rows,
    kill_group,
    play_jobs,
    query,
    run_queued,
    wait_for,
    worker_name,
)
from tests.arena.runs_support import (  # noqa: F401 - reference is a fixture
    SCHEDULE,
    TIME as RUNS_TIME,
    Outcome,
    assert_complete,
    outcome_of,
    reference,
    tournament_file,
)
from tests.arena_support import (
    ROOT,
    arena_argv,
    arena_env,
    new_marker,
    run_arena,
    sample_bot_command,
    wait_no_marked_processes,
    write_tournament,
)
from tests.faults.cluster import PrivateCluster

EXIT_WAIT_S = 60  # a process asked to stop (or past its outage window) exits within this
UNREACHABLE = "arena: database unreachable ("
# CI keeps the outage cases (restart, 8 s down, past the window) and the frozen worker; these three
# repeat what tests/arena/test_queue_failures.py checks on the shared server, on a private one
SLOW_IN_CI = pytest.mark.slow
NOTICE_S = 5.0  # an outage is said within this: the coordinator looks every 0.5 s, a worker every 2 s
BACK = "arena: database reachable again after "


class Process:
    """An `arena` command in a session of its own, its stdout and stderr in one log file."""

    def __init__(self, log: Path, *args: str) -> None:
        self.log = log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(arena_argv(*args), cwd=ROOT, env=arena_env(), stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait(self, timeout: float = EXIT_WAIT_S) -> int:
        return self.proc.wait(timeout=timeout)

    def stop(self) -> int | None:
        """SIGTERM, then (bounded) kill -9 of its group; its exit status (None when it was killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a frozen one hears the SIGTERM too
            self.proc.terminate()
            try:
                return self.proc.wait(timeout=EXIT_WAIT_S)
            except subprocess.TimeoutExpired:
                kill_group(self.proc)
                return None
        return self.proc.returncode


def logs_of(processes: Sequence[Process]) -> str:
    return "\n".join(f"--- {p.log.name}\n{p.text()[-4000:]}" for p in processes)


def start_worker(url: str, log: Path, *extra: str) -> Process:
    """An `arena worker` without -v: what it prints is what an operator sees."""
    return Process(log, "worker", "--db", url, *WORKER_TIMING, *extra)


def start_coordinator(path: Path, log: Path, *extra: str) -> Process:
    return Process(log, "run", str(path), "--queue", *extra)


@contextmanager
def processes() -> Iterator[list[Process]]:
    """The test's processes: every one still running is stopped after the block."""
    started: list[Process] = []
    try:
        yield started
    finally:
        for each in started:
            each.stop()


def queued(folder: Path, marker: str, url: str) -> Path:
    """The reference tournament on ``url``, scheduled and queued (`arena run --queue --detach`)."""
    path = tournament_file(folder, marker, concurrency=1, database=url)
    done = run_queued(path, "--detach")
    assert done.returncode == 0, done.stdout + done.stderr
    return path


def counts(url: str) -> dict[str, int]:
    return {status: n for status, n in query(url, "SELECT status, count(*) FROM games GROUP BY status")}


def mid_tournament(url: str, everyone: Sequence[Process]) -> None:
    """Wait until at least one game is stored and at least one is still to play (bounded)."""
    wait_for(lambda: (c := counts(url)).get("done", 0) >= 1 and c.get("done", 0) < len(SCHEDULE),
             lambda: f"a game stored, others left: {counts(url)}\n{logs_of(everyone)}", poll_s=0.05)


def assert_same_as(reference: Outcome, url: str) -> None:  # noqa: F811 - reference is the fixture's value
    outcome = outcome_of(url)
    assert_complete(outcome)  # every scheduled game stored once, done, rated once
    assert outcome.games == reference.games
    assert outcome.history == reference.history
    assert outcome.standings == reference.standings


def assert_no_traceback(everyone: Sequence[Process]) -> None:
    for each in everyone:
        text = each.text()
        assert "Traceback" not in text and "never retrieved" not in text, f"{each.log.name}:\n{text[-6000:]}"


def outage_lines(process: Process) -> tuple[int, int]:
    """How many outages it said began, and how many it said ended."""
    text = process.text()
    return text.count(UNREACHABLE), text.count(BACK)


def finish(path: Path, url: str, coordinator: Process, workers: Sequence[Process], marker: str,
           reference: Outcome) -> None:  # noqa: F811
    """The coordinator ends with status 0, the workers stop cleanly on SIGTERM, and the run is the
    reference run: every game once, the same results, ratings and standings; no bot left, no job left."""
    everyone = [coordinator, *workers]
    try:
        status = coordinator.wait(timeout=FOLLOW_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the coordinator did not finish\n{logs_of(everyone)}") from None
    assert status == 0, logs_of(everyone)
    wait_for(lambda: play_jobs(url) == [], lambda: f"an empty queue: {play_jobs(url)}\n{logs_of(everyone)}",
             poll_s=0.2)
    assert [w.stop() for w in workers] == [0] * len(workers), logs_of(everyone)
    assert wait_no_marked_processes(marker) == [], "bot processes left running"
    assert_no_traceback(everyone)
    assert_same_as(reference, url)


# --- the database restarted, or down for a while ----------------------------------------------------


@pytest.mark.parametrize("down_s", [0.0, 8.0, pytest.param(40.0, marks=pytest.mark.slow)])
def test_a_database_restarted_or_down_for_a_while_mid_tournament_loses_and_duplicates_nothing(
        down_s: float, cluster: PrivateCluster, reference: Outcome, tmp_path: Path) -> None:  # noqa: F811
    """down_s 0: `pg_ctl restart` (every connection cut, back within a second); otherwise the server
    is stopped for down_s seconds, within the outage window, and started again."""
    marker = new_marker()
    url = cluster.url
    path = queued(tmp_path, marker, url)
    with processes() as everyone:
        workers = [start_worker(url, tmp_path / f"worker{i}.log") for i in range(2)]
        everyone += workers
        coordinator = start_coordinator(path, tmp_path / "coordinator.log")
        everyone.append(coordinator)
        mid_tournament(url, everyone)
        if down_s == 0:
            cluster.restart()
        else:
            cluster.stop()
            stopped, noticed = time.monotonic(), {}  # how long each process took to say the outage
            while (elapsed := time.monotonic() - stopped) < down_s:
                noticed.update({p.log.name: elapsed for p in everyone if p.log.name not in noticed
                                and UNREACHABLE in p.text()})
                time.sleep(0.1)
            assert all(p.proc.poll() is None for p in everyone), logs_of(everyone)  # all riding it out
            cluster.start()
            assert len(noticed) == len(everyone) and max(noticed.values()) <= NOTICE_S, f"{noticed}\n{logs_of(everyone)}"
        finish(path, url, coordinator, workers, marker, reference)
    if down_s >= 8:
        # said once, when it went, and once when it came back: by the coordinator (it looks every
        # 0.5 s) and by each worker (every 2 s), within seconds of the stop
        for each in everyone:
            assert outage_lines(each) == (1, 1), f"{each.log.name}:\n{each.text()[-3000:]}"
    else:
        for each in everyone:  # a restart may fall between two looks: at most one outage, said twice
            began, ended = outage_lines(each)
            assert began == ended <= 1, f"{each.log.name}:\n{each.text()[-3000:]}"


def test_a_database_down_past_the_outage_window_stops_every_process_with_one_line_and_exit_2(
        cluster: PrivateCluster, reference: Outcome, tmp_path: Path) -> None:  # noqa: F811
    marker = new_marker()
    url = cluster.url
    path = queued(tmp_path, marker, url)
    window = ("--db-outage", "4")
    with processes() as everyone:
        workers = [start_worker(url, tmp_path / f"worker{i}.log", *window) for i in range(2)]
        coordinator = start_coordinator(path, tmp_path / "coordinator.log", *window)
        everyone += [*workers, coordinator]
        mid_tournament(url, everyone)
        cluster.stop()
        started = time.monotonic()
        took: dict[str, float] = {}  # how long each took to stop
        while len(took) < len(everyone) and time.monotonic() - started < EXIT_WAIT_S:
            took.update({p.log.name: time.monotonic() - started for p in everyone
                         if p.proc.poll() is not None and p.log.name not in took})
            time.sleep(0.1)
        cluster.start()
        statuses = [each.wait(timeout=EXIT_WAIT_S) for each in everyone]
    assert statuses == [2, 2, 2], logs_of(everyone)
    # the window, then the worker's grace and a job end's one try (the pool's wait for a connection)
    assert max(took.values()) < 4 + 15, f"{took}\n{logs_of(everyone)}"
    for each in everyone:
        lines = [line for line in each.text().splitlines() if line.startswith("arena:")]
        assert len(lines) == 2 and lines[0].startswith(UNREACHABLE), f"{each.log.name}:\n{each.text()}"
        assert lines[1].startswith("arena: error: ") and "unreachable for" in lines[1], lines
    assert_no_traceback(everyone)
    assert wait_no_marked_processes(marker) == [], "bot processes left running"
    # nothing lost: the same command and new workers finish the tournament as the reference run
    with processes() as again:
        workers = [start_worker(url, tmp_path / f"again{i}.log") for i in range(2)]
        coordinator = start_coordinator(path, tmp_path / "again.log")
        again += [*workers, coordinator]
        finish(path, url, coordinator, workers, marker, reference)


# --- the coordinator killed; a worker frozen; the workers' connections cut --------------------------


@SLOW_IN_CI
def test_a_coordinator_killed_mid_tournament_and_started_again_follows_it_to_the_end(
        cluster: PrivateCluster, reference: Outcome, tmp_path: Path) -> None:  # noqa: F811
    marker = new_marker()
    url = cluster.url
    path = queued(tmp_path, marker, url)
    with processes() as everyone:
        workers = [start_worker(url, tmp_path / f"worker{i}.log") for i in range(2)]
        killed = start_coordinator(path, tmp_path / "killed.log")
        everyone += [*workers, killed]
        mid_tournament(url, everyone)
        kill_group(killed.proc)
        coordinator = start_coordinator(path, tmp_path / "coordinator.log")
        everyone.append(coordinator)
        finish(path, url, coordinator, workers, marker, reference)
    assert {attempt for _, attempt, _ in game_rows(url).values()} == {1}  # the workers never noticed


def test_a_worker_frozen_past_the_stall_threshold_has_its_game_replayed_and_wakes_quietly(
        cluster: PrivateCluster, reference: Outcome, tmp_path: Path) -> None:  # noqa: F811
    marker = new_marker()
    url = cluster.url
    path = queued(tmp_path, marker, url)
    stalled_after = float(WORKER_TIMING[WORKER_TIMING.index("--stalled-after") + 1])
    with processes() as everyone:
        # -v: its INFO lines are what this test reads
        frozen = Process(tmp_path / "frozen.log", "-v", "worker", "--db", url, *WORKER_TIMING)
        everyone.append(frozen)
        name = worker_name(frozen.proc)
        held = wait_for(lambda: {n for n, (s, _, who) in game_rows(url).items() if s == "running" and who == name},
                        lambda: f"the worker starting a game\n{logs_of(everyone)}")
        frozen.proc.send_signal(signal.SIGSTOP)
        other = start_worker(url, tmp_path / "other.log")
        coordinator = start_coordinator(path, tmp_path / "coordinator.log")
        everyone += [other, coordinator]
        # the other worker replays the frozen one's game (attempt 2) once its heartbeat is stale
        wait_for(lambda: all(game_rows(url)[n][1] == 2 and game_rows(url)[n][0] == "done" for n in held),
                 lambda: f"the held games {held} replayed\n{logs_of(everyone)}", timeout_s=stalled_after + 60)
        frozen.proc.send_signal(signal.SIGCONT)
        wait_for(lambda: "already ended by another worker" in frozen.text(),
                 lambda: f"the frozen worker dropping its job's end\n{logs_of(everyone)}", timeout_s=60)
        finish(path, url, coordinator, [frozen, other], marker, reference)
    rows = game_rows(url)
    assert {n for n, (_, attempt, _) in rows.items() if attempt != 1} == held, rows
    said = frozen.text()
    assert said.count("already ended by another worker") == len(held), said[-4000:]
    # the job's end is arena's one line of it, at INFO (procrastinate's own line of every job's end
    # quotes the task's result, "attempt 1 was no longer ours", at INFO too)
    assert "no longer ours; result dropped" not in said, said[-4000:]


def terminate_backends(url: str) -> int:
    """pg_terminate_backend on every other connection to the server; how many."""
    return len(query(url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"))


@SLOW_IN_CI
def test_the_workers_connections_cut_mid_tournament_lose_and_duplicate_nothing_and_no_worker_exits(
        cluster: PrivateCluster, reference: Outcome, tmp_path: Path) -> None:  # noqa: F811
    marker = new_marker()
    url = cluster.url
    path = queued(tmp_path, marker, url)
    with processes() as everyone:
        workers = [start_worker(url, tmp_path / f"worker{i}.log") for i in range(2)]
        coordinator = start_coordinator(path, tmp_path / "coordinator.log")
        everyone += [*workers, coordinator]
        cut = 0
        for _ in range(3):
            mid_tournament(url, everyone)
            cut += terminate_backends(cluster.libpq_url)
            time.sleep(0.7)
        assert cut > 0
        assert all(w.proc.poll() is None for w in workers), logs_of(everyone)  # no supervisor needed
        finish(path, url, coordinator, workers, marker, reference)


# --- a queued ladder ---------------------------------------------------------------------------------

LADDER_BOTS = [{"name": "greedy", "command": sample_bot_command("greedy_bot.py")},
               {"name": "random-a", "command": sample_bot_command("random_bot.py"), "env": {"CASINO_BOT_SEED": "11"}},
               {"name": "random-b", "command": sample_bot_command("random_bot.py"), "env": {"CASINO_BOT_SEED": "22"}}]
LADDER = {"name": "lad", "players": 2, "seed": 11, "ladder": {"interval": "1s", "pairings_per_bot": 1}}


def ladder_games(url: str) -> tuple[list[tuple[object, ...]], list[object]]:
    """Every game of the ladder (number, round, seats, deck, status, result) and its rating history."""
    store = Store(url)
    try:
        tid = store.tournament_id("lad")
        assert tid is not None
        games = [(g.number, g.round, g.seat_bots, g.deck_seed, g.status, g.result) for g in store.games(tid)]
        return games, store.rating_history(tid)
    finally:
        store.close()


@SLOW_IN_CI
def test_a_queued_ladder_rides_out_a_database_stopped_mid_round(cluster: PrivateCluster, tmp_path: Path) -> None:
    marker = new_marker()
    (tmp_path / "local").mkdir()
    (tmp_path / "queued").mkdir()
    local = write_tournament(tmp_path / "local" / "lad.toml", {
        **LADDER, "concurrency": 1, "database": f"sqlite:///{tmp_path / 'local.db'}"}, LADDER_BOTS, RUNS_TIME, marker)
    done = run_arena("serve", str(local), "--rounds", "2", timeout=FOLLOW_TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    url = cluster.url
    path = write_tournament(tmp_path / "queued" / "lad.toml", {**LADDER, "database": url}, LADDER_BOTS, RUNS_TIME,
                            marker)
    Store(url).close()  # the arena's tables first: a worker refuses a database without them
    with processes() as everyone:
        workers = [start_worker(url, tmp_path / f"worker{i}.log") for i in range(2)]
        server = Process(tmp_path / "serve.log", "serve", str(path), "--rounds", "2", "--queue")
        everyone += [*workers, server]
        wait_for(lambda: counts(url).get("done", 0) >= 1, lambda: f"a game stored\n{logs_of(everyone)}", poll_s=0.05)
        cluster.stop()
        time.sleep(6)
        cluster.start()
        assert server.wait(timeout=FOLLOW_TIMEOUT_S) == 0, logs_of(everyone)
        assert [w.stop() for w in workers] == [0, 0], logs_of(everyone)
    assert wait_no_marked_processes(marker) == [], "bot processes left running"
    assert_no_traceback(everyone)
    assert outage_lines(server) == (1, 1), server.text()
    assert "round 2:" in server.text(), server.text()
    assert ladder_games(url) == ladder_games(f"sqlite:///{tmp_path / 'local.db'}")
