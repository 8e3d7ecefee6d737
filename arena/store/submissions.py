"""Bots submitted through the web: a row per submission (checking, then accepted or rejected),
and an accepted one's entry into its ladder. Entering is one transaction: the new version joins
the pool as bot ``USER.vN``, every other version of the user's bot leaves it (inactive, its games
and ratings kept), and the submission is marked accepted."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update

from ..rating.ratings import default_rating
from .models import Bot, Rating, Submission, SubmissionStatus, Tournament, User, iso_utc, utcnow
from .store import Store

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


def bot_name(user: str, version: int) -> str:
    """The ladder's name for version ``version`` of ``user``'s bot."""
    return f"{user}.v{version}"


def new_submission(store: Store, user_id: int, tid: int, archive: str, command: str) -> SubmissionRow:
    """A submission being checked, with the user's next version number for that ladder."""
    with store.session() as s, s.begin():
        last = s.scalar(select(func.max(Submission.version))
                        .where(Submission.user_id == user_id, Submission.tournament_id == tid)) or 0
        row = Submission(user_id=user_id, tournament_id=tid, version=last + 1, archive=archive, command=command,
                         status=SubmissionStatus.CHECKING.value)
        s.add(row)
        s.flush()
        sid = row.id
    found = submission(store, sid)
    assert found is not None
    return found


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
    with store.session() as s, s.begin():
        s.execute(update(Submission).where(Submission.id == sid, Submission.status == SubmissionStatus.CHECKING.value)
                  .values(status=SubmissionStatus.REJECTED.value, reason=reason, report=_tail(report),
                          finished_at=utcnow()))


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
        position = (s.scalar(select(func.max(Bot.position)).where(Bot.tournament_id == sub.tournament_id)) or -1) + 1
        bot = Bot(tournament_id=sub.tournament_id, position=position, name=name, spec=sub.command, cwd=None, env={},
                  active=True, archive=sub.archive)
        s.add(bot)
        s.flush()
        s.add(Rating(bot_id=bot.id, mu=start.mu, sigma=start.sigma, games=0))
        sub.status, sub.bot_id, sub.report, sub.finished_at = (SubmissionStatus.ACCEPTED.value, bot.id,
                                                               _tail(report), utcnow())
    return name


def _tail(report: str | None) -> str | None:
    if report is None or len(report) <= REPORT_CHARS:
        return report
    return "...\n" + report[-REPORT_CHARS:]



def owner_of(store: Store, bot_id: int) -> int | None:
    """The user whose accepted submission bot ``bot_id`` is (None: a bot of the operator's)."""
    with store.session() as s:
        return s.scalar(select(Submission.user_id).where(Submission.bot_id == bot_id))
