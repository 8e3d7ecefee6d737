"""Bots submitted through the web: a row per submission (checking, then accepted or rejected),
and an accepted one's entry into its ladder. Entering is one transaction: the new version joins
the pool as bot ``USER.vN``, every other version of the user's bot leaves it (inactive, its games
and ratings kept), and the submission is marked accepted.

A new submission is one transaction too, under a lock on its user (``new_submission``): the user's
limits (``SubmissionLimits``: checks in flight, submissions an hour, bytes kept) are counted and the
next version number taken there, so a burst of one user's submissions can neither pass the limits
together nor take one version twice. ``prune`` deletes the archives of old rejected submissions."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, case, delete, func, insert, select, update

from ..errors import ArenaError
from ..rating.ratings import default_rating
from .models import (Bot, BotArchive, Game, Rating, Submission, SubmissionStatus, Tournament, User, as_utc, iso_utc,
                     utcnow)
from .notices import enqueue
from .store import Store

MIB = 1 << 20
HOUR = timedelta(hours=1)
IN_FLIGHT_RETRY_S = 30  # Retry-After of a refusal for checks in flight: about one check's length

REPORT_CHARS = 64 * 1024  # of the check's output kept (its end: the verdict is last)


@dataclass(frozen=True, slots=True)
class SubmissionRow:
    id: int
    user_id: int
    user: str
    tournament: str
    version: int
    archive: str
    command: str
    status: str
    reason: str | None
    report: str | None
    bot: str | None
    created_at: datetime
    finished_at: datetime | None

    def to_dict(self) -> dict[str, Any]:
        """As the submission page's JSON gives it."""
        return {"id": self.id, "user": self.user, "tournament": self.tournament, "version": self.version,
                "bot": self.bot, "archive_sha256": self.archive, "command": self.command, "status": self.status,
                "reason": self.reason, "report": self.report,
                "created_at": iso_utc(self.created_at), "finished_at": iso_utc(self.finished_at)}


@dataclass(frozen=True)
class SubmissionLimits:
    """What one user may have (docs/web.md, "Security model"; the operator's flags of `arena web`)."""

    in_flight: int = 2  # submissions waiting for or in their check
    per_hour: int = 10  # submissions in the last hour, whatever became of them
    kept_bytes: int = 256 * MIB  # stored archives, plus the unpacked copies of those that may play


class SubmissionRefused(ArenaError):
    """A user's submission over one of their limits: one line, the HTTP status it answers with,
    and when to try again (None: not by waiting)."""

    def __init__(self, reason: str, status: int, retry_after_s: int | None = None) -> None:
        super().__init__(reason)
        self.status, self.retry_after_s = status, retry_after_s


def bot_name(user: str, version: int) -> str:
    """The ladder's name for version ``version`` of ``user``'s bot."""
    return f"{user}.v{version}"


def new_submission(store: Store, user_id: int, tid: int, archive: str, content: bytes, unpacked_bytes: int,
                   command: str, limits: SubmissionLimits = SubmissionLimits()) -> SubmissionRow:
    """A submission being checked, with the user's next version number for that ladder, its
    archive stored (once); SubmissionRefused when it would take the user over ``limits``. One
    transaction, under a lock on the user: concurrent submissions of one user are counted in turn."""
    with store.engine.begin() as conn:
        lock_user(conn, user_id)
        now = utcnow()
        refuse_over_limits(conn, user_id, limits, len(content) + unpacked_bytes, now)
        if conn.scalar(select(BotArchive.sha256).where(BotArchive.sha256 == archive)) is None:
            conn.execute(insert(BotArchive).values(sha256=archive, size=len(content), content=content,
                                                   created_at=now))
        last = conn.scalar(select(func.max(Submission.version))
                           .where(Submission.user_id == user_id, Submission.tournament_id == tid)) or 0
        sid = conn.execute(insert(Submission).values(
            user_id=user_id, tournament_id=tid, version=last + 1, archive=archive, command=command,
            status=SubmissionStatus.CHECKING.value, created_at=now, archive_bytes=len(content),
            unpacked_bytes=unpacked_bytes)).inserted_primary_key[0]
    found = submission(store, int(sid))
    assert found is not None
    return found


