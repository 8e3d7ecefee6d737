"""``arena worker``: plays queued games of any tournament in one PostgreSQL database (queue.py,
docs/scale-out.md). Run as many as you like, on as many machines.

A job's game is claimed through its status and attempt (``Store.claim_game``), played through the
referee library with the bots in the sandbox the job names, and stored once: result, record and
the next rating pass in one transaction, only if this attempt still owns the game. A bot's failure
is a game result; only the referee's own failures raise, and the job is retried until the game's
attempts run out (then the game is failed with the reason). On SIGTERM or SIGINT running games get
``grace_s`` to finish; then they are aborted, put back to pending and queued again. A job its run
withdraws (procrastinate's abort: ``arena compare --queue`` past its verdict deletes the game's row
and aborts the job) stops its game at once and is not retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import procrastinate
import procrastinate.worker
import psycopg
from procrastinate import exceptions as queue_errors
from procrastinate.job_context import AbortReason
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import InterfaceError, OperationalError, SQLAlchemyError

from referee.match.game import Observer
from referee.match.report import GameReport
from referee.match.spec import GameSetup
from referee.packages.load import Packages
from referee.sandbox import SandboxSettings

from ..errors import ArenaError, UsageError
from ..metrics import WORKER_JOBS
from ..store.store import StorageError, Store, describe_url, engine_url, first_line, known_revisions
from .archives import ArchiveCache
from .executor import InProcessExecutor, SeatBot
from .job_status import SteadyJobManager
from .live import LiveWriter
from .queue import (
    PLAY_TASK,
    QUEUE_PREFIX,
    RATE_TASK,
    STALLED_TASK,
    GameJob,
    compatibility,
    defer_rating,
    libpq_url,
    make_app,
    queue_name,
    require_postgresql,
    schema_head,
)
from .rate import apply_ratings
from .runner import MAX_ATTEMPTS, seat_bots
from .sandbox import arena_launcher, arena_packages

log = logging.getLogger(__name__)
HEARTBEAT_S = 10.0  # procrastinate's worker heartbeat
STALLED_AFTER_S = 30.0  # a worker silent this long is dead: its jobs are retried
GRACE_S = 20.0  # on SIGTERM, how long running games may take to finish (less than STALLED_AFTER_S)
STALLED_CHECK_CRON = "* * * * * */5"  # the stalled-jobs check: every 5 seconds, on one worker
RETRY_WAIT_S = 2  # before a job that raised (the referee's own failure) runs again
POOL_TIMEOUT_S = 5.0  # the longest a queue call waits for a database connection
BOTS_IDLE_S = 300.0  # a tournament's bot processes are stopped after this long without a game of it
IDLE_CHECK_S = 10.0  # the longest between two looks for such bots


class GameInfrastructureError(ArenaError):
    """The referee could not play a game (not a bot's fault): the job raises it to be retried
    (it reaches procrastinate, never a command; an arena error like every other)."""

    exit_status = 1


class DatabaseLostError(StorageError):
    """The worker lost its database (procrastinate stopped on its own): exit 1, so a supervisor
    restarts it, rather than 0 as after a stop that was asked for, or 2 as for a bad setting."""

    exit_status = 1


# A store call that failed for these ran into the database, not into the game: the job runs again
# (the game is either stored or still this job's, the attempt guard decides) however often it happens.
DATABASE_ERRORS = (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError,
                   queue_errors.ConnectorException)


class WithdrawnWithoutTraceback(logging.Filter):
    """procrastinate logs a job's end at INFO with its exception's traceback, also for a game its
    run withdrew (``JobAborted``, expected: a comparison past its verdict); that line keeps its
    text ("ended with status: Aborted") and loses the traceback, which said nothing more."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], queue_errors.JobAborted):
            record.exc_info, record.exc_text = None, None
        return True


WITHDRAWN_FILTER = WithdrawnWithoutTraceback()


class GameRetry(procrastinate.RetryStrategy):
    """The play task's retries. A job aborted by its worker's shutdown runs again at once (the job
    itself, not a new one: a second job of the game would hold its queueing lock, and the aborted
    one could not be put back); the referee's failure (GameInfrastructureError) and a lost database
    connection after a wait, without a limit of their own (the game's attempt count ends the first,
    and a game cannot be marked failed without its database); any other error up to
    ``max_attempts`` runs."""

    def get_retry_decision(self, *, exception: BaseException,
                           job: procrastinate.jobs.Job) -> procrastinate.RetryDecision | None:
        if isinstance(exception, asyncio.CancelledError):
            return procrastinate.RetryDecision(retry_in={"seconds": 0})
        if isinstance(exception, (GameInfrastructureError, *DATABASE_ERRORS)):
            return procrastinate.RetryDecision(retry_in={"seconds": self.wait})
        return super().get_retry_decision(exception=exception, job=job)


@dataclass(frozen=True)
class WorkerSettings:
    """How one ``arena worker`` process runs (its command line)."""

    database: str
    concurrency: int = 1
    logs_dir: Path | None = None  # bot logs: <logs_dir>/<tournament id>/; default a folder under /tmp
    heartbeat_s: float = HEARTBEAT_S
    stalled_after_s: float = STALLED_AFTER_S
    grace_s: float = GRACE_S
    name: str = ""  # host:pid by default
    bots_idle_s: float = BOTS_IDLE_S

    def problems(self) -> list[str]:
        """One line per bad setting."""
        errors = []
        if self.concurrency < 1:
            errors.append(f"--concurrency must be at least 1, not {self.concurrency}")
        if not 0 < self.heartbeat_s < self.stalled_after_s:
            errors.append(f"--heartbeat ({self.heartbeat_s:g} s) must be above 0 and below --stalled-after "
                          f"({self.stalled_after_s:g} s): a live worker must never look stalled")
        if not 0 <= self.grace_s < self.stalled_after_s:
            errors.append(f"--grace ({self.grace_s:g} s) must be at least 0 and below --stalled-after "
                          f"({self.stalled_after_s:g} s): a stopping worker sends no heartbeat")
        if not self.bots_idle_s > 0:
            errors.append(f"--bots-idle must be above 0 s, not {self.bots_idle_s:g}")
        return errors


def game_time_bound_s(setup: GameSetup) -> float:
    """A bound on one game's wall time from its time control (a game that takes longer is hung:
    the referee's fault). Every seat's start-up, then every play at its full move time, grace and
    bank, with room to spare: it only has to be finite."""
    tc, options = setup.time_control, setup.options
    plays = options.max_deals * 52  # at most a whole deck per deal
    per_play_ms = tc.move_time_ms + tc.grace_ms + tc.bank_increment_ms + 1000  # + 1 s of transport
    seats = options.players
    return 60.0 + (seats * (tc.startup_time_ms + tc.bank_initial_ms) + plays * per_play_ms) / 1000


def check_schema(url: str) -> None:
    """UsageError (one line) unless the database's schema is exactly this worker's: a worker never
    migrates a database under a running coordinator, nor plays one it does not understand."""
    engine = create_engine(engine_url(make_url(url)))
    try:
        with engine.connect() as conn:
            from alembic.migration import MigrationContext

            current = MigrationContext.configure(conn).get_current_revision()
    except SQLAlchemyError as exc:
        raise StorageError(f"cannot use database {describe_url(url)}: {first_line(exc)}") from None
    finally:
        engine.dispose()
    head = schema_head()
    if current is None:
        raise UsageError(f"database {describe_url(url)} has no arena tables: start a tournament there first "
                         "(arena run FILE --queue)")
    if current != head:
        newer = current not in known_revisions()  # a revision this version's migrations do not know is a later one
        raise UsageError(
            f"database {describe_url(url)} has schema revision {current}, this worker's is {head}: "
            + ("upgrade this worker to the coordinator's version" if newer
               else "upgrade the database first (arena run FILE --queue with this version does it)"))


@contextlib.contextmanager
def counted_job(task: str) -> Iterator[None]:
    """One job of ``task`` in ``arena_worker_jobs_total``: ok, retry (the referee's failure, run
    again), interrupted (the worker's shutdown) or error."""
    outcome = "error"
    try:
        yield
        outcome = "ok"
    except GameInfrastructureError:
        outcome = "retry"
        raise
    except asyncio.CancelledError:
        outcome = "interrupted"
        raise
    finally:
        WORKER_JOBS.labels(task, outcome).inc()


class QueueWorker:
    """One ``arena worker`` process: procrastinate's worker running the arena's tasks."""

    def __init__(self, settings: WorkerSettings) -> None:
        self.settings = settings
        self.name = settings.name or f"{socket.gethostname()}:{os.getpid()}"
        self.store: Store | None = None
        self.live: LiveWriter | None = None  # while run() runs: the running games' plays, for the web
        self._logs_root = settings.logs_dir
        self._temp: tempfile.TemporaryDirectory[str] | None = None
        self._executors: dict[tuple[int, SandboxSettings], InProcessExecutor] = {}
        self._package_makers: dict[tuple[int, SandboxSettings, str], Packages] = {}
        self._in_use: dict[tuple[int, SandboxSettings], int] = {}  # games playing on each executor
        self._last_used: dict[tuple[int, SandboxSettings], float] = {}  # when its last game ended (monotonic)
        self._retiring: list[InProcessExecutor] = []  # idle ones being closed (the worker's stop finishes them)
        self._deferrer = make_app()  # defers on a store transaction's own connection
        self.archives = ArchiveCache()  # bot archives unpacked on this machine, each checked once
        # the pool's wait for a connection bounds each queue call while the database is gone (and
        # so how long a worker that lost it takes to stop): seconds, not psycopg_pool's 30
        # min_size 1: psycopg_pool keeps 4 idle connections by default, which with the listener's
        # and the store's made 6 a worker; max_size: its game jobs finishing at once, and a side task
        self.app = procrastinate.App(connector=procrastinate.PsycopgConnector(
            conninfo=libpq_url(settings.database), timeout=POOL_TIMEOUT_S, min_size=1,
            max_size=settings.concurrency + 2))
        # a job's end is written again when its connection breaks; a worker that still cannot stops
        self.app.job_manager = SteadyJobManager(self.app.connector, self._status_lost)
        self._worker: procrastinate.worker.Worker | None = None  # while run() runs
        self._lost_job: int | None = None  # a job whose end could not be written: the worker stops
        self._register_tasks()

    def _status_lost(self, job_id: int, error: BaseException) -> None:
        """A job's end could not be written after every try: stop taking jobs, so that the
        stalled-jobs check (of the worker that replaces this one) runs the job again."""
        # a warning: without -v the one line is the DatabaseLostError that run() raises on the way out
        log.warning("job %s: its end could not be written to the queue (%s); stopping this worker so that the job "
                    "is retried", job_id, first_line(error.__cause__ or error), extra={"job_id": job_id})
        self._lost_job = job_id
        if self._worker is not None:
            self._worker.stop()

    # --- the tasks ----------------------------------------------------------------------------

    def _register_tasks(self) -> None:
        app = self.app

        @app.task(name=PLAY_TASK, pass_context=True,
                  retry=GameRetry(max_attempts=MAX_ATTEMPTS, wait=RETRY_WAIT_S))
        async def play_game(context: procrastinate.JobContext, **args: Any) -> str:
            assert context.job.id is not None
            try:
                with counted_job(PLAY_TASK):
                    return await self.play(context.job.id, args)
            except asyncio.CancelledError:
                if context.abort_reason() is AbortReason.USER_REQUEST:
                    # withdrawn by the run that queued it (arena compare past its verdict deletes the
                    # game's row, then aborts the job): over, not to be retried as after a shutdown
                    raise queue_errors.JobAborted(f"job {context.job.id}: withdrawn by its run") from None
                raise

        @app.task(name=RATE_TASK)
        async def rate_tournament(tournament_id: int) -> None:
            assert self.store is not None
            with counted_job(RATE_TASK):
                await asyncio.to_thread(apply_ratings, self.store, tournament_id)

        @app.periodic(cron=STALLED_CHECK_CRON, periodic_id="stalled")
        @app.task(name=STALLED_TASK, queue=queue_name(), queueing_lock=STALLED_TASK, pass_context=True)
        async def retry_stalled_jobs(context: procrastinate.JobContext, timestamp: int) -> int:
            # procrastinate's documented recipe: jobs of workers whose heartbeat stopped run again
            stalled = list(await context.app.job_manager.get_stalled_jobs(
                seconds_since_heartbeat=self.settings.stalled_after_s))
            for job in stalled:
                log.warning("retrying job %s (%s): its worker stopped sending heartbeats", job.id, job.task_name,
                            extra={"job_id": job.id})
                await context.app.job_manager.retry_job(job)
            return len(stalled)

    async def play(self, job_id: int, args: dict[str, Any]) -> str:
        """Play the job's game unless it is settled or another job's; what happened, for the log."""
        assert self.store is not None
        store = self.store
        job = GameJob.from_args(args)
        task = await asyncio.to_thread(store.claim_game, job.game_id, job_id, self.name)
        if task is None:
            return f"game {job.number} of tournament {job.tournament_id}: nothing to play (settled or another job's)"
        try:
            # a bot's files come from this machine's archive cache (unpacked on first use): a
            # refused or missing archive is the referee's failure, retried and then recorded
            by_position = await asyncio.to_thread(seat_bots, store, job.tournament_id, False, self.archives,
                                                  self._packages(job))
            seats = [by_position[p] for p in task.seat_bots]
            observe = self.live.observer(task) if self.live is not None else None
            async with asyncio.timeout(game_time_bound_s(job.setup)):
                report = await self._play_on_executor(job, seats, observe)
        except asyncio.CancelledError:
            if self.live is not None:
                self.live.forget(task)
            # the worker is stopping and the grace is over: the game goes back to pending, and
            # procrastinate puts this job back in the queue (GameRetry) to play it again
            await asyncio.shield(asyncio.to_thread(store.fail, task, "interrupted by a worker's shutdown; to be "
                                                   "replayed", True))
            raise
        except Exception as exc:  # the referee's own failure, or a game past its time bound
            error = ("the game took longer than its time control allows (hung)" if isinstance(exc, TimeoutError)
                     else f"{type(exc).__name__}: {exc}")
            log.exception("game %d (attempt %d) could not be played", task.number, task.attempt,
                          extra=_log_fields(job_id, job, task.attempt, error))
            if self.live is not None:
                await self.live.done(task)
            final = task.attempt >= MAX_ATTEMPTS
            await asyncio.to_thread(store.fail, task, error, not final,
                                    (lambda conn: defer_rating(self._deferrer, conn, job.tournament_id)) if final
                                    else None)
            if final:
                return f"game {task.number}: failed after {task.attempt} attempts: {error}"
            raise GameInfrastructureError(error) from exc
        if self.live is not None:
            await self.live.done(task)  # no write of its row after the one that deletes it
        stored = await asyncio.to_thread(store.finish, task, report.result, report.record,
                                         lambda conn: defer_rating(self._deferrer, conn, job.tournament_id))
        if not stored:
            log.warning("game %d attempt %d was no longer ours; result dropped", task.number, task.attempt,
                        extra=_log_fields(job_id, job, task.attempt, "no longer ours"))
            return f"game {task.number}: attempt {task.attempt} was no longer ours"
        log.info("game %d of tournament %d stored (attempt %d): %s", task.number, job.tournament_id, task.attempt,
                 report.result.reason, extra=_log_fields(job_id, job, task.attempt, report.result.reason))
        return f"game {task.number} of tournament {job.tournament_id}: played (attempt {task.attempt})"

    async def _play_on_executor(self, job: GameJob, seats: list[SeatBot], observe: Observer | None) -> GameReport:
        """Play on the job's executor, counted as in use meanwhile (``_retire_idle``)."""
        key = (job.tournament_id, job.sandbox)
        executor = self._executor(job)
        self._in_use[key] = self._in_use.get(key, 0) + 1
        try:
            return await executor.play(job.setup, seats, observe=observe)
        finally:
            self._in_use[key] -= 1
            self._last_used[key] = time.monotonic()

    async def _retire_idle(self) -> None:
        """Stop the bot processes of every tournament no game has used for ``bots_idle_s`` (a
        comparison past its verdict, a tournament played out), so a long-lived worker does not keep
        every tournament's bots; a later game of it starts them again."""
        idle_s = self.settings.bots_idle_s
        while True:
            await asyncio.sleep(min(IDLE_CHECK_S, idle_s / 2))
            for key in list(self._executors):
                now = time.monotonic()  # looked at again for each: closing the one before took time
                if key not in self._executors or self._in_use.get(key) or now - self._last_used.get(key, now) < idle_s:
                    continue
                executor = self._executors.pop(key)  # taken out first: a game of it starting now gets a new one
                self._in_use.pop(key, None)
                self._last_used.pop(key, None)
                self._retiring.append(executor)
                try:
                    await executor.close()
                    self._retiring.remove(executor)
                except Exception as exc:  # noqa: BLE001 - the next look, or the worker's stop, tries the rest
                    log.warning("could not stop the idle bots of tournament %d: %s: %s", key[0],
                                type(exc).__name__, exc)
                else:
                    log.info("stopped the bots of tournament %d: no game of it for %g s", key[0], idle_s)

    def _packages(self, job: GameJob) -> Packages:
        """How this worker builds and runs the job's bot packages (its sandbox and runtimes)."""
        key = (job.tournament_id, job.sandbox, json.dumps(job.runtimes, sort_keys=True))
        if key not in self._package_makers:
            database = self.store.sqlite_path if self.store is not None else None
            self._package_makers[key] = arena_packages(job.sandbox, job.runtimes, database, self._logs_root,
                                                       self.archives.root)
        return self._package_makers[key]

    def _executor(self, job: GameJob) -> InProcessExecutor:
        """The executor (bot process pools) for the job's tournament and sandbox."""
        key = (job.tournament_id, job.sandbox)
        executor = self._executors.get(key)
        if executor is None:
            if self._logs_root is None:
                self._temp = self._temp or tempfile.TemporaryDirectory(prefix="arena-worker-logs-")
                self._logs_root = Path(self._temp.name)
            logs = self._logs_root / f"tournament-{job.tournament_id}"
            database = self.store.sqlite_path if self.store is not None else None
            executor = self._executors[key] = InProcessExecutor(
                logs, arena_launcher(job.sandbox, database, self._logs_root, self.archives.root))
        return executor

    # --- the process --------------------------------------------------------------------------

    async def run(self) -> int:
        """Take games until stopped (SIGTERM, SIGINT); the exit status."""
        s = self.settings
        self.store = await asyncio.to_thread(lambda: Store(s.database, migrate=False))
        worker = procrastinate.worker.Worker(
            self.app, queues=[queue_name()], concurrency=s.concurrency, name=self.name,
            update_heartbeat_interval=s.heartbeat_s, stalled_worker_timeout=s.stalled_after_s,
            shutdown_graceful_timeout=s.grace_s, delete_jobs="successful", install_signal_handlers=False)
        self._worker = worker
        asked_to_stop = False

        def stop(signum: int) -> None:
            nonlocal asked_to_stop
            asked_to_stop = True
            log.info("%s: stopping (running games get %g s to finish)", signal.Signals(signum).name, s.grace_s)
            for each in (signal.SIGTERM, signal.SIGINT):  # a second one stops the process at once
                loop.remove_signal_handler(each)
            worker.stop()

        loop = asyncio.get_running_loop()
        logging.getLogger(procrastinate.worker.__name__).addFilter(WITHDRAWN_FILTER)  # once: a set
        if not logging.getLogger().isEnabledFor(logging.INFO):
            # without -v, a lost database is the one line run_worker's caller prints, not the
            # queue's and the pool's tracebacks on the way down
            for name in ("procrastinate", "psycopg"):
                logging.getLogger(name).setLevel(logging.CRITICAL)
        try:
            async with self.app.open_async(), LiveWriter(self.store) as self.live:
                await self._say_what_waits_elsewhere()
                log.info("worker %s on queue %s, %d game(s) at once", self.name, queue_name(), s.concurrency)
                for each in (signal.SIGTERM, signal.SIGINT):
                    loop.add_signal_handler(each, stop, each)
                retire = asyncio.create_task(self._retire_idle(), name="retire-idle-bots")
                try:
                    await worker.run()
                finally:
                    retire.cancel()
                    await asyncio.gather(retire, return_exceptions=True)
        except DATABASE_ERRORS as exc:
            raise DatabaseLostError(f"worker {self.name} lost database {describe_url(s.database)}: "
                                    f"{first_line(exc)}; its games go back to the queue") from None
        finally:
            self.live = None
            self._worker = None
            for each in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(each)
            for executor in [*self._executors.values(), *self._retiring]:
                await executor.close()
            self._executors.clear()
            self._retiring.clear()
            self.store.close()
            if self._temp is not None:
                self._temp.cleanup()
        if self._lost_job is not None:
            raise DatabaseLostError(f"worker {self.name} could not write the end of job {self._lost_job} to database "
                                    f"{describe_url(s.database)} and stopped; the job goes back to the queue "
                                    "(start it again)")
        if not asked_to_stop:  # procrastinate stopped by itself: a side task (its listener) lost the database
            raise DatabaseLostError(f"worker {self.name} lost its connection to database {describe_url(s.database)} "
                                    "and stopped; its games go back to the queue (start it again)")
        return 0

    async def _say_what_waits_elsewhere(self) -> None:
        """One line when games wait in another version's queue: this worker will not take them."""
        rows = await self.app.connector.execute_query_all_async(
            "SELECT queue_name, count(*) AS n FROM procrastinate_jobs WHERE status = 'todo' "
            "AND queue_name LIKE %(prefix)s AND queue_name <> %(mine)s GROUP BY queue_name",
            prefix=QUEUE_PREFIX + "%", mine=queue_name())
        for row in rows:
            version = row["queue_name"].removeprefix(QUEUE_PREFIX)
            sys.stderr.write(f"arena worker: {row['n']} queued game(s) are for version {version}, this worker is "
                             f"{compatibility()}: not taking them (run a worker of that version)\n")
            sys.stderr.flush()


def _log_fields(job_id: int, job: GameJob, attempt: int, reason: str) -> dict[str, object]:
    """A game job's log fields (docs/operations.md, "Logs"): ids, the game's attempt, what happened."""
    return {"job_id": job_id, "game_id": job.setup.game_id, "game": job.number, "tournament": job.tournament_id,
            "attempt": attempt, "reason": reason}


async def run_worker(settings: WorkerSettings) -> int:
    """``arena worker``: check the settings and the database, then work until stopped."""
    require_postgresql(settings.database, "arena worker")
    errors = settings.problems()
    if errors:
        raise UsageError("; ".join(errors))
    await asyncio.to_thread(check_schema, settings.database)
    return await QueueWorker(settings).run()


__all__ = ["GameInfrastructureError", "QueueWorker", "WorkerSettings", "check_schema", "game_time_bound_s",
           "run_worker"]
