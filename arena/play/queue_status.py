"""How a tournament's games stand, and for a queued one (``arena run --queue``) the queue: games
waiting, each worker's running games and heartbeat, stalled and retried jobs, the workers paused
by a platform fault, and the games per second of the last minute. ``arena status`` prints it; a following coordinator also sets the
queue's gauges from it (``QueueGauges``, docs/operations.md)."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, text

from ..metrics import QUEUE_JOBS, QUEUE_PAUSED, QUEUE_RETRIED, QUEUE_STALLED, QUEUE_WORKERS
from ..store.models import Game, GameStatus, iso_utc
from ..store.pauses import live_pauses
from ..store.store import Store
from .claimed import MAX_PLATFORM_FAULTS
from .queue import PLAY_TASK
from .worker import STALLED_AFTER_S  # the workers' default

log = logging.getLogger(__name__)

RATE_WINDOW_S = 60  # games/s is over this many seconds
GAUGES_EVERY_S = 5.0  # how often a following coordinator reads the queue for its gauges


def queue_status(store: Store, tid: int) -> dict[str, Any]:
    """The tournament's state as ``arena status --format json`` prints it."""
    counts = store.counts(tid)
    status: dict[str, Any] = {"tournament": store.tournament(tid).name, "games": counts}
    with store.session() as s:
        # failed for the operator: the platform could not play them (never rated, nobody's failure)
        status["failed_by_platform"] = s.scalar(select(func.count()).where(
            Game.tournament_id == tid, Game.status == GameStatus.FAILED.value,
            Game.platform_faults >= MAX_PLATFORM_FAULTS)) or 0
        latest = s.scalar(select(func.max(Game.finished_at)).where(Game.tournament_id == tid))
        if latest is not None:
            # the games finished in the last minute of play, over the time they took to finish
            n, first = s.execute(select(func.count(), func.min(Game.finished_at)).where(
                Game.tournament_id == tid, Game.status == GameStatus.DONE.value,
                Game.finished_at > latest - timedelta(seconds=RATE_WINDOW_S))).one()
            span = (latest - first).total_seconds() if first is not None else 0.0
            if n >= 2 and span > 0:
                status["games_per_s"] = round((n - 1) / span, 2)
        if store.engine.dialect.name != "postgresql":
            status["queue"] = None  # SQLite: no queue; the games are played by `arena run`
            return status
        args = {"tid": str(tid), "task": PLAY_TASK, "stalled": STALLED_AFTER_S}
        jobs = s.execute(text(
            "SELECT status::text, count(*), count(*) FILTER (WHERE attempts > 0) FROM procrastinate_jobs"
            " WHERE task_name = :task AND args->>'tournament_id' = :tid GROUP BY status"), args).all()
        workers = s.execute(text(
            "SELECT coalesce(g.worker, '?'), count(*), max(extract(epoch FROM now() - w.last_heartbeat))"
            " FROM procrastinate_jobs j JOIN games g ON g.job_id = j.id AND g.status = 'running'"
            " LEFT JOIN procrastinate_workers w ON w.id = j.worker_id"
            " WHERE j.task_name = :task AND j.status = 'doing' AND args->>'tournament_id' = :tid"
            " GROUP BY g.worker ORDER BY 1"), args).all()
        stalled = s.scalar(text(
            "SELECT count(*) FROM procrastinate_jobs j LEFT JOIN procrastinate_workers w ON w.id = j.worker_id"
            " WHERE j.task_name = :task AND j.status = 'doing' AND j.args->>'tournament_id' = :tid"
            " AND (w.id IS NULL OR w.last_heartbeat < now() - make_interval(secs => :stalled))"), args)
    by_status = {state: n for state, n, _ in jobs}
    status["queue"] = {
        "waiting": by_status.get("todo", 0),
        "running": by_status.get("doing", 0),
        "stalled": stalled or 0,
        "retried": sum(retried for state, _, retried in jobs if state in ("todo", "doing")),
        "failed_jobs": by_status.get("failed", 0),
        "workers": [{"name": name, "running": n, "heartbeat_age_s": None if age is None else round(float(age), 1)}
                    for name, n, age in workers],
        # live workers taking no games after a platform fault (any tournament's: a worker serves all)
        "paused": [{"name": p.worker, "condition": p.condition, "reason": p.reason, "since": iso_utc(p.since),
                    "next_check_at": iso_utc(p.next_check_at)} for p in live_pauses(store, STALLED_AFTER_S)],
    }
    return status


def live_workers(store: Store, stalled_after_s: float = STALLED_AFTER_S) -> int:
    """Workers whose last heartbeat is more recent than ``stalled_after_s`` (any tournament's)."""
    with store.session() as s:
        return int(s.scalar(text("SELECT count(*) FROM procrastinate_workers"
                                 " WHERE last_heartbeat >= now() - make_interval(secs => :stalled)"),
                            {"stalled": stalled_after_s}) or 0)


class QueueGauges:
    """The queue's gauges (``arena_queue_*``) for the tournament a coordinator follows, read from
    the database at most every ``GAUGES_EVERY_S`` (on a thread: never on the event loop)."""

    def __init__(self, store: Store, tid: int) -> None:
        self.store, self.tid = store, tid
        self._read_at = -GAUGES_EVERY_S

    async def refresh(self) -> None:
        """Read them again if they are older than ``GAUGES_EVERY_S``; a database error is logged
        (and counted by the store), the gauges keep their last values."""
        if time.monotonic() - self._read_at < GAUGES_EVERY_S:
            return
        self._read_at = time.monotonic()
        try:
            await asyncio.to_thread(self._read)
        except Exception as exc:  # the next refresh tries again; following goes on
            log.warning("could not read the queue for its metrics: %s: %s", type(exc).__name__, exc)

    def _read(self) -> None:
        queue = queue_status(self.store, self.tid)["queue"]
        if queue is None:  # SQLite: no queue
            return
        for status, n in (("todo", queue["waiting"]), ("doing", queue["running"]), ("failed", queue["failed_jobs"])):
            QUEUE_JOBS.labels(status).set(n)
        QUEUE_STALLED.set(queue["stalled"])
        QUEUE_RETRIED.set(queue["retried"])
        QUEUE_WORKERS.set(live_workers(self.store))
        QUEUE_PAUSED.set(len(queue["paused"]))
