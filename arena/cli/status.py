"""``arena status FILE``: how a tournament's games stand, what waits to be played and about when
it starts (arena/play/waiting.py), and for a queued one (``arena run --queue``) the queue
(arena/play/queue_status.py), as a table or JSON."""

from __future__ import annotations

import json
import sys
from typing import Any

from ..config import TournamentConfig
from ..play.queue_status import RATE_WINDOW_S, queue_status
from ..play.waiting import waiting
from ..play.worker import STALLED_AFTER_S  # the workers' default
from ..store.store import Store


def print_status(store: Store, tid: int, config: TournamentConfig, fmt: str) -> int:
    status = queue_status(store, tid)
    status["waiting"] = waiting(store, tid, config.ladder.new_bot_games if config.ladder is not None else None)
    if fmt == "json":
        sys.stdout.write(json.dumps(status, indent=2) + "\n")
        return 0
    g = status["games"]
    total = sum(g.values())
    by_platform = (f" ({status['failed_by_platform']} by platform faults, nobody's failure: `arena games "
                   f"{config.path.name} --failed`)") if status["failed_by_platform"] else ""
    lines = [f"tournament {config.name!r}: {g['done']}/{total} games done, {g['running']} running, "
             f"{g['pending']} pending, {g['failed']} failed{by_platform}"]
    lines += waiting_lines(status["waiting"])
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


def _minutes(seconds: float | None) -> str:
    return "no estimate (no game is being played now)" if seconds is None else f"in about {seconds / 60:.1f} min"


def waiting_lines(w: dict[str, Any]) -> list[str]:
    """What waits, as `arena status` prints it: the games, the challenges, the new bots."""
    g, c = w["games"], w["challenges"]
    pace = f"{w['pace']['games_per_hour']:g} games/h" if w["pace"]["games_per_hour"] else "no pace yet"
    lines = [f"waiting: {g['waiting']} game(s), {c['waiting']} challenge(s); pace {pace} (the newest "
             f"{w['pace']['measured_games']} games to end)"]
    if g["listed"]:
        first, last = g["listed"][0], g["listed"][-1]
        lines.append(f"  next game {first['number']} ({' v '.join(first['bots'])}) starts {_minutes(first['starts_in_s'])}"
                     + (f"; game {last['number']} {_minutes(last['starts_in_s'])}" if last is not first else ""))
    for ch in c["listed"]:
        left = "until decided" if ch["games_left"] is None else f"{ch['games_left']} games"
        lines.append(f"  challenge {ch['id']} ({ch['bot']} v {ch['opponent']}, {left}) starts {_minutes(ch['starts_in_s'])}")
    for bot in w["new_bots"]:
        lines.append(f"  new in the pool: {bot['bot']}, {bot['games_since_entry']} game(s) since it entered; its next "
                     f"{bot['first_games_left']} are played first, from the ladder's next round")
    return lines