def refuse_over_limits(conn: Connection, user_id: int, limits: SubmissionLimits, adds: int,
                       now: datetime | None = None) -> None:
    """SubmissionRefused when one more submission of ``adds`` bytes (archive and unpacked) would
    take ``user_id`` over ``limits``: checks in flight, submissions in the last hour, bytes kept.
    Without the user's lock (``new_submission`` holds it) it is a cheap early answer only."""
    now = now or utcnow()
    mine = Submission.user_id == user_id
    in_flight = conn.scalar(select(func.count()).select_from(Submission)
                            .where(mine, Submission.status == SubmissionStatus.CHECKING.value)) or 0
    if in_flight >= limits.in_flight:
        raise SubmissionRefused(f"you have {in_flight} submission(s) being checked, as many as a user may: wait "
                                "for a verdict, then send this one", 429, IN_FLIGHT_RETRY_S)
    hour = list(conn.scalars(select(Submission.created_at).where(mine, Submission.created_at > now - HOUR)
                             .order_by(Submission.created_at)))
    if len(hour) >= limits.per_hour:
        wait = max(timedelta(seconds=1), (as_utc(hour[0]) or now) + HOUR - now)
        raise SubmissionRefused(f"you sent {len(hour)} submissions in the last hour, as many as a user may: try "
                                f"again in {math.ceil(wait.total_seconds() / 60)} minute(s)", 429,
                                math.ceil(wait.total_seconds()))
    kept = kept_bytes(conn, user_id)
    if kept + max(adds, 1) > limits.kept_bytes:  # (adds 0: the early answer, for a user already full)
        adding = f" and this one would add {_size(adds)}" if adds else ""
        raise SubmissionRefused(f"your submissions keep {_size(kept)}{adding}: a user may keep "
                                f"{_size(limits.kept_bytes)} (the operator prunes old rejected ones: arena "
                                "submissions prune)", 403)


def _size(count: int) -> str:
    return f"{count / MIB:.1f} MiB" if count >= MIB else f"{count / 1024:.1f} KiB"


def precheck(store: Store, user_id: int, limits: SubmissionLimits) -> None:
    """``refuse_over_limits`` before an upload is read and checked: a user at a limit costs no more."""
    with store.engine.connect() as conn:
        refuse_over_limits(conn, user_id, limits, 0)


