"""What the participant API reads of one user (arena/web/pages/me.py): their bots (every version,
in every tournament) with their ratings, and the games those bots played, newest first, a page at a
time by game number through game_seats' index."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import select

from ..rating.ratings import Rating as TrueSkillRating
from .models import Bot, Game, GameSeat, Rating, Submission, Tournament, iso_utc
from .store import Store


def bots_of(store: Store, user_id: int) -> list[dict[str, Any]]:
    """The user's bots (accepted submissions), by tournament then newest version first."""
    with store.session() as s:
        rows = s.execute(select(Tournament.name, Bot.name, Bot.position, Bot.active, Submission.id, Submission.version,
                                Rating.mu, Rating.sigma, Rating.games, Bot.added_at)
                         .join(Submission, Submission.bot_id == Bot.id)
                         .join(Tournament, Tournament.id == Bot.tournament_id)
                         .outerjoin(Rating, Rating.bot_id == Bot.id)
                         .where(Submission.user_id == user_id)
                         .order_by(Tournament.name, Submission.version.desc())).all()
    return [{"tournament": t, "bot": name, "position": position, "active": bool(active), "submission": sid,
             "version": version, "added_at": iso_utc(added),
             "rating": None if mu is None else {"mu": round(mu, 3), "sigma": round(sigma, 3),
                                                "conservative": round(TrueSkillRating(mu, sigma).conservative, 3), "games": games}}
            for t, name, position, active, sid, version, mu, sigma, games, added in rows]


def games_of(store: Store, tid: int, positions: Collection[int], before: int | None, size: int
             ) -> tuple[list[dict[str, Any]], bool]:
    """One page of the games of the bots at ``positions`` in tournament ``tid``, newest first (below
    game ``before``), each with that bot's seat, outcome, forfeit and points; whether older ones exist."""
    if not positions:
        return [], False
    q = select(GameSeat.game_number, GameSeat.seat, GameSeat.bot_position, GameSeat.outcome, GameSeat.forfeit,
               GameSeat.points, Game.finished_at, Game.status).join(
        Game, (Game.tournament_id == GameSeat.tournament_id) & (Game.number == GameSeat.game_number)).where(
        GameSeat.tournament_id == tid, GameSeat.bot_position.in_(sorted(positions)))
    if before is not None:
        q = q.where(GameSeat.game_number < before)
    with store.session() as s:
        rows = s.execute(q.order_by(GameSeat.game_number.desc(), GameSeat.seat).limit(size + 1)).all()
        names = {p: n for p, n in s.execute(select(Bot.position, Bot.name).where(Bot.tournament_id == tid))}
    older = len(rows) > size
    return [{"number": n, "seat": seat, "bot": names.get(position, str(position)), "outcome": outcome,
             "forfeit": forfeit, "points": points, "status": status, "finished_at": iso_utc(finished)}
            for n, seat, position, outcome, forfeit, points, finished, status in rows[:size]], older
