"""``arena status FILE``: how a tournament's games stand, and for a queued one (``arena run
--queue``) the queue (arena/play/queue_status.py), as a table or JSON."""

from __future__ import annotations

import json
import sys

from ..config import TournamentConfig
from ..play.queue_status import RATE_WINDOW_S, queue_status
from ..play.worker import STALLED_AFTER_S  # the workers' default
from ..store.store import Store


def print_status(store: Store, tid: int, config: TournamentConfig, fmt: str) -> int:
    status = queue_status(store, tid)
    if fmt == "json":
        sys.stdout.write(json.dumps(status, indent=2) + "\n")
        return 0
    g = status["games"]
    total = sum(g.values())
    by_platform = (f" ({status['failed_by_platform']} by platform faults, nobody's failure: `arena games "
                   f"{config.path.name} --failed`)") if status["failed_by_platform"] else ""
    lines = [f"tournament {config.name!r}: {g['done']}/{total} games done, {g['running']} running, "
             f"{g['pending']} pending, {g['failed']} failed{by_platform}"]
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
        for p in q["paused"]:
            lines.append(f"  worker {p['name']}: paused since {p['since']} by a platform fault ({p['condition']}: "
                         f"{p['reason']}), next check at {p['next_check_at']}")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