def lock_user(conn: Connection, user_id: int) -> None:
    """Hold ``user_id``'s row (PostgreSQL) or the database's write lock (SQLite) to the
    transaction's end: another submission (or challenge) of the user waits here, then counts this one."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        conn.execute(select(User.id).where(User.id == user_id).with_for_update())


def kept_bytes(conn: Connection, user_id: int) -> int:
    """What a user's submissions keep: every stored (unpruned) archive, and the unpacked copy of
    each one that is not rejected (a rejected one's copy is removed at its verdict)."""
    kept = Submission.archive_bytes + case((Submission.status == SubmissionStatus.REJECTED.value, 0),
                                           else_=Submission.unpacked_bytes)
    total = conn.scalar(select(func.coalesce(func.sum(kept), 0))
                        .where(Submission.user_id == user_id, Submission.pruned_at.is_(None)))
    return int(total or 0)


def submission(store: Store, sid: int) -> SubmissionRow | None:
    with store.session() as s:
        found = s.execute(select(Submission, User.name, Tournament.name, Bot.name)
                          .join(User, User.id == Submission.user_id)
                          .join(Tournament, Tournament.id == Submission.tournament_id)
                          .outerjoin(Bot, Bot.id == Submission.bot_id)
                          .where(Submission.id == sid)).first()
    if found is None:
        return None
    sub, user, tournament, bot = found
    return SubmissionRow(sub.id, sub.user_id, user, tournament, sub.version, sub.archive, sub.command, sub.status,
                         sub.reason, sub.report, bot, sub.created_at, sub.finished_at)


def submissions_of(store: Store, user_id: int) -> list[SubmissionRow]:
    """A user's submissions, newest first."""
    with store.session() as s:
        ids = list(s.scalars(select(Submission.id).where(Submission.user_id == user_id)
                             .order_by(Submission.id.desc())))
    return [row for sid in ids if (row := submission(store, sid)) is not None]


def checking(store: Store, tid: int) -> list[int]:
    """Submissions to ladder ``tid`` whose check has not ended (a server stopped during it), oldest first."""
    with store.session() as s:
        return list(s.scalars(select(Submission.id).where(Submission.tournament_id == tid,
                                                          Submission.status == SubmissionStatus.CHECKING.value)
                              .order_by(Submission.id)))


def reject(store: Store, sid: int, reason: str, report: str | None) -> None:
    """Reject ``sid`` with ``reason``, and enqueue its ``submission.verdict`` event in that transaction."""
    with store.session() as s, s.begin():
        done = s.execute(update(Submission).where(Submission.id == sid,
                                                  Submission.status == SubmissionStatus.CHECKING.value)
                         .values(status=SubmissionStatus.REJECTED.value, reason=reason, report=_tail(report),
                                 finished_at=utcnow()))
        if done.rowcount:
            sub = s.get(Submission, sid)
            assert sub is not None
            _tell_verdict(s.connection(), sub, None)


def _tell_verdict(conn: Connection, sub: Submission, bot: str | None) -> None:
    """The ``submission.verdict`` event of ``sub`` for its user (docs/notifications.md)."""
    ladder = conn.scalar(select(Tournament.name).where(Tournament.id == sub.tournament_id))
    enqueue(conn, "submission.verdict", sub.user_id, {
        "submission": sub.id, "tournament": ladder, "version": sub.version, "status": sub.status, "bot": bot,
        "reason": sub.reason, "url": f"/submissions/{sub.id}"})


def accept(store: Store, sid: int, report: str | None) -> str:
    """Enter submission ``sid``'s bot into its ladder and retire the user's other versions (one
    transaction); the new bot's name. Its command runs at the archive's root (``cwd`` None)."""
    start = default_rating()
    with store.session() as s, s.begin():
        sub = s.get(Submission, sid)
        assert sub is not None and sub.status == SubmissionStatus.CHECKING.value
        user = s.get(User, sub.user_id)
        assert user is not None
        name = bot_name(user.name, sub.version)
        older = select(Submission.bot_id).where(Submission.user_id == sub.user_id,
                                                Submission.tournament_id == sub.tournament_id,
                                                Submission.bot_id.is_not(None))
        s.execute(update(Bot).where(Bot.id.in_(older)).values(active=False))
        position = s.scalar(select(func.coalesce(func.max(Bot.position), -1))
                            .where(Bot.tournament_id == sub.tournament_id)) + 1
        entered = s.scalar(select(func.max(Game.number)).where(Game.tournament_id == sub.tournament_id)) or 0
        bot = Bot(tournament_id=sub.tournament_id, position=position, name=name, spec=sub.command, cwd=None, env={},
                  active=True, archive=sub.archive, entered_after=entered)
        s.add(bot)
        s.flush()
        s.add(Rating(bot_id=bot.id, mu=start.mu, sigma=start.sigma, games=0))
        sub.status, sub.bot_id, sub.report, sub.finished_at = (SubmissionStatus.ACCEPTED.value, bot.id,
                                                               _tail(report), utcnow())
        s.flush()
        _tell_verdict(s.connection(), sub, name)
    return name


def _tail(report: str | None) -> str | None:
    if report is None or len(report) <= REPORT_CHARS:
        return report
    return "...\n" + report[-REPORT_CHARS:]



def owner_of(store: Store, bot_id: int) -> int | None:
    """The user whose accepted submission bot ``bot_id`` is (None: a bot of the operator's)."""
    with store.session() as s:
        return s.scalar(select(Submission.user_id).where(Submission.bot_id == bot_id))


def archive_in_use(store: Store, sha256: str, besides: int) -> bool:
    """Whether archive ``sha256`` may still play here: a bot uses it, or a submission other than
    ``besides`` is checking or accepted with it."""
    with store.session() as s:
        if s.scalar(select(Bot.id).where(Bot.archive == sha256).limit(1)) is not None:
            return True
        return s.scalar(select(Submission.id).where(
            Submission.archive == sha256, Submission.id != besides,
            Submission.status != SubmissionStatus.REJECTED.value).limit(1)) is not None


@dataclass(frozen=True)
class Pruned:
    """What ``prune`` did: the submissions pruned, the archives deleted (their sha256) and their bytes."""

    submissions: int
    archives: list[str]
    freed_bytes: int


def prune(store: Store, older_than: timedelta, now: datetime | None = None) -> Pruned:
    """Delete the stored archives of rejected submissions whose verdict is older than
    ``older_than`` (each archive only when no bot and no other unpruned submission uses it); the
    submissions stay, marked pruned (their reports too: a user still sees why)."""
    cutoff = (now or utcnow()) - older_than
    with store.engine.begin() as conn:
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        old = conn.execute(select(Submission.id, Submission.archive).where(
            Submission.status == SubmissionStatus.REJECTED.value, Submission.pruned_at.is_(None),
            Submission.finished_at < cutoff)).all()
        ids = [sid for sid, _ in old]
        if ids:
            conn.execute(update(Submission).where(Submission.id.in_(ids)).values(pruned_at=utcnow()))
        deleted: list[str] = []
        freed = 0
        for sha in sorted({sha for _, sha in old}):
            used = conn.scalar(select(Bot.id).where(Bot.archive == sha).limit(1)) is not None or conn.scalar(
                select(Submission.id).where(Submission.archive == sha, Submission.pruned_at.is_(None)).limit(1)
            ) is not None
            if not used:
                size = conn.scalar(select(BotArchive.size).where(BotArchive.sha256 == sha))
                if size is not None:
                    conn.execute(delete(BotArchive).where(BotArchive.sha256 == sha))
                    deleted.append(sha)
                    freed += int(size)
    return Pruned(len(ids), deleted, freed)


def owned_positions(store: Store, tid: int, user_id: int) -> set[int]:
    """The positions, in tournament ``tid``, of the bots ``user_id`` submitted (every version)."""
    with store.session() as s:
        return set(s.scalars(select(Bot.position).join(Submission, Submission.bot_id == Bot.id)
                             .where(Submission.user_id == user_id, Bot.tournament_id == tid)))
