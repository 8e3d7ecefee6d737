"""A job's end, written to the queue even when the database connection breaks under the write.

procrastinate's worker records a job's end (``finish_job``, or ``retry_job`` for a retry) in one
query after the task returns. When that query's connection is cut (a database restart, a
failover, a proxy dropping connections), the worker logs "Task exception was never retrieved"
and goes on taking jobs, and the job stays ``doing`` under a worker that still beats: the
stalled-jobs check only retries the jobs of silent workers, so it never runs again. A game job
left so counts as its game's job (the coordinator never queues the game again), keeps the queue
from emptying, and when its game was to be retried, keeps the tournament from ending.

``SteadyJobManager`` writes a job's end again on a new connection, a few times (``WRITE_WAITS_S``;
once, while its worker knows the database to be down: each try would wait for the pool).
When it still cannot, it tells its worker, which stops: a stopped worker's jobs lose their
worker (``worker_id`` becomes NULL, or its heartbeat ages) and the stalled-jobs check of the
worker that replaces it retries them. A retried game job whose game was stored finds nothing to
play and ends.

A write is retried only after a connection error. If the database applied a write whose answer
was lost, the next try finds the job no longer ``doing`` and raises; after a lost answer that
means the first try landed, and it is taken as done.

A job no longer ``doing`` at the first try is a late worker's: it was frozen (SIGSTOP, a VM
paused, swapping) past the stall threshold, the stalled-jobs check gave its job to another worker,
which played the game again and ended the job. Its game's result was dropped (the attempt guard);
its job's end is dropped too, with one INFO line, not raised (procrastinate would leak it as a
task's unretrieved exception, a traceback in the log).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Awaitable, Callable

import psycopg
from procrastinate import exceptions as queue_errors
from procrastinate import jobs
from procrastinate.manager import JobManager

from ..store.store import first_line

log = logging.getLogger(__name__)
WRITE_WAITS_S = (0.1, 0.5, 1.0, 2.0)  # between the tries of a job's end write: five tries in all
NOT_DOING = "not in \"doing\""  # procrastinate's finish/retry functions raise this for a job already ended

OnLost = Callable[[int, BaseException], None]


def connection_lost(exc: BaseException) -> bool:
    """Whether a queue call failed because its connection broke (or none could be had), as
    opposed to the database refusing the query."""
    cause = exc.__cause__ if isinstance(exc, queue_errors.ConnectorException) else exc
    return isinstance(cause, (psycopg.OperationalError, psycopg.InterfaceError))


class SteadyJobManager(JobManager):
    """procrastinate's ``JobManager`` whose job-end writes survive a broken connection (module
    docstring). ``on_lost(job_id, error)`` is called, instead of raising, when a write still fails
    after every try."""

    def __init__(self, connector: object, on_lost: OnLost, database_down: Callable[[], bool] = lambda: False) -> None:
        super().__init__(connector)  # type: ignore[arg-type]
        self.on_lost = on_lost
        self.database_down = database_down  # an outage is known: one try is enough, the job is left to the queue

    async def finish_job(self, job: jobs.Job, status: jobs.Status, delete_job: bool) -> None:
        await self._steadily(job, "finish", lambda: super(SteadyJobManager, self).finish_job(job, status, delete_job))

    async def retry_job(self, job: jobs.Job, retry_at: datetime.datetime | None = None, priority: int | None = None,
                        queue: str | None = None, lock: str | None = None) -> None:
        await self._steadily(job, "retry", lambda: super(SteadyJobManager, self).retry_job(
            job, retry_at=retry_at, priority=priority, queue=queue, lock=lock))

    async def _steadily(self, job: jobs.Job, what: str, write: Callable[[], Awaitable[None]]) -> None:
        assert job.id is not None
        lost: BaseException | None = None  # the last connection error, once one happened
        for wait_s in (*WRITE_WAITS_S, None):
            try:
                await write()
                if lost is not None:
                    log.info("job %s: its %s was written after a lost connection", job.id, what,
                             extra={"job_id": job.id})
                return
            except queue_errors.ConnectorException as exc:
                if NOT_DOING in str(exc.__cause__):
                    if lost is not None:
                        log.info("job %s: its %s had landed before its connection broke", job.id, what,
                                 extra={"job_id": job.id})
                    else:
                        log.info("job %s: already ended by another worker (this one was too late: the job was "
                                 "retried while it was silent); its %s is dropped", job.id, what,
                                 extra={"job_id": job.id})
                    return
                if not connection_lost(exc):
                    raise
                lost = exc
                if wait_s is None or self.database_down():
                    break
                log.warning("job %s: its %s could not be written (%s); trying again in %g s", job.id, what,
                            first_line(exc.__cause__ or exc), wait_s, extra={"job_id": job.id})
                await asyncio.sleep(wait_s)
        # not raised on: procrastinate would only log it as a task's unretrieved exception; the
        # worker's stop is what puts the job back in the queue
        assert lost is not None
        self.on_lost(job.id, lost)


__all__ = ["WRITE_WAITS_S", "SteadyJobManager", "connection_lost"]
