"""Scale-out under failure (docs/scale-out.md): workers killed with kill -9 at random moments, a
coordinator killed while it queues, the database's connections cut under running workers, workers
of another version, SIGTERM with a long and a short grace, the referee's own failures and bots'
failures. Real worker processes, real bots, a real PostgreSQL database per test; in every case
each game is stored exactly once, and where the tournament is the shared one (runs_support) its
results, rating history and standings are the single-process run's."""

from __future__ import annotations

import asyncio
import logging
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import procrastinate
import psycopg
import pytest
from procrastinate import exceptions as queue_errors
from procrastinate import jobs

from arena.config import load_config
from arena.play.job_status import WRITE_WAITS_S, SteadyJobManager
from arena.play.queue import PLAY_TASK
from arena.play.runner import MAX_ATTEMPTS, open_tournament
from arena.store.store import Store
from tests.arena.queue_support import (
    FOLLOW_TIMEOUT_S,
    WORKER_TIMING,
    descendants,
    game_rows,
    kill_group,
    libpq,
    log_text,
    play_jobs,
    query,
    run_queued,
    start_worker,
    still_alive,
    stop,
    wait_for,
    worker_name,
    workers,
)
from tests.arena.runs_support import (  # noqa: F401 - reference is a fixture
    SCHEDULE,
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
from tests.conftest import PG_ADMIN_URL, python_bot_command

DEFAULT_TRIALS = 3  # kill -9 trials in the default run (each a seeded kill point); the slow tier adds SLOW_TRIALS more
SLOW_TRIALS = 22
GONE_S = 10.0  # a killed worker's bots die with it (PR_SET_PDEATHSIG): this is only a bound


def assert_same_as(reference: Outcome, url: str) -> None:  # noqa: F811 - reference is the fixture's value
    outcome = outcome_of(url)
    assert_complete(outcome)
    assert outcome.games == reference.games
    assert outcome.history == reference.history
    assert outcome.standings == reference.standings


def queued_tournament(path: Path) -> Path:
    """``path`` scheduled and queued (`arena run --queue --detach`), for workers to play."""
    queued = run_queued(path, "--detach")
    assert queued.returncode == 0, queued.stderr
    return path


def settle(url: str, logs: Path) -> dict[int, tuple[str, int, str | None]]:
    """Wait until no game is pending or running (bounded); the games."""
    return wait_for(lambda: (rows := game_rows(url)) and all(s in ("done", "failed") for s, _, _ in rows.values())
                    and rows, lambda: f"every game settled\n{log_text(logs)}", poll_s=0.2)


# --- 1. kill -9 of a worker mid-game --------------------------------------------------------------


def _kill_a_worker_mid_game(trial: int, reference: Outcome, pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    rng = random.Random(7000 + trial)
    marker = new_marker()
    path = queued_tournament(tournament_file(tmp_path, marker, concurrency=1, database=pg_url))
    logs = tmp_path / "logs"
    logs.mkdir()
    victim = start_worker(pg_url, logs / "victim.log")
    others = [start_worker(pg_url, logs / "other.log")]
    try:
        name = worker_name(victim)

        def victims_games() -> set[int]:
            return {n for n, (status, _, who) in game_rows(pg_url).items() if status == "running" and who == name}

        wait_for(victims_games, lambda: f"worker {name} starting a game\n{log_text(logs)}")
        time.sleep(rng.uniform(0, 2.5))  # a random moment of its games: start-up, mid-game, between games
        wait_for(victims_games, lambda: f"worker {name} playing a game again\n{log_text(logs)}")
        bots = descendants(victim.pid)
        kill_group(victim)
        lost = victims_games()  # frozen from now on: the games the dead worker held
        others.append(start_worker(pg_url, logs / "replacement.log"))  # as a supervisor would
        # (no bots at all when it died between claiming a game and starting its first bot)
        wait_for(lambda: not still_alive(bots), f"the killed worker's bots exiting: {bots}", timeout_s=GONE_S)
        settle(pg_url, logs)
        followed = run_queued(path)
        assert followed.returncode == 0, f"{followed.stdout}\n{followed.stderr}\n{log_text(logs)}"
        assert others[0].poll() is None, f"the other worker stopped\n{log_text(logs)}"
    finally:
        stop(others)
        if victim.poll() is None:
            kill_group(victim)
    assert wait_no_marked_processes(marker) == [], "bot processes left running after the workers stopped"
    rows = game_rows(pg_url)
    replayed = {n for n, (_, attempt, _) in rows.items() if attempt != 1}
    assert replayed == lost, f"replayed {sorted(replayed)}, the killed worker held {sorted(lost)}"
    assert all(rows[n][1] == 2 and rows[n][2] != name for n in lost), rows
    assert play_jobs(pg_url) == [], "jobs left in the queue"
    assert_same_as(reference, pg_url)




@pytest.mark.parametrize("trial", range(DEFAULT_TRIALS))
def test_a_worker_killed_mid_game_has_its_game_replayed_once_and_its_bots_gone(
        trial: int, reference: Outcome, pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    _kill_a_worker_mid_game(trial, reference, pg_url, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("trial", range(DEFAULT_TRIALS, DEFAULT_TRIALS + SLOW_TRIALS))
def test_a_worker_killed_mid_game_more_trials(trial: int, reference: Outcome, pg_url: str,  # noqa: F811
                                              tmp_path: Path) -> None:
    _kill_a_worker_mid_game(trial, reference, pg_url, tmp_path)


# --- 2. kill -9 of the coordinator while it queues ------------------------------------------------


def start_coordinator(path: Path, log: Path) -> subprocess.Popen[bytes]:
    """`arena run FILE --queue` following the run, in a session of its own."""
    with open(log, "ab") as out:
        return subprocess.Popen(arena_argv("run", str(path), "--queue"), cwd=ROOT, env=arena_env(), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def assert_one_job_per_pending_game(url: str) -> None:
    jobs = play_jobs(url)
    assert sorted(lock for _, lock, _ in jobs) == sorted(f"arena-game-{g}" for g, in query(
        url, "SELECT id FROM games WHERE status = 'pending'")), jobs
    assert {status for status, _, _ in jobs} <= {"todo"}, jobs


@pytest.mark.parametrize("trial", [0, *(pytest.param(t, marks=pytest.mark.slow) for t in range(1, 5))])
def test_a_coordinator_killed_while_it_queues_is_resumed_without_duplicates(
        trial: int, reference: Outcome, pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    rng = random.Random(8000 + trial)
    marker = new_marker()
    path = tournament_file(tmp_path, marker, concurrency=1, database=pg_url)
    logs = tmp_path / "logs"
    logs.mkdir()
    coordinator = start_coordinator(path, logs / "coordinator.log")
    time.sleep(rng.uniform(0, 3.0))  # from its start to well after it queued (it then follows)
    kill_group(coordinator)
    queued = run_queued(path, "--detach")
    assert queued.returncode == 0, f"{queued.stdout}\n{queued.stderr}\n{log_text(logs)}"
    assert_one_job_per_pending_game(url=pg_url)
    assert len(play_jobs(pg_url)) == len(SCHEDULE)
    again = run_queued(path, "--detach")
    assert again.returncode == 0 and "0 game(s) queued" in again.stdout, again.stdout + again.stderr
    assert len(play_jobs(pg_url)) == len(SCHEDULE)
    with workers(pg_url, logs, 2):
        followed = run_queued(path)
        assert followed.returncode == 0, f"{followed.stdout}\n{followed.stderr}\n{log_text(logs)}"
    assert wait_no_marked_processes(marker) == []
    assert {attempt for _, attempt, _ in game_rows(pg_url).values()} == {1}
    assert_same_as(reference, pg_url)


def test_games_scheduled_with_nothing_queued_are_queued_once_by_the_next_run(
        reference: Outcome, pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    # what a coordinator killed between scheduling and queueing would leave, were the two not one transaction
    marker = new_marker()
    path = tournament_file(tmp_path, marker, concurrency=1, database=pg_url)
    store = Store(pg_url)
    try:
        open_tournament(store, load_config(path))
    finally:
        store.close()
    assert play_jobs(pg_url) == []
    queued = run_queued(path, "--detach")
    assert queued.returncode == 0 and f"{len(SCHEDULE)} game(s) queued" in queued.stdout, queued.stdout
    assert_one_job_per_pending_game(pg_url)
    with workers(pg_url, tmp_path / "logs", 2):
        again = run_queued(path)  # queues nothing more, follows to the end
        assert again.returncode == 0, f"{again.stdout}\n{again.stderr}\n{log_text(tmp_path / 'logs')}"
    assert wait_no_marked_processes(marker) == []
    assert {attempt for _, attempt, _ in game_rows(pg_url).values()} == {1}
    assert_same_as(reference, pg_url)


# --- 3. the database's connections cut under running workers --------------------------------------


def terminate_backends(url: str) -> int:
    """pg_terminate_backend on every other connection to ``url``'s database; how many."""
    name = url.rsplit("/", 1)[1]
    return len(query(PG_ADMIN_URL, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     "WHERE datname = %s AND pid <> pg_backend_pid()", (name,)))


def test_connections_cut_under_running_workers_lose_and_duplicate_nothing(
        reference: Outcome, pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    rng = random.Random(9001)
    marker = new_marker()
    path = queued_tournament(tournament_file(tmp_path, marker, concurrency=1, database=pg_url))
    logs = tmp_path / "logs"
    logs.mkdir()
    procs = [start_worker(pg_url, logs / f"worker{i}.log") for i in range(2)]
    exits: list[int] = []

    def supervise() -> None:
        """Restart a worker that exited, as a supervisor (systemd, Kubernetes) would."""
        for i, proc in enumerate(procs):
            if proc.poll() is not None:
                exits.append(proc.returncode)
                procs[i] = start_worker(pg_url, logs / f"worker{i}.log")

    try:
        wait_for(lambda: any(s == "running" for s, _, _ in game_rows(pg_url).values()), "a game starting")
        cuts = 0
        for _ in range(4):
            time.sleep(rng.uniform(0.3, 1.5))
            cuts += terminate_backends(pg_url)
            supervise()
        assert cuts > 0
        rows = wait_for(lambda: (supervise(), settled_or_none(pg_url))[1], lambda: f"every game settled\n{log_text(logs)}",
                        poll_s=0.2)
        assert all(status == "done" for status, _, _ in rows.values()), rows
        followed = run_queued(path)
        assert followed.returncode == 0, f"{followed.stdout}\n{followed.stderr}\n{log_text(logs)}"
        # a job whose worker lost its connection mid-game stays "doing" until the stalled-jobs
        # check (every 5 s, after --stalled-after) runs it again and it finds its game stored: every
        # game settled does not yet mean an empty queue, so wait for that with the workers up
        wait_for(lambda: (supervise(), play_jobs(pg_url) == [])[1],
                 lambda: f"an empty queue\n{play_jobs(pg_url)}\n{log_text(logs)}", poll_s=0.2)
    finally:
        stop(procs)
    assert exits == [], f"a worker exited without being stopped (it rides cut connections out): {exits}"
    assert wait_no_marked_processes(marker) == []
    assert play_jobs(pg_url) == [], "jobs left in the queue"
    assert_same_as(reference, pg_url)


def cut_job_end_writes(url: str, count: int) -> None:
    """Make the first ``count`` deletions of a finished game job (procrastinate's ``finish_job``)
    end their own connection, as a database restart landing on that one query would: a trigger
    that calls pg_terminate_backend on its backend. A sequence counts them (nextval outlives the
    rolled-back transaction)."""
    query(url, "CREATE SEQUENCE arena_test_cuts")
    query(url, f"""CREATE FUNCTION arena_test_cut() RETURNS trigger LANGUAGE plpgsql AS $$
                  BEGIN
                      IF nextval('arena_test_cuts') <= {int(count)} THEN
                          PERFORM pg_terminate_backend(pg_backend_pid());
                      END IF;
                      RETURN OLD;
                  END $$""")
    query(url, "CREATE TRIGGER arena_test_cut BEFORE DELETE ON procrastinate_jobs FOR EACH ROW "
               f"WHEN (OLD.task_name = '{PLAY_TASK}') EXECUTE FUNCTION arena_test_cut()")


def cuts_made(url: str) -> int:
    ((value, called),) = query(url, "SELECT last_value, is_called FROM arena_test_cuts")
    return value if called else 0


def test_a_job_end_write_whose_connection_is_cut_is_written_again(
        reference: Outcome, pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    # without it the job stayed "doing" under a worker that still beat: never retried, the queue never empty
    marker = new_marker()
    path = queued_tournament(tournament_file(tmp_path, marker, concurrency=1, database=pg_url))
    cut_job_end_writes(pg_url, 1)
    logs = tmp_path / "logs"
    with workers(pg_url, logs, 1) as procs:
        followed = run_queued(path)
        assert followed.returncode == 0, f"{followed.stdout}\n{followed.stderr}\n{log_text(logs)}"
        wait_for(lambda: play_jobs(pg_url) == [], lambda: f"an empty queue\n{play_jobs(pg_url)}\n{log_text(logs)}", poll_s=0.2)
        assert procs[0].poll() is None, log_text(logs)  # one lost write is no reason to stop
    assert cuts_made(pg_url) >= 1
    text = (logs / "worker0.log").read_text(errors="replace")
    assert "could not be written" in text and "was written after a lost connection" in text, text[-3000:]
    assert wait_no_marked_processes(marker) == []
    assert_same_as(reference, pg_url)


def test_a_job_end_whose_answer_was_lost_after_it_landed_is_taken_as_written(
        pg_url: str, caplog: pytest.LogCaptureFixture) -> None:
    # the database applied the write but its answer never came back: the next try finds the job
    # gone (no longer this worker's), which after a lost answer means the first try landed
    Store(pg_url).close()  # the arena's schema, procrastinate's included
    lied: list[str] = []
    lost: list[int] = []

    class AnswerLosingConnector(procrastinate.PsycopgConnector):
        """Runs each query, then loses the answer of the first job-end write (the network's fault)."""
        async def execute_query_all_async(self, query: Any, **arguments: Any) -> list[dict[str, Any]]:
            rows = await super().execute_query_all_async(query, **arguments)
            if "finish_job" in query and not lied:
                lied.append(query)
                raise queue_errors.ConnectorException() from psycopg.OperationalError("server closed the connection")
            return rows

    async def scenario() -> int:
        connector = AnswerLosingConnector(conninfo=libpq(pg_url))
        app = procrastinate.App(connector=connector)
        app.job_manager = SteadyJobManager(connector, lambda job_id, _error: lost.append(job_id))
        app.task(name="arena.test_task", queue="arena-test")(lambda: None)
        async with app.open_async():
            job_id = await app.configure_task("arena.test_task", queue="arena-test").defer_async()
            worker_id = await app.job_manager.register_worker()
            job = await app.job_manager.fetch_job(queues=["arena-test"], worker_id=worker_id)
            assert job is not None and job.id == job_id
            await app.job_manager.finish_job(job, jobs.Status.SUCCEEDED, delete_job=True)
            return job_id

    with caplog.at_level(logging.INFO, logger="arena.play.job_status"):
        job_id = asyncio.run(scenario())
    assert len(lied) == 1 and lost == []
    assert query(pg_url, "SELECT id FROM procrastinate_jobs WHERE id = %s", (job_id,)) == []
    assert "had landed before its connection broke" in caplog.text, caplog.text


def test_a_late_workers_job_end_leaves_the_job_another_worker_took_alone(
        pg_url: str, caplog: pytest.LogCaptureFixture) -> None:
    # worker A is frozen past the stall threshold; the stalled-jobs check puts its job back and
    # worker B fetches it. A's late end (a retry, then a finish) must neither queue B's job again
    # nor delete it under B; once B has ended it, A's end is dropped too. One INFO line each, no raise.
    Store(pg_url).close()  # the arena's schema, procrastinate's included
    lost: list[int] = []

    async def scenario() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        connector = procrastinate.PsycopgConnector(conninfo=libpq(pg_url))
        app = procrastinate.App(connector=connector)
        app.job_manager = SteadyJobManager(connector, lambda job_id, _error: lost.append(job_id))
        app.task(name="arena.test_task", queue="arena-test")(lambda: None)
        async with app.open_async():
            job_id = await app.configure_task("arena.test_task", queue="arena-test").defer_async()
            a, b = await app.job_manager.register_worker(), await app.job_manager.register_worker()
            late = await app.job_manager.fetch_job(queues=["arena-test"], worker_id=a)
            assert late is not None and late.id == job_id and late.worker_id == a
            [stalled] = await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=0)  # as if A stopped beating
            await app.job_manager.retry_job(stalled)  # the stalled-jobs check: its end is the check's to write
            taken = await app.job_manager.fetch_job(queues=["arena-test"], worker_id=b)
            assert taken is not None and taken.id == job_id
            await app.job_manager.retry_job(late)
            await app.job_manager.finish_job(late, jobs.Status.FAILED, delete_job=False)
            under_b = query(pg_url, "SELECT status, worker_id FROM procrastinate_jobs WHERE id = %s", (job_id,))
            await app.job_manager.finish_job(taken, jobs.Status.SUCCEEDED, delete_job=True)
            await app.job_manager.retry_job(late)
            return under_b, query(pg_url, "SELECT id FROM procrastinate_jobs WHERE id = %s", (job_id,))

    with caplog.at_level(logging.INFO, logger="arena.play.job_status"):
        under_b, after = asyncio.run(scenario())
    assert under_b == [("doing", under_b[0][1])] and under_b[0][1] is not None, under_b
    assert after == [] and lost == []
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 3 and all(r.levelno == logging.INFO for r in caplog.records), said
    assert "taken over by another worker" in said[0] and "its retry is dropped" in said[0], said
    assert "taken over by another worker" in said[1] and "its finish is dropped" in said[1], said
    assert "already ended by another worker" in said[2] and "its retry is dropped" in said[2], said


def test_a_worker_that_cannot_write_a_job_end_starts_again_and_the_job_is_retried(
        reference: Outcome, pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    marker = new_marker()
    path = queued_tournament(tournament_file(tmp_path, marker, concurrency=1, database=pg_url))
    tries = len(WRITE_WAITS_S) + 1
    cut_job_end_writes(pg_url, tries)  # every try of the first game's end write
    logs = tmp_path / "logs"
    with workers(pg_url, logs, 1) as procs:
        # procrastinate's worker stops and a new one starts in the same process: the old one's jobs
        # lose their worker, and the stalled-jobs check retries the job, which finds its game stored
        followed = run_queued(path)
        assert followed.returncode == 0, f"{followed.stdout}\n{followed.stderr}\n{log_text(logs)}"
        wait_for(lambda: play_jobs(pg_url) == [], lambda: f"an empty queue\n{play_jobs(pg_url)}\n{log_text(logs)}", poll_s=0.2)
        assert procs[0].poll() is None, log_text(logs)  # no supervisor needed
    said = (logs / "worker0.log").read_text(errors="replace")
    assert "its end could not be written to the queue" in said and "taking jobs again" in said, said[-3000:]
    assert cuts_made(pg_url) >= tries  # (the sequence counts every later game's end write too)
    assert wait_no_marked_processes(marker) == []
    assert_same_as(reference, pg_url)


def test_a_worker_whose_database_is_gone_past_the_outage_window_exits_2_with_one_line(
        pg_url: str, tmp_path: Path) -> None:
    marker = new_marker()
    path = queued_tournament(tournament_file(tmp_path, marker, concurrency=1, database=pg_url))
    worker = subprocess.Popen(arena_argv("worker", "--db", pg_url, *WORKER_TIMING, "--db-outage", "3"), cwd=ROOT,
                              env=arena_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True)
    name = pg_url.rsplit("/", 1)[1]
    try:
        wait_for(lambda: any(s == "running" for s, _, _ in game_rows(pg_url).values()), "a game starting")
        query(PG_ADMIN_URL, f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        terminate_backends(pg_url)
        _, err = worker.communicate(timeout=180)
    finally:
        if worker.poll() is None:
            kill_group(worker)
        query(PG_ADMIN_URL, f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    assert worker.returncode == 2, err
    went, stopped = err.splitlines()  # one line when it went, one when the window was over
    assert went.startswith("arena: database unreachable (") and "retrying for up to 3 s" in went, err
    assert stopped.startswith("arena: error: ") and "unreachable for" in stopped and name in stopped, err
    assert wait_no_marked_processes(marker) == []
    # nothing lost: the game it held is this job's still (or back to pending), and a new worker plays everything
    with workers(pg_url, tmp_path / "logs", 1):
        followed = run_queued(path)
        assert followed.returncode == 0, f"{followed.stdout}\n{followed.stderr}\n{log_text(tmp_path / 'logs')}"
    assert {s for s, _, _ in game_rows(pg_url).values()} == {"done"}
    assert play_jobs(pg_url) == []


def settled_or_none(url: str) -> dict[int, tuple[str, int, str | None]] | None:
    rows = game_rows(url)
    return rows if rows and all(s in ("done", "failed") for s, _, _ in rows.values()) else None


# --- 4. workers of another version ----------------------------------------------------------------


def test_a_worker_of_another_protocol_version_takes_nothing_and_says_so_in_one_line(
        pg_url: str, tmp_path: Path) -> None:
    marker = new_marker()
    queued_tournament(tournament_file(tmp_path, marker, concurrency=1, database=pg_url))
    code = ("import sys; import arena.play.queue as q; q.PROTOCOL_VERSION = 99; from arena.cli.main import main; "
            "sys.exit(main(sys.argv[1:]))")
    log = tmp_path / "other.log"
    with open(log, "wb") as out:
        other = subprocess.Popen([sys.executable, "-c", code, "worker", "--db", pg_url, *WORKER_TIMING], cwd=ROOT,
                                 env=arena_env(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        said = wait_for(lambda: log.read_text(errors="replace") or None, "the other version's worker saying why")
        # registered, then beating for a while: it has been looking for its own version's jobs
        (first,), = wait_for(lambda: query(pg_url, "SELECT min(last_heartbeat) FROM procrastinate_workers "
                                                   "HAVING count(*) > 0"), "the worker registering")
        wait_for(lambda: query(pg_url, "SELECT 1 FROM procrastinate_workers WHERE last_heartbeat > "
                                       "%s + interval '2 seconds'", (first,)), "the worker running a while")
        assert other.poll() is None
        said = log.read_text(errors="replace")
    finally:
        stop([other])
    assert said.count("\n") == 1, said
    assert f"{len(SCHEDULE)} queued game(s) are for version" in said and "protocol1" in said, said
    assert "protocol99" in said and "not taking them" in said, said
    assert {s for s, _, _ in game_rows(pg_url).values()} == {"pending"}
    assert len(play_jobs(pg_url)) == len(SCHEDULE) and all(s == "todo" for s, _, _ in play_jobs(pg_url))
    assert wait_no_marked_processes(marker) == []


@pytest.mark.parametrize(("revision", "advice"), [("9999", "upgrade this worker"),
                                                  # unknown to this version though it sorts before its head
                                                  ("0005b_hotfix", "upgrade this worker"),
                                                  ("0002", "upgrade the database first")])
def test_a_worker_refuses_a_database_of_another_schema_revision_in_one_line(
        revision: str, advice: str, pg_url: str, tmp_path: Path) -> None:
    path = tournament_file(tmp_path, new_marker(), concurrency=1, database=pg_url)
    queued_tournament(path)
    query(pg_url, "UPDATE alembic_version SET version_num = %s", (revision,))
    done = run_arena("worker", "--db", pg_url, *WORKER_TIMING, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and f"schema revision {revision}" in done.stderr, done.stderr
    assert advice in done.stderr, done.stderr
    assert {s for s, _, _ in game_rows(pg_url).values()} == {"pending"}
    assert len(play_jobs(pg_url)) == len(SCHEDULE)


# --- 5. SIGTERM mid-game ---------------------------------------------------------------------------

SLOW_MOVE_MS = 150  # the slow bot's wait on each move: a game lasts seconds, far within its move time


def slow_tournament(folder: Path, marker: str, url: str) -> Path:
    """One game between a bot that sleeps on each move and the greedy sample bot."""
    bots = [{"name": "slow", "command": python_bot_command("sleep", after=1) + f" --ms {SLOW_MOVE_MS}"},
            {"name": "greedy", "command": sample_bot_command("greedy_bot.py")}]
    top = {"name": "slow", "players": 2, "games_per_pairing": 1, "duplicate": False, "seed": 3, "database": url}
    return write_tournament(folder / "slow.toml", top, bots, {"move_ms": 5000, "startup_ms": 20000}, marker)


@pytest.mark.parametrize("grace", ["long", "short"])
def test_sigterm_mid_game_finishes_it_within_the_grace_or_requeues_it(
        grace: str, pg_url: str, tmp_path: Path) -> None:
    marker = new_marker()
    path = slow_tournament(tmp_path, marker, pg_url)
    queued_tournament(path)
    logs = tmp_path / "logs"
    logs.mkdir()
    timing = ["--grace", "60", "--stalled-after", "90"] if grace == "long" else ["--grace", "0.2"]
    first = start_worker(pg_url, logs / "first.log", extra=timing)
    others: list[subprocess.Popen[bytes]] = []
    try:
        wait_for(lambda: query(pg_url, "SELECT 1 FROM games WHERE status = 'running'"), "the game starting")
        wait_for(lambda: len(descendants(first.pid)) >= 2, "its bots starting")  # and so, soon, playing
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=120) == 0, log_text(logs)
        (status, attempt, who), = game_rows(pg_url).values()
        if grace == "long":
            assert (status, attempt, who) == ("done", 1, worker_name(first)), log_text(logs)
            assert play_jobs(pg_url) == []
        else:
            assert (status, attempt) == ("pending", 1), log_text(logs)
            assert [status for status, _, _ in play_jobs(pg_url)] == ["todo"], play_jobs(pg_url)
            others.append(start_worker(pg_url, logs / "second.log"))
            rows = settle(pg_url, logs)
            assert list(rows.values()) == [("done", 2, worker_name(others[0]))], log_text(logs)
            followed = run_queued(path)
            assert followed.returncode == 0, followed.stdout + followed.stderr
            assert play_jobs(pg_url) == []
    finally:
        stop([first, *others])
    assert wait_no_marked_processes(marker) == []
    result = query(pg_url, "SELECT result FROM games")[0][0]
    assert result is not None and result["failures"] == [], result


# --- 6. the referee's own failures -----------------------------------------------------------------


def test_an_infrastructure_error_is_retried_then_the_game_is_failed_with_the_reason(
        pg_url: str, tmp_path: Path) -> None:
    # The worker cannot make its bot log folder for the tournament (a file is in the way): not a
    # bot's fault, an infrastructure error on every attempt.
    marker = new_marker()
    bots = [{"name": "greedy", "command": sample_bot_command("greedy_bot.py")},
            {"name": "random", "command": sample_bot_command("random_bot.py")}]
    top = {"name": "broken", "players": 2, "games_per_pairing": 1, "duplicate": False, "seed": 3, "database": pg_url}
    path = write_tournament(tmp_path / "broken.toml", top, bots, None, marker)
    queued_tournament(path)
    logs = tmp_path / "logs"
    logs.mkdir()
    (tid,), = query(pg_url, "SELECT id FROM tournaments")
    (logs / f"tournament-{tid}").write_text("not a folder\n")
    worker = start_worker(pg_url, tmp_path / "worker.log", extra=["--logs", str(logs)])
    try:
        followed = run_queued(path)
    finally:
        stop([worker])
    worker_log = (tmp_path / "worker.log").read_text(errors="replace")
    assert followed.returncode == 0, f"{followed.stdout}\n{followed.stderr}\n{worker_log}"
    (status, attempt, _), = game_rows(pg_url).values()
    assert (status, attempt) == ("failed", MAX_ATTEMPTS), worker_log
    (error,), = query(pg_url, "SELECT error FROM games")[0:1]
    assert "FileExistsError" in error and f"tournament-{tid}" in error, error
    assert play_jobs(pg_url) == [], "the job is finished once the game is failed"
    failed = run_arena("games", str(path), "--failed")
    assert failed.returncode == 0 and "failed" in failed.stdout and "FileExistsError" in failed.stdout, failed.stdout
    status_out = run_arena("status", str(path))
    assert status_out.returncode == 0 and "0/1 games done" in status_out.stdout and "1 failed" in status_out.stdout, \
        status_out.stdout
    assert wait_no_marked_processes(marker) == []


# --- 7. bots' failures -------------------------------------------------------------------------------


def test_a_bot_that_crashes_or_hangs_in_a_queued_game_is_a_result_not_a_job_failure(
        pg_url: str, tmp_path: Path) -> None:
    marker = new_marker()
    bots = [{"name": "greedy", "command": sample_bot_command("greedy_bot.py")},
            {"name": "crasher", "command": python_bot_command("crash", after=2)},
            {"name": "hanger", "command": python_bot_command("hang", after=2)}]
    top = {"name": "bad", "players": 2, "games_per_pairing": 1, "duplicate": False, "seed": 3, "database": pg_url}
    path = write_tournament(tmp_path / "bad.toml", top, bots, {"move_ms": 1000, "startup_ms": 20000}, marker)
    queued_tournament(path)
    with workers(pg_url, tmp_path / "logs", 2):
        followed = run_queued(path)
        assert followed.returncode == 0, f"{followed.stdout}\n{followed.stderr}\n{log_text(tmp_path / 'logs')}"
    assert wait_no_marked_processes(marker) == []
    rows = query(pg_url, "SELECT number, status, attempt, result FROM games ORDER BY number")
    assert len(rows) == 3
    for number, status, attempt, result in rows:
        assert (status, attempt) == ("done", 1), (number, status, attempt)
        kinds = {f["kind"] for f in result["failures"]}
        assert kinds and all(f["forfeit"] for f in result["failures"]), (number, result)
    assert play_jobs(pg_url) == [], "every job succeeded (and was deleted)"


def test_a_stalled_job_whose_queueing_lock_a_waiting_duplicate_holds_is_retried_and_so_are_the_others(
        pg_url: str) -> None:
    """A worker gone mid rating pass leaves its job "doing"; a game stored meanwhile queued the next
    pass under the same queueing lock (and lock). Retrying the stalled one used to raise a duplicate
    key, which ended the whole check: the stalled game jobs after it were never retried and the
    waiting pass never ran (its lock held by the stalled one). Seen as a hang after an outage."""
    from arena.play.queue import RATE_TASK, queue_name, rate_lock
    from arena.play.worker import QueueWorker, WorkerSettings, retry_stalled

    Store(pg_url).close()  # the arena's tables and the queue's
    queue = queue_name()
    lock = rate_lock(1)
    rows = query(libpq(pg_url), (
        "INSERT INTO procrastinate_jobs (queue_name, task_name, lock, queueing_lock, args, status) VALUES "
        f"('{queue}', '{RATE_TASK}', '{lock}', NULL, '{{}}', 'doing'), "
        f"('{queue}', '{RATE_TASK}', '{lock}', '{lock}', '{{}}', 'todo'), "
        f"('{queue}', '{PLAY_TASK}', 'g', 'arena-game-1', '{{}}', 'doing') RETURNING id"))
    stalled_rate, waiting, stalled_game = (row[0] for row in rows)
    query(libpq(pg_url), f"UPDATE procrastinate_jobs SET queueing_lock = '{lock}' WHERE id = {stalled_rate}")

    async def check() -> None:
        worker = QueueWorker(WorkerSettings(database=pg_url))
        async with worker.app.open_async():
            stalled = list(await worker.app.job_manager.get_stalled_jobs(seconds_since_heartbeat=1))
            assert {job.id for job in stalled} == {stalled_rate, stalled_game}
            for job in stalled:
                await retry_stalled(worker.app, job)

    asyncio.run(check())
    states = dict(query(libpq(pg_url), "SELECT id, status FROM procrastinate_jobs"))
    assert states == {stalled_rate: "todo", stalled_game: "todo"}, (states, waiting)
