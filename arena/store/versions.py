"""A user's versions in a ladder, and which one plays: their owner (or an operator) activates any
earlier clean (accepted) version, a rollback, or retires their bot from the pool (no version
active). Either is one transaction under a lock on the user, so a user has at most one active
version however the requests interleave; every version's games and ratings stay.

A version entering the pool (accepted, rolled back to, or added by the operator) has its entry
written down as ``Bot.entered_after``, the tournament's last game number at that moment: its games
after it are its first games there, which the ladder plays first (``pool_history``;
arena/schedule/pairings.py, docs/tournaments.md "New bots first")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, func, select, update

from ..errors import ArenaError, quoted
from .models import Bot, Game, GameSeat, Rating, Submission, SubmissionStatus, User
from .store import Store
from .submissions import bot_name


class VersionRefused(ArenaError):
    """An activation or retirement that cannot be done: one line, and the HTTP status it answers with."""

    def __init__(self, reason: str, status: int) -> None:
        super().__init__(reason)
        self.status = status


@dataclass(frozen=True, slots=True)
class VersionRow:
    """One submission of a user to a ladder: its version number, its check's status, and for an
    accepted one its bot (name, whether it is in the pool, its rating now)."""

    version: int
    status: str  # checking, accepted, rejected
    bot: str  # its bot's name (USER.vN), also for a rejected one, which never became a bot
    active: bool
    mu: float | None
    sigma: float | None
    games: int

    def to_dict(self) -> dict[str, Any]:
        """As the bot page's and the version actions' JSON give it (rating: μ − 3σ, as the leaderboard)."""
        rating = None if self.mu is None or self.sigma is None else round(self.mu - 3 * self.sigma, 3)
        return {"version": self.version, "bot": self.bot, "status": self.status, "active": self.active,
                "rating": rating, "mu": None if self.mu is None else round(self.mu, 3),
                "sigma": None if self.sigma is None else round(self.sigma, 3), "games": self.games}


def versions_of(store: Store, tid: int, user_id: int) -> list[VersionRow]:
    """Every submission of ``user_id`` to ladder ``tid``, newest version first."""
    with store.session() as s:
        user = s.scalar(select(User.name).where(User.id == user_id))
        rows = s.execute(select(Submission.version, Submission.status, Bot.name, Bot.active, Rating.mu, Rating.sigma,
                                Rating.games)
                         .outerjoin(Bot, Bot.id == Submission.bot_id).outerjoin(Rating, Rating.bot_id == Bot.id)
                         .where(Submission.user_id == user_id, Submission.tournament_id == tid)
                         .order_by(Submission.version.desc())).all()
    return [VersionRow(int(version), status, name or bot_name(user or "?", int(version)), bool(active),
                       mu, sigma, int(games or 0))
            for version, status, name, active, mu, sigma, games in rows]


def owner_id(store: Store, tid: int, bot: str) -> int | None:
    """The user who submitted bot ``bot`` of ladder ``tid`` (None: no such bot, or the operator's)."""
    with store.session() as s:
        return s.scalar(select(Submission.user_id).join(Bot, Bot.id == Submission.bot_id)
                        .where(Bot.tournament_id == tid, Bot.name == bot))


def last_game(conn: Connection, tid: int) -> int:
    """The tournament's last game number (0 before any): where a bot entering now starts counting."""
    return int(conn.scalar(select(func.max(Game.number)).where(Game.tournament_id == tid)) or 0)


def _lock_user(conn: Connection, user_id: int) -> None:
    """Hold ``user_id``'s row (PostgreSQL) or the database's write lock (SQLite) to the transaction's
    end: two requests of one user are done one after the other."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        conn.execute(select(User.id).where(User.id == user_id).with_for_update())


def _their_bots(user_id: int, tid: int) -> Any:
    return select(Submission.bot_id).where(Submission.user_id == user_id, Submission.tournament_id == tid,
                                           Submission.bot_id.is_not(None))


def activate(store: Store, tid: int, user_id: int, version: int) -> tuple[str, str | None]:
    """Make ``user_id``'s version ``version`` in ladder ``tid`` the one in the pool, every other
    version of theirs out of it (one transaction); (the bot now active, the one it replaced or
    None). VersionRefused for a version that is not theirs, not clean, or already active."""
    with store.engine.begin() as conn:
        _lock_user(conn, user_id)
        found = conn.execute(select(Submission.status, Submission.bot_id, User.name)
                             .join(User, User.id == Submission.user_id)
                             .where(Submission.user_id == user_id, Submission.tournament_id == tid,
                                    Submission.version == version)).first()
        if found is None:
            user = conn.scalar(select(User.name).where(User.id == user_id))
            raise VersionRefused(f"{user} has no version {version} in this ladder", 404)
        status, bot_id, user = found
        name = bot_name(user, version)
        if status != SubmissionStatus.ACCEPTED.value or bot_id is None:
            why = "its check has not ended" if status == SubmissionStatus.CHECKING.value else "its check rejected it"
            raise VersionRefused(f"{name} cannot play: {why}; only a version checked clean may be activated", 409)
        active = conn.execute(select(Bot.id, Bot.name).where(Bot.id.in_(_their_bots(user_id, tid)),
                                                              Bot.active.is_(True))).all()
        if any(bid == bot_id for bid, _ in active):
            raise VersionRefused(f"{name} is already the active version", 409)
        conn.execute(update(Bot).where(Bot.id.in_(_their_bots(user_id, tid))).values(active=False))
        conn.execute(update(Bot).where(Bot.id == bot_id).values(active=True, entered_after=last_game(conn, tid)))
    return name, (active[0][1] if active else None)


def retire(store: Store, tid: int, user_id: int) -> str:
    """Take ``user_id``'s bot out of ladder ``tid``'s pool: no version of theirs plays there until
    they activate one or submit a new one; the version retired. VersionRefused when none plays."""
    with store.engine.begin() as conn:
        _lock_user(conn, user_id)
        active = conn.scalars(select(Bot.name).where(Bot.id.in_(_their_bots(user_id, tid)), Bot.active.is_(True))).all()
        if not active:
            user = conn.scalar(select(User.name).where(User.id == user_id))
            raise VersionRefused(f"no version of {user}'s is in the pool: there is nothing to retire", 409)
        conn.execute(update(Bot).where(Bot.id.in_(_their_bots(user_id, tid))).values(active=False))
    return active[0]


def user_named(store: Store, name: str) -> int:
    """A user's id by name, for the operator's commands; VersionRefused when there is none."""
    with store.session() as s:
        found = s.scalar(select(User.id).where(User.name == name))
    if found is None:
        raise VersionRefused(f"no user named {quoted(name)}", 404)
    return int(found)


@dataclass(frozen=True, slots=True)
class Entry:
    """A bot of the pool as the ladder's next round sees it: its games since it last entered the
    pool, the number of its newest game (0: none), and whether it entered after the ladder began
    (added, accepted or activated again: it may be new) or is one of the tournament file's own."""

    games_since_entry: int
    last_game: int
    entered_later: bool = True


def pool_history(store: Store, tid: int, positions: list[int]) -> dict[int, Entry]:
    """``Entry`` of each bot position given: two indexed reads of game_seats (ix_game_seats_bot)."""
    if not positions:
        return {}
    with store.session() as s:
        later = set(s.scalars(select(Bot.position).where(Bot.tournament_id == tid, Bot.position.in_(positions),
                                                         Bot.entered_after.is_not(None))))
        last = dict(s.execute(select(GameSeat.bot_position, func.max(GameSeat.game_number))
                              .where(GameSeat.tournament_id == tid, GameSeat.bot_position.in_(positions))
                              .group_by(GameSeat.bot_position)).all())
        since = dict(s.execute(select(GameSeat.bot_position, func.count(func.distinct(GameSeat.game_number)))
                               .join(Bot, (Bot.tournament_id == GameSeat.tournament_id)
                                     & (Bot.position == GameSeat.bot_position))
                               .where(GameSeat.tournament_id == tid, GameSeat.bot_position.in_(positions),
                                      GameSeat.game_number > func.coalesce(Bot.entered_after, 0))
                               .group_by(GameSeat.bot_position)).all())
    return {p: Entry(int(since.get(p) or 0), int(last.get(p) or 0), p in later) for p in positions}
