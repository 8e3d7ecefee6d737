"""Challenges: a user's unrated match of one of their bots against another bot of the ladder, in
duplicate pairs (arena/play/challenges.py plays them). A challenge's games live in a tournament of
their own, made with the challenge in one transaction, holding copies of the two bots' rows: the
ladder's ratings, standings, bot pages and pairings read the ladder's games only, so a challenge
game can never be rated or counted there, by construction rather than by a filter each reader must
remember.

A new challenge is one transaction under a lock on its user (``new_challenge``): their challenges
in flight and their challenge games of the last day are counted there (``ChallengeSettings``), so a
burst can never pass the quota together. A challenge reserves the most games it may play (its pairs,
or the cap of "until decided") until it ends; then it counts the games it played."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, update

from ..config import ChallengeSettings
from ..errors import ArenaError, quoted
from ..rating.ratings import default_rating
from . import notices
from .models import (Bot, Challenge, ChallengeStatus, Game, GameStatus, Rating, Submission, SubmissionStatus,
                     Tournament, User, iso_utc, utcnow)
from .store import GameTask, Store
from .submissions import lock_user

DAY = timedelta(days=1)
IN_FLIGHT_RETRY_S = 60  # Retry-After of a refusal for challenges in flight: about a round's challenge games
OPEN = (ChallengeStatus.WAITING.value, ChallengeStatus.PLAYING.value)
VERDICTS = ("better", "not_better", "undecided")
FORMAT_VERSION = 1  # the challenge JSON's "version" (docs/challenges.md)


class ChallengeRefused(ArenaError):
    """A challenge that cannot be made: one line, the HTTP status it answers with, and when to try
    again (None: not by waiting). The CLI exits 2 with the line."""

    def __init__(self, reason: str, status: int = 400, retry_after_s: int | None = None) -> None:
        super().__init__(reason)
        self.status, self.retry_after_s = status, retry_after_s


@dataclass(frozen=True, slots=True)
class ChallengeRow:
    id: int
    user_id: int | None
    user: str | None
    tournament_id: int
    tournament: str
    games_tournament_id: int | None
    games_tournament: str | None
    bot: str
    opponent: str
    pairs_asked: int | None
    max_pairs: int
    seed: int
    unit: str
    bounds: dict[str, Any]
    status: str
    verdict: str | None
    margin: float | None
    interval: tuple[float, float] | None
    games_played: int
    games_failed: int
    pairs: list[dict[str, Any]]
    error: str | None
    created_at: datetime
    finished_at: datetime | None

    @property
    def open(self) -> bool:
        return self.status in OPEN

    @property
    def pair_limit(self) -> int:
        return self.pairs_asked if self.pairs_asked is not None else self.max_pairs

    def to_dict(self) -> dict[str, Any]:
        """The challenge JSON's own fields (the web adds each game's URL; docs/challenges.md)."""
        return {"version": FORMAT_VERSION, "id": self.id, "tournament": self.tournament, "user": self.user,
                "bot": self.bot, "opponent": self.opponent, "status": self.status,
                "pairs_asked": self.pairs_asked, "until_decided": self.pairs_asked is None,
                "max_pairs": self.max_pairs, "pairs_played": len(self.pairs), "seed": self.seed, "unit": self.unit,
                "margin_unit": "points per deal" if self.unit == "deals" else "Elo", "bounds": self.bounds,
                "games_played": self.games_played, "games_failed": self.games_failed, "verdict": self.verdict,
                "margin": self.margin, "interval": list(self.interval) if self.interval else None,
                "error": self.error, "games_tournament": self.games_tournament,
                "created_at": iso_utc(self.created_at), "finished_at": iso_utc(self.finished_at)}


def games_tournament_name(ladder: str, challenge_id: int) -> str:
    """The name of the tournament a challenge's games are stored in."""
    return f"{ladder}~challenge-{challenge_id}"


def is_challenge_tournament(settings: Any) -> bool:
    """Whether a tournament row holds a challenge's games (its settings say so)."""
    return isinstance(settings, dict) and settings.get("kind") == "challenge"


