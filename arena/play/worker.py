"""``arena worker``: plays queued games of any tournament in one PostgreSQL database (queue.py,
docs/scale-out.md). Run as many as you like, on as many machines.

A job's game is claimed through its status and attempt (``Store.claim_game``), played through the
referee library with the bots in the sandbox the job names, and stored once: result, record and
the next rating pass in one transaction, only if this attempt still owns the game. A bot's failure
is a game result; only the referee's own failures raise, and the job is retried until the game's
attempts run out (then the game is failed with the reason). On SIGTERM or SIGINT running games get
``grace_s`` to finish; then they are aborted, put back to pending and queued again. A job its run
withdraws (procrastinate's abort: ``arena compare --queue`` past its verdict deletes the game's row
and aborts the job) stops its game at once and is not retried. A game the platform could not play
(a PlatformFault: a full disk under ``--logs``) goes back to pending and its job is retried by
another worker, while this one pauses until the condition clears (pause.py).
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
from ..store.outage import DatabaseUnavailableError, Outage, ping, unreachable
from ..store.store import StorageError, Store, describe_url, engine_url, first_line, known_revisions
from .archives import ArchiveCache
from .claimed import MAX_ATTEMPTS, MAX_PLATFORM_FAULTS, ClaimedGames, Failed, Faulted, NotOurs
from .executor import InProcessExecutor, SeatBot
from .live import LiveWriter
from .pause import PAUSE_S, PausingJobManager, WorkerPause
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
from .runner import seat_bots
from .sandbox import arena_launcher, arena_packages

log = logging.getLogger(__name__)
HEARTBEAT_S = 10.0  # procrastinate's worker heartbeat
STALLED_AFTER_S = 30.0  # a worker silent this long is dead: its jobs are retried
GRACE_S = 20.0  # on SIGTERM, how long running games may take to finish (less than STALLED_AFTER_S)
STALLED_CHECK_CRON = "* * * * * */5"  # the stalled-jobs check: every 5 seconds, on one worker
RETRY_WAIT_S = 2  # before a job that raised (the referee's own failure) runs again
POOL_TIMEOUT_S = 5.0  # the longest a queue call waits for a database connection
RESTART_WAIT_S = 1.0  # before procrastinate's worker is started again after it stopped by itself
WATCH_S = 2.0  # how often the worker asks the database whether it answers (an outage is said within seconds)
BOTS_IDLE_S = 300.0  # a tournament's bot processes are stopped after this long without a game of it
IDLE_CHECK_S = 10.0  # the longest between two looks for such bots


class GameInfrastructureError(ArenaError):
    """The referee could not play a game (not a bot's fault): the job raises it to be retried
    (it reaches procrastinate, never a command; an arena error like every other)."""

    exit_status = 1


class GamePlatformFault(GameInfrastructureError):
    """The platform could not play the job's game (a PlatformFault: a full disk under the bot logs):
    the job is retried as for the referee's failure, by another worker, this one being paused
    (pause.py); the game's own count of such faults bounds it (claimed.py)."""


# A store call that failed for these ran into the database, not into the game: the job runs again
# (the game is either stored or still this job's, the attempt guard decides) however often it happens.
DATABASE_ERRORS = (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError,
                   queue_errors.ConnectorException)


class WithdrawnWithoutTraceback(logging.Filter):
    """procrastinate logs a job's end at INFO with its exception's traceback, also for a game its
    run withdrew (``JobAborted``, expected: a comparison past its verdict) and for a game the
    platform could not play (``GamePlatformFault``: its one line was logged, the worker pauses);
    that line keeps its text ("ended with status: Aborted") and loses the traceback, which said
    nothing more."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], (queue_errors.JobAborted, GamePlatformFault)):
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


async def retry_stalled(app: procrastinate.App, job: procrastinate.jobs.Job) -> None:
    """Put a stalled job back in the queue. A job waiting under its queueing lock (a rating pass
    deferred by a game stored while the stalled one ran; a game queued again by a resumed
    coordinator) would make that retry a duplicate key, and it waits on the stalled one's lock, so
    neither would ever run and every later stalled job would stay stalled behind the error: the
    waiting duplicate is deleted first (the stalled job does the same work: the same game, or a
    rating pass of everything stored), in the retry's transaction."""
    if job.queueing_lock is None:
        await app.job_manager.retry_job(job)
        return
    assert job.id is not None
    async with app.connector.pool.connection() as conn, conn.transaction():  # type: ignore[attr-defined]
        dropped = await conn.execute(
            "DELETE FROM procrastinate_jobs WHERE queueing_lock = %s AND status = 'todo' AND id <> %s",
            (job.queueing_lock, job.id))
        await conn.execute("SELECT procrastinate_retry_job_v2(%s, now(), NULL, NULL, NULL)", (job.id,))
    if dropped.rowcount:
        log.info("job %s: its duplicate waiting under queueing lock %s was deleted; the job itself runs again",
                 job.id, job.queueing_lock, extra={"job_id": job.id})


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
    pause_s: float = PAUSE_S  # after a platform fault: the first wait before the condition is checked again

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
        if not self.pause_s > 0:
            errors.append(f"--pause-check must be above 0 s, not {self.pause_s:g}")
        return errors


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
    again), platform (a platform fault: run again elsewhere, this worker pauses), interrupted (the
    worker's shutdown) or error."""
    outcome = "error"
    try:
        yield
        outcome = "ok"
    except GamePlatformFault:
        outcome = "platform"
        raise
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
        # a platform fault pauses the worker: its job manager fetches nothing until the fault clears
        self.pause = WorkerPause(self.name, self._pause_folders, lambda: self.store,
                                 lambda: self._worker.worker_id if self._worker is not None else None, settings.pause_s)
        self.app.job_manager = PausingJobManager(self.app.connector, self._status_lost, self.pause)
        self.app.job_manager.database_down = self._database_down  # during an outage: one try of a job's end
        self._worker: procrastinate.worker.Worker | None = None  # while run() runs
        self._lost_job: int | None = None  # a job whose end could not be written: procrastinate's worker stops
        self._fatal: DatabaseUnavailableError | None = None  # the database stayed away past the outage window
        self.outage: Outage | None = None  # while run() runs
        self._register_tasks()

    def _database_down(self) -> bool:
        return self.outage is not None and self.outage.down_since is not None

    def _status_lost(self, job_id: int, error: BaseException) -> None:
        """A job's end could not be written after every try: stop procrastinate's worker, so that
        its jobs lose their worker and the stalled-jobs check runs the job again; ``run`` starts a
        new one once the database answers."""
        log.warning("job %s: its end could not be written to the queue (%s); starting again on a new registration so "
                    "that the job is retried", job_id, first_line(error.__cause__ or error), extra={"job_id": job_id})
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
            failed: BaseException | None = None
            for job in stalled:
                log.warning("retrying job %s (%s): its worker stopped sending heartbeats", job.id, job.task_name,
                            extra={"job_id": job.id})
                try:
                    await retry_stalled(context.app, job)
                except Exception as exc:  # noqa: BLE001 - the others are retried all the same; the next check tries it
                    log.warning("job %s: could not be retried: %s", job.id, first_line(exc), extra={"job_id": job.id})
                    failed = exc
            if failed is not None:
                raise failed
            return len(stalled)

    async def play(self, job_id: int, args: dict[str, Any]) -> str:
        """Play the job's game unless it is settled or another job's; what happened, for the log.
        Its life once claimed is claimed.py's; a game to retry raises GameInfrastructureError."""
        assert self.store is not None
        store = self.store
        job = GameJob.from_args(args)
        task = await asyncio.to_thread(store.claim_game, job.game_id, job_id, self.name)
        if task is None:
            return f"game {job.number} of tournament {job.tournament_id}: nothing to play (settled or another job's)"

        async def play(setup: GameSetup, observe: Observer | None) -> GameReport:
            # a bot's files come from this machine's archive cache (unpacked on first use): a
            # refused or missing archive is the referee's failure, retried and then recorded
            by_position = await asyncio.to_thread(seat_bots, store, job.tournament_id, False, self.archives,
                                                  self._packages(job))
            return await self._play_on_executor(job, [by_position[p] for p in task.seat_bots], observe)

        # interrupted: the worker is stopping and the grace is over; the game goes back to pending,
        # and procrastinate puts this job back in the queue (GameRetry) to play it again
        games = ClaimedGames(store, asyncio.to_thread, log, self.live,
                             "interrupted by a worker's shutdown; to be replayed", lambda: self._not_ours_level(job_id))
        outcome = await games.play(task, lambda: job.setup, play, {"job_id": job_id, "tournament": job.tournament_id},
                                   lambda conn: defer_rating(self._deferrer, conn, job.tournament_id))
        if isinstance(outcome, NotOurs):
            return f"game {task.number}: attempt {task.attempt} was no longer ours"
        if isinstance(outcome, Failed):
            if outcome.final:
                return f"game {task.number}: failed after {task.attempt} attempts: {outcome.error}"
            raise GameInfrastructureError(outcome.error) from outcome.cause
        if isinstance(outcome, Faulted):  # the platform's: this worker pauses, another plays the game
            self.pause.enter(outcome.fault)
            if outcome.final:
                return f"game {task.number}: failed for the operator after {MAX_PLATFORM_FAULTS} platform faults"
            raise GamePlatformFault(f"platform fault ({outcome.fault.condition}): {outcome.fault}") from None
        return f"game {task.number} of tournament {job.tournament_id}: played (attempt {task.attempt})"

    async def _not_ours_level(self, job_id: int) -> int:
        """The level of the line of a game's end (its result, failure or platform fault) dropped as
        no longer ours. This worker was too late (frozen past the stall threshold: its job was
        retried): when the job is no longer this worker's (another worker ended it, plays it, or it
        waits in the queue again), the job's end says so once, at INFO (job_status.py), and this line
        is DEBUG; otherwise (nothing should have taken the game), a WARNING."""
        try:
            rows = await self.app.connector.execute_query_all_async(
                "SELECT status, worker_id FROM procrastinate_jobs WHERE id = %(id)s", id=job_id)
        except Exception as exc:  # noqa: BLE001 - the database gone again: say it as it was
            log.debug("job %d: could not read its status: %s", job_id, first_line(exc))
            return logging.WARNING
        row = rows[0] if rows else None
        if row is None or row["status"] != "doing":  # ended (a success is deleted) or put back by the stalled check
            return logging.DEBUG
        mine = self._worker.worker_id if self._worker is not None else None
        return logging.DEBUG if row["worker_id"] not in (None, mine) else logging.WARNING

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

    def _pause_folders(self) -> list[Path]:
        """Where a paused worker checks that it can write again: its bot logs and archive cache."""
        return [self._logs_root or Path(tempfile.gettempdir()), self.archives.root]

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

    def _procrastinate_worker(self) -> procrastinate.worker.Worker:
        """procrastinate's worker, new for each connection to the database (a registration of its own)."""
        s = self.settings
        self._worker = procrastinate.worker.Worker(
            self.app, queues=[queue_name()], concurrency=s.concurrency, name=self.name,
            update_heartbeat_interval=s.heartbeat_s, stalled_worker_timeout=s.stalled_after_s,
            shutdown_graceful_timeout=s.grace_s, delete_jobs="successful", install_signal_handlers=False)
        return self._worker

    async def run(self) -> int:
        """Take games until stopped (SIGTERM, SIGINT); the exit status. A database outage is ridden
        out (store/outage.py): procrastinate's worker, which stops when it loses the database, is
        started again once the database answers; past the outage window, DatabaseUnavailableError."""
        s = self.settings
        self.store = await asyncio.to_thread(lambda: Store(s.database, migrate=False))
        stopping = asyncio.Event()  # asked to stop: no new start, and no wait for the database
        outage = self.outage = Outage(describe_url(s.database), give_up=stopping)

        def stop(signum: int) -> None:
            stopping.set()
            log.info("%s: stopping (running games get %g s to finish)", signal.Signals(signum).name, s.grace_s)
            for each in (signal.SIGTERM, signal.SIGINT):  # a second one stops the process at once
                loop.remove_signal_handler(each)
            if self._worker is not None:
                self._worker.stop()

        loop = asyncio.get_running_loop()
        logging.getLogger(procrastinate.worker.__name__).addFilter(WITHDRAWN_FILTER)  # once: a set
        if not logging.getLogger().isEnabledFor(logging.INFO):
            # without -v, an outage is the outage's two lines, not the queue's and the pool's
            # tracebacks meanwhile
            for name in ("procrastinate", "psycopg"):
                logging.getLogger(name).setLevel(logging.CRITICAL)
        for each in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(each, stop, each)
        watch = asyncio.create_task(self._watch_database(outage, stopping), name="watch-database")
        retire = asyncio.create_task(self._retire_idle(), name="retire-idle-bots")
        try:
            async with LiveWriter(self.store) as self.live:
                first = True
                while not stopping.is_set():
                    try:
                        async with self.app.open_async():
                            if first:
                                await self._say_what_waits_elsewhere()
                                log.info("worker %s on queue %s, %d game(s) at once", self.name, queue_name(),
                                         s.concurrency)
                                first = False
                            await self._procrastinate_worker().run()
                        error: BaseException | None = None
                    except DATABASE_ERRORS as exc:  # its shutdown's writes, on the database it lost
                        error = exc
                    if stopping.is_set() or self._fatal is not None:
                        break
                    # procrastinate stopped by itself: a side task (its listener, its heartbeat) or a
                    # job's end lost the database. Its running jobs went back to the queue or are
                    # left to the stalled-jobs check; wait for the database, then take jobs again
                    if self._lost_job is not None:
                        log.info("job %d is left to the stalled-jobs check; taking jobs again once the database "
                                 "answers", self._lost_job)
                        self._lost_job = None
                    # (never at once: a side task failing for another reason would restart it in a loop).
                    # Its error is not an outage of its own: it may come from the outage the watch
                    # has seen end already; the database's answer now says whether one goes on
                    log.info("worker %s: the queue stopped (%s)", self.name, _why_stopped(error))
                    await asyncio.sleep(RESTART_WAIT_S)
                    await outage.call(ping, self.store.engine)
                    log.info("worker %s: taking jobs again", self.name)
        except DatabaseUnavailableError as exc:
            self._fatal = exc
        finally:
            for task in (watch, retire):
                task.cancel()
            await asyncio.gather(watch, retire, return_exceptions=True)
            await self.pause.close()
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
        if self._fatal is not None:
            raise DatabaseUnavailableError(f"worker {self.name}: {self._fatal}; its games go back to the queue")
        return 0

    async def _watch_database(self, outage: Outage, stopping: asyncio.Event) -> None:
        """Ask the database every ``WATCH_S`` whether it answers, so that an outage is said (one
        line) within seconds even when no queue call is due; past the window, stop the worker."""
        assert self.store is not None
        while not stopping.is_set():
            await asyncio.sleep(WATCH_S)
            try:
                await asyncio.to_thread(ping, self.store.engine)
            except Exception as exc:
                if not unreachable(exc):
                    raise
                try:
                    outage.failed(exc)
                except DatabaseUnavailableError as gone:
                    self._fatal = gone
                    if self._worker is not None:
                        self._worker.stop()
                    return
            else:
                outage.succeeded()

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


def _why_stopped(error: BaseException | None) -> str:
    """Why procrastinate's worker stopped by itself, for the worker's INFO line."""
    if error is None:
        return "a job's end was lost"
    cause = error.__cause__ or error
    if isinstance(cause, psycopg.errors.ForeignKeyViolation) and "worker_id" in str(cause):
        # its fetch named a registration that is gone: another worker's start pruned it while this
        # one sent no heartbeat for over --stalled-after (frozen, a paused VM); its jobs were retried
        return "its registration was pruned while it was silent; registering again"
    return first_line(cause)


async def run_worker(settings: WorkerSettings) -> int:
    """``arena worker``: check the settings and the database, then work until stopped."""
    require_postgresql(settings.database, "arena worker")
    errors = settings.problems()
    if errors:
        raise UsageError("; ".join(errors))
    await asyncio.to_thread(check_schema, settings.database)
    return await QueueWorker(settings).run()


__all__ = ["GameInfrastructureError", "GamePlatformFault", "QueueWorker", "WorkerSettings", "check_schema",
           "run_worker"]
