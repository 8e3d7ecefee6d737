"""``arena status FILE``: how a tournament's games stand, and for a queued one (``arena run
--queue``) the queue: games waiting, each worker's running games and heartbeat, stalled and
retried jobs, and the games per second of the last minute."""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, text

from ..config import TournamentConfig
from ..play.queue import PLAY_TASK
from ..play.worker import STALLED_AFTER_S  # the workers' default
from ..store.models import Game, GameStatus
from ..store.store import Store

RATE_WINDOW_S = 60  # games/s is over this many seconds


def queue_status(store: Store, tid: int) -> dict[str, Any]:
    """The tournament's state as ``arena status --format json`` prints it."""
    counts = store.counts(tid)
    status: dict[str, Any] = {"tournament": store.tournament(tid).name, "games": counts}
    with store.session() as s:
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
    }
    return status


def print_status(store: Store, tid: int, config: TournamentConfig, fmt: str) -> int:
    status = queue_status(store, tid)
    if fmt == "json":
        sys.stdout.write(json.dumps(status, indent=2) + "\n")
        return 0
    g = status["games"]
    total = sum(g.values())
    lines = [f"tournament {config.name!r}: {g['done']}/{total} games done, {g['running']} running, "
             f"{g['pending']} pending, {g['failed']} failed"]
    if "games_per_s" in status:
        lines.append(f"rate: {status['games_per_s']:.2f} games/s (the games finished in the last {RATE_WINDOW_S} s "
                     "of play)")
    q = status["queue"]
    if q is None:
        lines.append("no job queue (a SQLite database): `arena run` plays the games itself")
    else:
        lines.append(f"queue: {q['waiting']} waiting, {q['running']} being played, {q['stalled']} stalled "
                     f"(worker silent over {STALLED_AFTER_S:g} s), {q['retried']} retried, {q['failed_jobs']} failed jobs")
        for w in q["workers"]:
            age = "no heartbeat" if w["heartbeat_age_s"] is None else f"heartbeat {w['heartbeat_age_s']:.0f} s ago"
            lines.append(f"  worker {w['name']}: {w['running']} game(s) running, {age}")
        if not q["workers"]:
            lines.append("  no worker is playing a game of it now")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