def bots_of_user(store: Store, tid: int, user_id: int) -> list[str]:
    """The names of the ladder bots ``user_id`` submitted (every accepted version), newest first."""
    with store.session() as s:
        return list(s.scalars(select(Bot.name).join(Submission, Submission.bot_id == Bot.id)
                              .where(Submission.user_id == user_id, Bot.tournament_id == tid,
                                     Submission.status == SubmissionStatus.ACCEPTED.value)
                              .order_by(Submission.version.desc())))


def new_challenge(store: Store, tid: int, user_id: int | None, bot: str, opponent: str, pairs: int | None,
                  settings: ChallengeSettings, seed: int | None = None) -> ChallengeRow:
    """A waiting challenge of ``bot`` against ``opponent`` in ladder ``tid``: ``pairs`` pairs, or
    None for until the sequential test decides (at most ``settings.max_pairs``). ``user_id`` None
    is the operator's (`arena challenge`): any bot, no quota. ChallengeRefused when the bots or the
    pairs are not right, or the user is at a quota. One transaction under a lock on the user."""
    if pairs is not None and not 1 <= pairs <= settings.max_pairs:
        raise ChallengeRefused(f"pairs must be from 1 to {settings.max_pairs} here, not {pairs}")
    if bot == opponent:
        raise ChallengeRefused(f"a challenge needs two bots: {quoted(bot)} against itself says nothing")
    with store.engine.begin() as conn:
        if user_id is not None:
            lock_user(conn, user_id)
        ladder = conn.execute(select(Tournament.name, Tournament.settings).where(Tournament.id == tid)).first()
        if ladder is None or is_challenge_tournament(ladder[1]):
            raise ChallengeRefused("no such ladder", 404)
        rows = {b.name: b for b in conn.execute(select(Bot).where(Bot.tournament_id == tid,
                                                                  Bot.name.in_((bot, opponent))))}
        mine = set(_owned(conn, tid, user_id)) if user_id is not None else None
        challenger = rows.get(bot)
        if challenger is None or (mine is not None and challenger.id not in mine):
            raise ChallengeRefused(f"you have no bot named {quoted(bot)} in ladder {quoted(ladder[0])}", 404)
        rival = rows.get(opponent)
        if rival is None or not (rival.active or mine is None or rival.id in mine):
            raise ChallengeRefused(f"no active bot named {quoted(opponent)} in ladder {quoted(ladder[0])} (a "
                                   "challenge takes on the ladder's active bots or your own versions)", 404)
        most = pairs if pairs is not None else settings.max_pairs
        if user_id is not None:
            _refuse_over_quota(conn, user_id, settings, 2 * most)
        now = utcnow()
        cid = conn.execute(insert(Challenge).values(
            user_id=user_id, tournament_id=tid, bot_id=challenger.id, opponent_id=rival.id, pairs_asked=pairs,
            max_pairs=most, seed=0, unit=settings.unit,
            bounds={"lower": settings.lower, "upper": settings.upper, "alpha": settings.alpha, "beta": settings.beta},
            status=ChallengeStatus.WAITING.value, games_played=0, games_failed=0, pairs=[],
            created_at=now)).inserted_primary_key[0]
        games_tid = _games_tournament(conn, games_tournament_name(ladder[0], cid), ladder[1], cid,
                                      (challenger, rival), now)
        conn.execute(update(Challenge).where(Challenge.id == cid)
                     .values(games_tournament_id=games_tid, seed=cid if seed is None else seed))
    found = challenge(store, int(cid))
    assert found is not None
    return found


def _owned(conn: Connection, tid: int, user_id: int) -> list[int]:
    return list(conn.scalars(select(Bot.id).join(Submission, Submission.bot_id == Bot.id)
                             .where(Submission.user_id == user_id, Bot.tournament_id == tid)))


