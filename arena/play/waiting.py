"""What is waiting to be played in a tournament, and about when each starts: the games scheduled
and not started (in the order they are played: by number), the challenges waiting for them (played
after the ladder's games), and the bots new to the pool waiting for their first games (they play
at the ladder's next round). ``arena status`` prints it, the web's queue page shows it
(docs/web.md, "The queue"); both carry ``version``.

The estimate is the recent pace: over the newest ``PACE_GAMES`` games to end, the games that
ended per second (however many were played at once, so it holds for one machine or many
workers). While games are being played, the k-th game waiting (counting from 0) starts when
k + 1 more games have ended: in about (k + 1) / pace seconds; a challenge after every game
waiting before it and the games left of the challenges before it. With no game being played
now, or fewer than two ended games to measure, there is no estimate (null): nothing is playing
them yet (a ladder between rounds, no worker)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote

from sqlalchemy import select

from ..store.challenges import open_challenges
from ..store.models import Game, GameStatus, as_utc, iso_utc, utcnow
from ..store.store import Store
from ..store.versions import pool_history

FORMAT_VERSION = 1
PACE_GAMES = 50  # the newest games to end, over which the pace is measured
LISTED = 50  # waiting games listed one by one (the rest counted)


def challenges_waiting(store: Store, tid: int) -> list[dict[str, Any]]:
    """The tournament's challenges not started or not finished, oldest first (the order they are
    played in), each as ``{"id", "bot", "opponent", "url", "games_left": int | None}`` (None:
    "until decided"; a pair is two games)."""
    return [{"id": c.id, "bot": c.bot, "opponent": c.opponent,
             "url": f"/t/{quote(c.tournament, safe='')}/challenges/{c.id}",
             "games_left": None if c.pairs_asked is None else max(0, 2 * c.pairs_asked - c.games_played)}
            for c in open_challenges(store, tid)]


def pace(store: Store, tid: int) -> tuple[float | None, int]:
    """(games ended per second over the newest PACE_GAMES to end, or None; how many it measured)."""
    with store.session() as s:
        ended = [as_utc(t) for t in s.scalars(
            select(Game.finished_at).where(Game.tournament_id == tid, Game.finished_at.is_not(None),
                                           Game.status.in_([GameStatus.DONE.value, GameStatus.FAILED.value]))
            .order_by(Game.finished_at.desc()).limit(PACE_GAMES))]
    if len(ended) < 2 or ended[0] is None or ended[-1] is None:
        return None, len(ended)
    span = (ended[0] - ended[-1]).total_seconds()
    return ((len(ended) - 1) / span if span > 0 else None), len(ended)


def _start(now: datetime, seconds: float | None) -> dict[str, Any]:
    if seconds is None:
        return {"starts_in_s": None, "starts_at": None}
    return {"starts_in_s": round(seconds, 1),
            "starts_at": iso_utc(datetime.fromtimestamp(now.timestamp() + seconds, tz=now.tzinfo))}


def waiting(store: Store, tid: int, new_bot_games: int | None = None, now: datetime | None = None) -> dict[str, Any]:
    """What waits in tournament ``tid`` (see the module's docstring), as the JSON gives it.
    ``new_bot_games``: the ladder's setting, when known (None: the default's 8)."""
    now = now or utcnow()
    counts = store.counts(tid)
    per_s, measured = pace(store, tid)
    running = counts[GameStatus.RUNNING.value]
    playing = per_s if running and per_s else None  # an estimate only while games are being played
    bots = store.bots(tid)
    names = {b.position: b.name for b in bots}
    with store.session() as s:
        rows = s.execute(select(Game.number, Game.round, Game.seat_bots).where(
            Game.tournament_id == tid, Game.status == GameStatus.PENDING.value)
            .order_by(Game.number).limit(LISTED)).all()
    games = [{"number": number, "round": round_, "bots": [names.get(p, "?") for p in seats],
              **_start(now, (k + 1) / playing if playing else None)}
             for k, (number, round_, seats) in enumerate(rows)]
    ahead = counts[GameStatus.PENDING.value]
    challenges = []
    for entry in challenges_waiting(store, tid):
        estimate = (ahead + 1) / playing if playing and ahead is not None else None
        challenges.append({**entry, **_start(now, estimate)})
        left = entry.get("games_left")
        ahead = ahead + left if ahead is not None and isinstance(left, int) else None
    first_games = 8 if new_bot_games is None else new_bot_games
    active = [b for b in bots if b.active]
    history = pool_history(store, tid, [b.position for b in active])
    new = [{"bot": b.name, "games_since_entry": history[b.position].games_since_entry,
            "first_games_left": first_games - history[b.position].games_since_entry}
           for b in active if history[b.position].entered_later
           and history[b.position].games_since_entry < first_games]
    return {"version": FORMAT_VERSION, "tournament": store.tournament(tid).name,
            "pace": {"games_per_hour": round(per_s * 3600, 1) if per_s else None, "measured_games": measured},
            "games": {"waiting": counts[GameStatus.PENDING.value], "running": running, "listed": games},
            "challenges": {"waiting": len(challenges), "listed": challenges},
            "new_bots": new}
