"""Workers paused by a platform fault (``worker_pauses``): each paused ``arena worker`` keeps its
row while it takes no games (arena/play/pause.py), and ``arena status`` lists the rows of workers
whose queue heartbeat is recent (a worker killed while paused leaves a row nobody shows)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select, text

from .models import WorkerPause, as_utc, utcnow
from .store import Store


@dataclass(frozen=True, slots=True)
class PauseRow:
    worker: str
    condition: str
    reason: str
    since: datetime
    next_check_at: datetime


def put_pause(store: Store, worker: str, queue_worker_id: int | None, condition: str, reason: str,
              since: datetime, next_check_s: float) -> None:
    """Write (or rewrite) ``worker``'s pause: why, since when, and when it checks again."""
    with store.session() as s, s.begin():
        row = s.get(WorkerPause, worker)
        if row is None:
            row = WorkerPause(worker=worker)
            s.add(row)
        row.queue_worker_id, row.condition, row.reason, row.since = queue_worker_id, condition, reason, since
        row.next_check_at = utcnow() + timedelta(seconds=next_check_s)


def clear_pause(store: Store, worker: str) -> None:
    """``worker`` takes games again (or stops): its pause row goes."""
    with store.session() as s, s.begin():
        s.execute(delete(WorkerPause).where(WorkerPause.worker == worker))


def live_pauses(store: Store, stalled_after_s: float) -> list[PauseRow]:
    """The pauses of workers whose queue heartbeat is more recent than ``stalled_after_s`` (PostgreSQL
    only: the queue's workers table), by worker name."""
    if store.engine.dialect.name != "postgresql":
        return []
    with store.session() as s:
        alive = set(s.execute(text("SELECT id FROM procrastinate_workers WHERE last_heartbeat >= now() - "
                                   "make_interval(secs => :stalled)"), {"stalled": stalled_after_s}).scalars())
        rows = s.scalars(select(WorkerPause).order_by(WorkerPause.worker)).all()
        return [PauseRow(r.worker, r.condition, r.reason, as_utc(r.since) or r.since,
                         as_utc(r.next_check_at) or r.next_check_at)
                for r in rows if r.queue_worker_id in alive]


__all__ = ["PauseRow", "clear_pause", "live_pauses", "put_pause"]
