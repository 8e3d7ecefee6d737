"""The arena's tables (SQLAlchemy 2 declarative models). The schema itself is owned by the
Alembic migrations in ``arena/migrations``; a test checks the two agree."""

from __future__ import annotations

import enum
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def as_utc(moment: datetime | None) -> datetime | None:
    """A stored time with its zone: SQLite hands datetimes back naive, and the arena writes UTC."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=timezone.utc)


def iso_utc(moment: datetime | None) -> str | None:
    """A stored time as people and JSON read it (``2026-12-01T21:27:22+00:00``), None for none."""
    moment = as_utc(moment)
    return moment.isoformat(timespec="seconds") if moment is not None else None


class Base(DeclarativeBase):
    pass


class GameStatus(str, enum.Enum):
    """A game's life: pending -> running -> done, or failed when the referee itself could not
    play it (a bot's misbehaviour is a *done* game with a forfeit, not a failed one)."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class Tournament(Base):
    __tablename__ = "tournaments"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    fingerprint: Mapped[str] = mapped_column(String(64))  # the settings the games were scheduled with
    settings: Mapped[dict[str, Any]] = mapped_column(JSON)
    rated_through: Mapped[int] = mapped_column(Integer, default=0)  # ratings include games 1..rated_through
    rounds: Mapped[int] = mapped_column(Integer, default=0)  # rounds scheduled (1 for a round robin)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Bot(Base):
    __tablename__ = "bots"
    __table_args__ = (UniqueConstraint("tournament_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer)  # the bot's index in schedules, fixed once given
    name: Mapped[str] = mapped_column(String(64))
    spec: Mapped[str] = mapped_column(Text)
    cwd: Mapped[str | None] = mapped_column(Text, nullable=True)
    env: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
    active: Mapped[bool] = mapped_column(default=True)  # removed bots keep their games and ratings
    archive: Mapped[str | None] = mapped_column(String(64), nullable=True)  # sha256 of its BotArchive, if any
    added_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # the tournament's last game number when the bot last entered the pool (added, accepted, or
    # activated again); its games after it are its first games there (None: from the start)
    # (deferred: read only where asked, so the reading commands still read a schema before 0011)
    entered_after: Mapped[int | None] = mapped_column(Integer, nullable=True, deferred=True)


class Game(Base):
    __tablename__ = "games"
    __table_args__ = (UniqueConstraint("tournament_id", "number"),
                      # the newest finished game (every page's freshness) without reading rows, whose records are long
                      Index("ix_games_finished", "tournament_id", "finished_at"),
                      Index("ix_games_tournament_status", "tournament_id", "status"))  # counts by status without reading records

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)  # play and rating order
    round: Mapped[int] = mapped_column(Integer, default=1)
    set_number: Mapped[int] = mapped_column(Integer)  # duplicate set: same pairing, same deck
    deck_seed: Mapped[int] = mapped_column(BigInteger)
    seat_bots: Mapped[list[int]] = mapped_column(JSON)  # bot positions per seat
    status: Mapped[str] = mapped_column(String(16), default=GameStatus.PENDING.value, index=True)
    attempt: Mapped[int] = mapped_column(Integer, default=0)  # how many times it was started
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)  # casino.v1.GameResult as JSON
    record: Mapped[str | None] = mapped_column(Text, nullable=True)  # the referee's game record, JSON text
    error: Mapped[str | None] = mapped_column(Text, nullable=True)  # why a failed game failed
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    job_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)  # the queue job playing it (--queue)
    worker: Mapped[str | None] = mapped_column(String(255), nullable=True)  # host:pid of who played it last
    # attempts the platform (not a bot, not the referee's logic) could not play: a full disk, no
    # descriptors, a sandbox that would not start (referee.errors.PlatformFault); bounded, then failed
    platform_faults: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class WorkerPause(Base):
    """An `arena worker` that stopped taking games after a platform fault (a full disk under its
    bot logs, no file descriptors left...), until its check of the condition passes: written when
    it pauses and at each failed check, deleted when it resumes or stops (arena/play/pause.py).
    ``arena status`` lists the paused workers whose queue heartbeat is recent."""

    __tablename__ = "worker_pauses"

    worker: Mapped[str] = mapped_column(String(255), primary_key=True)  # its name (host:pid by default)
    queue_worker_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)  # procrastinate_workers.id
    condition: Mapped[str] = mapped_column(String(16))  # PlatformFault.condition: disk, descriptors, ...
    reason: Mapped[str] = mapped_column(Text)  # the fault's one line
    since: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    next_check_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class GameSeat(Base):
    """One seat of a finished game: which bot sat there and how it came out, as indexed columns, so
    a game list filtered by bot, result or forfeit reads an index instead of every game's JSON.
    Written with the game's result (Store.finish, Store.fail) and, for older databases, by the
    migration that added it (arena/store/game_seats.py)."""

    __tablename__ = "game_seats"
    __table_args__ = (
        ForeignKeyConstraint(["tournament_id", "game_number"], ["games.tournament_id", "games.number"],
                             ondelete="CASCADE"),
        Index("ix_game_seats_bot", "tournament_id", "bot_position", "game_number"),
        Index("ix_game_seats_bot_outcome", "tournament_id", "bot_position", "outcome", "game_number"),
        Index("ix_game_seats_forfeited", "tournament_id", "forfeited", "game_number"),
    )

    tournament_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    game_number: Mapped[int] = mapped_column(Integer, primary_key=True)
    seat: Mapped[int] = mapped_column(Integer, primary_key=True)
    bot_position: Mapped[int] = mapped_column(Integer)
    outcome: Mapped[str | None] = mapped_column(String(8), nullable=True)  # win, draw, loss; None: a failed game
    forfeited: Mapped[bool] = mapped_column(Boolean)  # this seat forfeited the game
    forfeit: Mapped[str | None] = mapped_column(String(16), nullable=True)  # its standings column (FORFEIT_KINDS)
    failures: Mapped[int] = mapped_column(Integer)  # this seat's failures, forfeiting or answered by a random move
    # what standings sum (None for a failed game): the side it scored for, its rank, its side's final score
    side: Mapped[int | None] = mapped_column(Integer, nullable=True)
    rank: Mapped[int | None] = mapped_column(Integer, nullable=True)
    points: Mapped[int | None] = mapped_column(Integer, nullable=True)