def _refuse_over_quota(conn: Connection, user_id: int, settings: ChallengeSettings, adds: int) -> None:
    """ChallengeRefused (429) when one more challenge of at most ``adds`` games would take the user
    over their challenges in flight or their games of the last day."""
    now = utcnow()
    mine = Challenge.user_id == user_id
    in_flight = conn.scalar(select(func.count()).select_from(Challenge)
                            .where(mine, Challenge.status.in_(OPEN))) or 0
    if in_flight >= settings.in_flight:
        raise ChallengeRefused(f"you have {in_flight} challenge(s) waiting or playing, as many as a user may: wait "
                               "for a verdict, then ask again", 429, IN_FLIGHT_RETRY_S)
    day = conn.execute(select(Challenge.status, Challenge.max_pairs, Challenge.games_played, Challenge.created_at)
                       .where(mine, Challenge.created_at > now - DAY).order_by(Challenge.created_at)).all()
    used = sum(2 * most if status in OPEN else played for status, most, played, _ in day)
    if used + adds > settings.games_per_day:
        oldest = day[0][3] if day else now
        oldest = oldest if oldest.tzinfo else oldest.replace(tzinfo=now.tzinfo)
        wait = max(1, math.ceil((oldest + DAY - now).total_seconds()))
        raise ChallengeRefused(f"your challenges of the last day play or hold {used} game(s) and this one may play "
                               f"{adds}: a user may have {settings.games_per_day} a day (ask for fewer pairs, or "
                               "wait)", 429, wait)


def _games_tournament(conn: Connection, name: str, ladder_settings: dict[str, Any], cid: int,
                      bots: tuple[Any, Any], now: datetime) -> int:
    """The tournament a challenge's games are stored in: the ladder's table and rules, the two
    bots at positions 0 (the challenger) and 1."""
    settings = {"kind": "challenge", "challenge": cid, "bots": [b.name for b in bots],
                **{k: ladder_settings[k] for k in ("players", "rules", "time_control", "policy", "max_strikes")
                   if k in ladder_settings}}
    games_tid = conn.execute(insert(Tournament).values(name=name, fingerprint="arena-challenge", settings=settings,
                                                       rated_through=0, rounds=0, created_at=now)
                             ).inserted_primary_key[0]
    start = default_rating()
    for position, b in enumerate(bots):
        bot_id = conn.execute(insert(Bot).values(tournament_id=games_tid, position=position, name=b.name, spec=b.spec,
                                                 cwd=b.cwd, env=dict(b.env or {}), active=True, archive=b.archive,
                                                 added_at=now)).inserted_primary_key[0]
        conn.execute(insert(Rating).values(bot_id=bot_id, mu=start.mu, sigma=start.sigma, games=0))
    return int(games_tid)


def _rows(store: Store, *where: Any, limit: int | None = None) -> list[ChallengeRow]:
    with store.session() as s:
        bot, rival, ladder, games = (Bot.__table__.alias("b"), Bot.__table__.alias("o"),
                                     Tournament.__table__.alias("t"), Tournament.__table__.alias("g"))
        q = (select(Challenge, User.name, ladder.c.name, games.c.name, bot.c.name, rival.c.name)
             .join(ladder, ladder.c.id == Challenge.tournament_id)
             .join(bot, bot.c.id == Challenge.bot_id).join(rival, rival.c.id == Challenge.opponent_id)
             .outerjoin(games, games.c.id == Challenge.games_tournament_id)
             .outerjoin(User, User.id == Challenge.user_id)
             .where(*where).order_by(Challenge.id.desc()))
        if limit is not None:
            q = q.limit(limit)
        return [_row(c, user, t, g, b, o) for c, user, t, g, b, o in s.execute(q)]


def _row(c: Challenge, user: str | None, ladder: str, games: str | None, bot: str, opponent: str) -> ChallengeRow:
    interval = (c.interval_low, c.interval_high) if c.interval_low is not None and c.interval_high is not None \
        else None
    return ChallengeRow(c.id, c.user_id, user, c.tournament_id, ladder, c.games_tournament_id, games, bot, opponent,
                        c.pairs_asked, c.max_pairs, c.seed, c.unit, dict(c.bounds or {}), c.status, c.verdict,
                        c.margin, interval, c.games_played, c.games_failed, list(c.pairs or []), c.error,
                        c.created_at, c.finished_at)


