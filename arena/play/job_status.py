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
was lost, the next try finds the job no longer this worker's (below) and writes nothing; after a
lost answer that means the first try landed, and it is taken as done.

A job's end is written only while the job is still this worker's: ``doing``, under the worker
registration that fetched it (or under none: the registration was pruned while it was silent,
and nobody has taken the job since), checked and written in one statement with the job's row
locked. A job that is not is a late worker's: it was frozen (SIGSTOP, a VM paused, swapping)
past the stall threshold, the stalled-jobs check gave its job to another worker, which played
the game again and ended the job, or plays it now. Its game's result was dropped (the attempt
guard, claimed.py); its job's end is dropped too, with one INFO line, not raised (procrastinate
would leak it as a task's unretrieved exception, a traceback in the log), and never written
over the other worker's: a late ``finish`` would delete the job another worker is playing, a
late ``retry`` would queue it a second time.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable
from typing import Any, LiteralString

import psycopg
from procrastinate import exceptions as queue_errors
from procrastinate import jobs, utils
from procrastinate.manager import JobManager

from ..store.store import first_line

log = logging.getLogger(__name__)
WRITE_WAITS_S = (0.1, 0.5, 1.0, 2.0)  # between the tries of a job's end write: five tries in all

# the job's row, locked, when it is still the ending worker's (a CTE with FOR UPDATE runs once,
# before the end is written; a row another transaction changed meanwhile is checked again)
_OURS = """WITH ours AS (
    SELECT id FROM procrastinate_jobs
     WHERE id = %(job_id)s AND status = 'doing'
       AND (worker_id IS NULL OR %(worker_id)s::bigint IS NULL OR worker_id = %(worker_id)s::bigint)
       FOR UPDATE)
"""
# procrastinate's own job-end functions (its finish_job and retry_job queries), on that row only
FINISH_QUERY = _OURS + "SELECT procrastinate_finish_job_v1(id, %(status)s, %(delete_job)s) FROM ours"
RETRY_QUERY = _OURS + ("SELECT procrastinate_retry_job_v2(id, %(retry_at)s, %(new_priority)s, %(new_queue_name)s, "
                       "%(new_lock)s) FROM ours")
STATE_QUERY = "SELECT status, worker_id FROM procrastinate_jobs WHERE id = %(job_id)s"

OnLost = Callable[[int, BaseException], None]


def connection_lost(exc: BaseException) -> bool:
    """Whether a queue call failed because its connection broke (or none could be had), as
    opposed to the database refusing the query."""
    cause = exc.__cause__ if isinstance(exc, queue_errors.ConnectorException) else exc
    return isinstance(cause, (psycopg.OperationalError, psycopg.InterfaceError))


class SteadyJobManager(JobManager):
    """procrastinate's ``JobManager`` whose job-end writes survive a broken connection and leave a
    job another worker has taken alone (module docstring). ``on_lost(job_id, error)`` is called,
    instead of raising, when a write still fails after every try."""

    def __init__(self, connector: object, on_lost: OnLost, database_down: Callable[[], bool] = lambda: False) -> None:
        super().__init__(connector)  # type: ignore[arg-type]
        self.on_lost = on_lost
        self.database_down = database_down  # an outage is known: one try is enough, the job is left to the queue

    async def finish_job(self, job: jobs.Job, status: jobs.Status, delete_job: bool) -> None:
        await self._steadily(job, "finish", FINISH_QUERY, {"status": status.value, "delete_job": delete_job})

    async def retry_job(self, job: jobs.Job, retry_at: datetime.datetime | None = None, priority: int | None = None,
                        queue: str | None = None, lock: str | None = None) -> None:
        await self._steadily(job, "retry", RETRY_QUERY, {
            "retry_at": retry_at or utils.utcnow(), "new_priority": priority, "new_queue_name": queue,
            "new_lock": lock})

    async def _steadily(self, job: jobs.Job, what: str, query: LiteralString, arguments: dict[str, Any]) -> None:
        assert job.id is not None
        lost: BaseException | None = None  # the last connection error, once one happened
        for wait_s in (*WRITE_WAITS_S, None):
            try:
                written = await self.connector.execute_query_all_async(
                    query, job_id=job.id, worker_id=job.worker_id, **arguments)
            except queue_errors.ConnectorException as exc:
                if not connection_lost(exc):
                    raise
                lost = exc
                if wait_s is None or self.database_down():
                    break
                log.warning("job %s: its %s could not be written (%s); trying again in %g s", job.id, what,
                            first_line(exc.__cause__ or exc), wait_s, extra={"job_id": job.id})
                await asyncio.sleep(wait_s)
                continue
            if written:
                if lost is not None:
                    log.info("job %s: its %s was written after a lost connection", job.id, what,
                             extra={"job_id": job.id})
            elif lost is not None:  # the try whose answer was lost had landed: the job is no longer ours
                log.info("job %s: its %s had landed before its connection broke", job.id, what,
                         extra={"job_id": job.id})
            else:
                await self._say_too_late(job, what)
            return
        # not raised on: procrastinate would only log it as a task's unretrieved exception; the
        # worker's stop is what puts the job back in the queue
        assert lost is not None
        self.on_lost(job.id, lost)

    async def _say_too_late(self, job: jobs.Job, what: str) -> None:
        """The one INFO line of a job end dropped because the job is no longer this worker's."""
        assert job.id is not None
        try:
            rows = await self.connector.execute_query_all_async(STATE_QUERY, job_id=job.id)
        except queue_errors.ConnectorException:  # the line only says less
            rows = []
        state = rows[0] if rows else None
        if state is not None and state["status"] in ("todo", "doing"):
            whose = "taken over by another worker" if state["status"] == "doing" else "back in the queue"
        else:  # deleted (a success) or in a final status
            whose = "already ended by another worker"
        log.info("job %s: %s (this one was too late: the job was retried while it was silent); its %s is dropped",
                 job.id, whose, what, extra={"job_id": job.id})


__all__ = ["FINISH_QUERY", "RETRY_QUERY", "WRITE_WAITS_S", "SteadyJobManager", "connection_lost"]