class Rating(Base):
    """A bot's current TrueSkill rating: the result of every game up to ``Tournament.rated_through``."""

    __tablename__ = "ratings"

    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id", ondelete="CASCADE"), primary_key=True)
    mu: Mapped[float] = mapped_column(Float)
    sigma: Mapped[float] = mapped_column(Float)
    games: Mapped[int] = mapped_column(Integer, default=0)


class RatingHistory(Base):
    """A bot's rating after each of its games."""

    __tablename__ = "rating_history"
    __table_args__ = (UniqueConstraint("tournament_id", "game_number", "bot_id"),
                      Index("ix_rating_history_bot", "bot_id", "game_number"))  # one bot's history (its web page)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id", ondelete="CASCADE"), index=True)
    game_number: Mapped[int] = mapped_column(Integer)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id", ondelete="CASCADE"))
    mu: Mapped[float] = mapped_column(Float)
    sigma: Mapped[float] = mapped_column(Float)


class RunLease(Base):
    """Which process is playing a tournament's games (`arena run` or `arena serve`): at most one
    at a time, so a second process cannot put the first one's running games back to pending.
    The holder renews ``heartbeat_at``; a lease whose holder died is taken over (arena/lease.py)."""

    __tablename__ = "run_leases"

    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id", ondelete="CASCADE"), primary_key=True)
    owner: Mapped[str] = mapped_column(String(32))  # a random id per holding process
    command: Mapped[str] = mapped_column(String(16))  # "run" or "serve"
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    heartbeat_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class BotArchive(Base):
    """A bot's files as a .tar.gz, stored once by content hash, so queue workers on other machines
    can run it (arena/play/archives.py unpacks it into a local cache)."""

    __tablename__ = "bot_archives"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    content: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LiveGame(Base):
    """A game being played now, as far as it has got: written by whoever plays it (the runner of
    `arena run`/`arena serve`, or a queue worker) at most every few hundred ms while plays happen,
    deleted when it is stored or failed; a row is only live while its game is running with the
    same attempt (a crashed player's rows are trimmed, and never shown). arena/play/live.py."""

    __tablename__ = "live_games"

    game_id: Mapped[int] = mapped_column(ForeignKey("games.id", ondelete="CASCADE"), primary_key=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id", ondelete="CASCADE"), index=True)
    attempt: Mapped[int] = mapped_column(Integer)  # the game's attempt that wrote it
    plays: Mapped[int] = mapped_column(Integer)  # plays made so far
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    record: Mapped[str] = mapped_column(Text)  # the referee's record so far (JSON text, "result": null)


class User(Base):
    """Someone the web app knows: a name and the sha256 of their token (the token itself is shown
    once, when the user is added, and never stored). Removed users stay (inactive) for their
    submissions."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32), unique=True)
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    active: Mapped[bool] = mapped_column(default=True)
    operator: Mapped[bool] = mapped_column(default=False, server_default=false())  # sees every bot's private pages


class SubmissionStatus(str, enum.Enum):
    """A submitted bot's life: checking -> accepted (it joined the ladder) or rejected."""

    CHECKING = "checking"
    ACCEPTED = "accepted"
    REJECTED = "rejected"


class Submission(Base):
    """A bot archive a user sent to a ladder through the web, its conformance check and verdict.
    ``version`` counts the user's submissions to that ladder; an accepted one is bot ``bot_id``."""

    __tablename__ = "submissions"
    __table_args__ = (UniqueConstraint("user_id", "tournament_id", "version"),
                      Index("ix_submissions_user_created", "user_id", "created_at"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id", ondelete="CASCADE"), index=True)
    version: Mapped[int] = mapped_column(Integer)
    archive: Mapped[str] = mapped_column(String(64))  # sha256 of its BotArchive
    command: Mapped[str] = mapped_column(Text)  # run at the archive's root
    status: Mapped[str] = mapped_column(String(16), default=SubmissionStatus.CHECKING.value, index=True)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)  # why it was rejected, one line
    report: Mapped[str | None] = mapped_column(Text, nullable=True)  # the check's output, as it printed it
    bot_id: Mapped[int | None] = mapped_column(ForeignKey("bots.id", ondelete="SET NULL"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # what it keeps, for its user's quota: its archive, and the archive unpacked while it may play
    archive_bytes: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    unpacked_bytes: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    pruned_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)  # archive deleted


class ChallengeStatus(str, enum.Enum):
    """A challenge's life: waiting (no game yet) -> playing -> decided, or failed when the referee
    itself could not play one of its games (a bot's misbehaviour is a result, not a failure)."""

    WAITING = "waiting"
    PLAYING = "playing"
    DECIDED = "decided"
    FAILED = "failed"


class Challenge(Base):
    """An unrated match a user asked for: one of their bots (the challenger) against another bot of
    the ladder in duplicate pairs, a number of pairs or until the sequential test decides. Its
    games live in a tournament of their own (``games_tournament_id``), so no rating, standing or
    pairing of the ladder ever reads them (arena/store/challenges.py)."""

    __tablename__ = "challenges"
    __table_args__ = (Index("ix_challenges_user_created", "user_id", "created_at"),
                      Index("ix_challenges_tournament_status", "tournament_id", "status"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=True)  # None: the operator's
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id", ondelete="CASCADE"))  # the ladder
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id", ondelete="CASCADE"))  # the challenger
    opponent_id: Mapped[int] = mapped_column(ForeignKey("bots.id", ondelete="CASCADE"))
    games_tournament_id: Mapped[int | None] = mapped_column(ForeignKey("tournaments.id", ondelete="SET NULL"),
                                                            nullable=True)
    pairs_asked: Mapped[int | None] = mapped_column(Integer, nullable=True)  # None: until the test decides
    max_pairs: Mapped[int] = mapped_column(Integer)  # the cap of "until decided" (pairs_asked when given)
    seed: Mapped[int] = mapped_column(BigInteger)
    unit: Mapped[str] = mapped_column(String(8))  # deals or games (arena/play/compare.py)
    bounds: Mapped[dict[str, Any]] = mapped_column(JSON)  # the sequential test's SprtBounds
    status: Mapped[str] = mapped_column(String(16), default=ChallengeStatus.WAITING.value)
    verdict: Mapped[str | None] = mapped_column(String(16), nullable=True)  # better, not_better, undecided
    margin: Mapped[float | None] = mapped_column(Float, nullable=True)  # points per deal (deals) or Elo (games)
    interval_low: Mapped[float | None] = mapped_column(Float, nullable=True)
    interval_high: Mapped[float | None] = mapped_column(Float, nullable=True)
    games_played: Mapped[int] = mapped_column(Integer, default=0)
    games_failed: Mapped[int] = mapped_column(Integer, default=0)  # games where a bot failed (forfeit or replaced move)
    pairs: Mapped[list[Any]] = mapped_column(JSON, default=list)  # each finished pair, to resume the test
    error: Mapped[str | None] = mapped_column(Text, nullable=True)  # why a failed challenge failed
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class Webhook(Base):
    """Where a user's notifications go (``user_id`` None: the operator's, for everyone's events):
    an http(s) URL and the secret its deliveries are signed with (arena/notify/)."""

    __tablename__ = "webhooks"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=True,
                                                unique=True)
    url: Mapped[str] = mapped_column(Text)
    secret: Mapped[str] = mapped_column(String(64))  # HMAC-SHA256 key of its deliveries, shown once when set
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class NotifySettings(Base):
    """The operator's notification settings (one row, id 1; none: the defaults of arena/notify/)."""

    __tablename__ = "notify_settings"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    crash_streak: Mapped[int] = mapped_column(Integer)  # failures in a row that make a bot.crash_streak event
    allow_private: Mapped[bool] = mapped_column(Boolean)  # webhooks may point at loopback/private addresses


class NotificationEvent(Base):
    """An event to tell (the outbox): written in the transaction that makes it, or one of its own;
    ``key`` makes an event that must be told once (a streak) unique."""

    __tablename__ = "notification_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    event: Mapped[str] = mapped_column(String(64))
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=True)
    key: Mapped[str | None] = mapped_column(String(200), nullable=True, unique=True)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class NotificationDelivery(Base):
    """One event to one webhook: claimed by a deliverer until ``claimed_until`` (a lease), then
    delivered, or tried again at ``next_attempt_at``, or given up after the last attempt."""

    __tablename__ = "notification_deliveries"
    __table_args__ = (Index("ix_notification_deliveries_due", "delivered_at", "gave_up_at", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    event_id: Mapped[int] = mapped_column(ForeignKey("notification_events.id", ondelete="CASCADE"), index=True)
    webhook_id: Mapped[int] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"), index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    claimed_by: Mapped[str | None] = mapped_column(String(32), nullable=True)
    claimed_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    delivered_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    gave_up_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