def challenge(store: Store, cid: int) -> ChallengeRow | None:
    found = _rows(store, Challenge.id == cid)
    return found[0] if found else None


def challenges(store: Store, tid: int | None = None, user_id: int | None = None, limit: int = 100) -> list[ChallengeRow]:
    """Challenges, newest first: of a ladder, of a user, or all."""
    where = ([Challenge.tournament_id == tid] if tid is not None else []) + \
            ([Challenge.user_id == user_id] if user_id is not None else [])
    return _rows(store, *where, limit=limit)


def open_challenges(store: Store, tid: int) -> list[ChallengeRow]:
    """A ladder's challenges waiting or playing, oldest first: the order they are played in."""
    return sorted(_rows(store, Challenge.tournament_id == tid, Challenge.status.in_(OPEN)), key=lambda c: c.id)


def record_pair(store: Store, cid: int, pair: dict[str, Any], failed_games: int) -> None:
    """A finished pair of a challenge (in pair order), kept so the test resumes where it was."""
    with store.session() as s, s.begin():
        c = s.get(Challenge, cid)
        assert c is not None
        c.pairs = [*(c.pairs or []), pair]
        c.games_played = c.games_played + 2
        c.games_failed = c.games_failed + failed_games
        c.status = ChallengeStatus.PLAYING.value


def decide(store: Store, cid: int, verdict: str | None, margin: float | None,
           interval: tuple[float | None, float | None] | None, error: str | None = None,
           event: dict[str, Any] | None = None, user_id: int | None = None) -> bool:
    """A challenge's end: its verdict (better, not_better, undecided) and estimate, or failed with
    ``error``; with ``event``, the "challenge.verdict" notification for ``user_id`` in the same
    transaction (told once, even if the process dies right after). False when it had ended already
    (decided once)."""
    assert verdict is None or verdict in VERDICTS
    low, high = interval if interval is not None else (None, None)
    with store.engine.begin() as conn:
        done = conn.execute(update(Challenge).where(Challenge.id == cid, Challenge.status.in_(OPEN)).values(
            status=ChallengeStatus.FAILED.value if error else ChallengeStatus.DECIDED.value, verdict=verdict,
            margin=_finite(margin), interval_low=_finite(low), interval_high=_finite(high), error=error,
            finished_at=utcnow()))
        if done.rowcount and event is not None:  # JSON has no infinity: an unbounded interval's end is null
            event = {**event, "margin": _finite(margin), "interval": [_finite(low), _finite(high)] if interval else None}
            notices.enqueue(conn, "challenge.verdict", user_id, event, key=f"challenge:{cid}")
    return bool(done.rowcount)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def forget_unsettled(store: Store, games_tid: int, after: int) -> int:
    """Delete a challenge's game rows past game ``after`` (a pair a stopped server left half
    played: it is played again from its seed); how many."""
    with store.engine.begin() as conn:
        return conn.execute(delete(Game).where(Game.tournament_id == games_tid, Game.number > after)).rowcount or 0


def game_numbers(store: Store, games_tid: int) -> list[int]:
    """The numbers of a challenge's stored games (done or failed), in order."""
    with store.session() as s:
        return list(s.scalars(select(Game.number).where(Game.tournament_id == games_tid,
                                                        Game.status.in_((GameStatus.DONE.value, GameStatus.FAILED.value)))
                              .order_by(Game.number)))


def start_game(store: Store, games_tid: int, number: int, deck_seed: int, seat_bots: list[int]) -> GameTask:
    """A challenge game's row, running (attempt 1), before it is played in this process; its
    GameTask, for Store.finish or Store.fail."""
    with store.engine.begin() as conn:
        conn.execute(delete(Game).where(Game.tournament_id == games_tid, Game.number == number))
        gid = conn.execute(insert(Game).values(
            tournament_id=games_tid, number=number, round=1, set_number=(number + 1) // 2, deck_seed=deck_seed,
            seat_bots=seat_bots, status=GameStatus.RUNNING.value, attempt=1, started_at=utcnow())).inserted_primary_key[0]
    return GameTask(int(gid), number, 1, 1, (number + 1) // 2, deck_seed, tuple(seat_bots))
