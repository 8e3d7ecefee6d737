"""The notifications' tables (arena/notify/ tells them): webhooks, the operator's settings, the
outbox of events and each event's deliveries, and the claim a deliverer takes on a delivery.

An event is a row written on the caller's connection, so it commits with what it tells (a
submission's verdict, a stored game) or not at all; it gets one delivery row per webhook that
wants it (its user's, and the operator's for everyone) at once. A deliverer claims a due delivery
with one ``UPDATE ... WHERE`` that re-checks the claim (unclaimed, or its lease past): of several
processes exactly one gets each row, and a row whose claimer died is due again when its lease ends.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, delete, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from .models import (Bot, GameSeat, NotificationDelivery, NotificationEvent, NotifySettings, Submission, Tournament,
                     Webhook, as_utc, iso_utc, utcnow)

DEFAULT_CRASH_STREAK = 3  # games in a row ended by the bot's process (crash, failed start, dropped stream)
STREAK_FORFEITS = ("crash", "startup")  # game_seats.forfeit of those games (a dropped stream counts as a crash)


@dataclass(frozen=True, slots=True)
class Settings:
    """The operator's notification settings (``arena notify settings``)."""

    crash_streak: int = DEFAULT_CRASH_STREAK
    allow_private: bool = False  # webhooks may point at loopback and private addresses


@dataclass(frozen=True, slots=True)
class Due:
    """A delivery a deliverer has claimed: the event to send and where."""

    id: int
    event_id: int
    event: str
    created_at: datetime
    data: dict[str, Any]
    url: str
    secret: str
    attempts: int


def settings(conn: Connection) -> Settings:
    row = conn.execute(select(NotifySettings.crash_streak, NotifySettings.allow_private)
                       .where(NotifySettings.id == 1)).first()
    return Settings(int(row[0]), bool(row[1])) if row else Settings()


def set_settings(conn: Connection, new: Settings) -> None:
    conn.execute(delete(NotifySettings).where(NotifySettings.id == 1))
    conn.execute(insert(NotifySettings).values(id=1, crash_streak=new.crash_streak, allow_private=new.allow_private))


def webhook_of(conn: Connection, user_id: int | None) -> tuple[str, datetime] | None:
    """The webhook of ``user_id`` (None: the operator's for everyone): its URL and when it was set."""
    row = conn.execute(select(Webhook.url, Webhook.created_at).where(_whose(user_id))).first()
    return (row[0], as_utc(row[1]) or row[1]) if row else None


def set_webhook(conn: Connection, user_id: int | None, url: str) -> str:
    """Set (or replace) the webhook of ``user_id`` (None: the operator's); its new secret."""
    secret = secrets.token_hex(32)
    conn.execute(delete(Webhook).where(_whose(user_id)))
    conn.execute(insert(Webhook).values(user_id=user_id, url=url, secret=secret, created_at=utcnow()))
    return secret


def clear_webhook(conn: Connection, user_id: int | None) -> bool:
    return bool(conn.execute(delete(Webhook).where(_whose(user_id))).rowcount)


def _whose(user_id: int | None) -> Any:
    return Webhook.user_id.is_(None) if user_id is None else Webhook.user_id == user_id


def enqueue(conn: Connection, event: str, user_id: int | None, data: dict[str, Any], key: str | None = None) -> int | None:
    """Write event ``event`` for ``user_id`` (None: nobody's but the operator's) and a delivery to
    each webhook that wants it; its id, or None when an event of the same ``key`` was written before
    (an event told once): the insert does nothing then, and the caller's transaction goes on."""
    values = {"event": event, "user_id": user_id, "key": key, "data": data, "created_at": utcnow()}
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    event_id = conn.execute(dialect.insert(NotificationEvent).values(**values).on_conflict_do_nothing()
                            .returning(NotificationEvent.id)).scalar()
    if event_id is None:
        return None
    hooks = select(Webhook.id).where(or_(Webhook.user_id.is_(None), Webhook.user_id == user_id)
                                     if user_id is not None else Webhook.user_id.is_(None))
    rows = [{"event_id": event_id, "webhook_id": hook, "attempts": 0, "next_attempt_at": utcnow()}
            for hook in conn.scalars(hooks)]
    if rows:
        conn.execute(insert(NotificationDelivery), rows)
    return int(event_id)


def crash_streaks(conn: Connection, tid: int, number: int) -> list[int]:
    """After game ``number`` is stored: a ``bot.crash_streak`` event for each of its bots whose last
    N games (N: the operator's setting) all ended by its process and whose game before them did not,
    so a streak is told once, when it reaches N; the events' ids. Reads nothing more unless a seat of
    this game forfeited that way."""
    crashed = list(conn.scalars(select(GameSeat.bot_position).where(
        GameSeat.tournament_id == tid, GameSeat.game_number == number,
        GameSeat.forfeit.in_(STREAK_FORFEITS)).distinct()))
    if not crashed:
        return []
    n = settings(conn).crash_streak
    told = []
    for position in crashed:
        recent = conn.execute(select(GameSeat.game_number, GameSeat.forfeit).where(
            GameSeat.tournament_id == tid, GameSeat.bot_position == position, GameSeat.game_number <= number)
            .order_by(GameSeat.game_number.desc()).limit(n + 1)).all()
        streak = [g for g, forfeit in recent[:n] if forfeit in STREAK_FORFEITS]
        before = recent[n][1] if len(recent) > n else None
        if len(streak) < n or before in STREAK_FORFEITS:
            continue
        bot = conn.execute(select(Bot.id, Bot.name).where(Bot.tournament_id == tid, Bot.position == position)).first()
        t_name = conn.scalar(select(Tournament.name).where(Tournament.id == tid))
        if bot is None or t_name is None:
            continue
        owner = conn.scalar(select(Submission.user_id).where(Submission.bot_id == bot[0]))
        games = sorted(streak)
        data = {"tournament": t_name, "bot": bot[1], "streak": n, "games": games,
                "kinds": [f for _, f in sorted(recent[:n])], "url": f"/t/{t_name}/owner/{bot[1]}"}
        event_id = enqueue(conn, "bot.crash_streak", owner, data, key=f"bot.crash_streak:{tid}:{position}:{games[0]}")
        if event_id is not None:
            told.append(event_id)
    return told


def _claimable(now: datetime) -> Any:
    return and_(NotificationDelivery.delivered_at.is_(None), NotificationDelivery.gave_up_at.is_(None),
                NotificationDelivery.next_attempt_at <= now,
                or_(NotificationDelivery.claimed_until.is_(None), NotificationDelivery.claimed_until < now))


def claim(conn: Connection, owner: str, lease: timedelta, limit: int) -> list[Due]:
    """Claim up to ``limit`` due deliveries for ``owner`` until now + ``lease``: each by an UPDATE
    whose WHERE repeats the claim's condition, so another process that claimed it first wins."""
    now = utcnow()
    ids = list(conn.scalars(select(NotificationDelivery.id).where(_claimable(now))
                            .order_by(NotificationDelivery.id).limit(limit)))
    mine = [i for i in ids if conn.execute(update(NotificationDelivery).where(
        NotificationDelivery.id == i, _claimable(now)).values(claimed_by=owner, claimed_until=now + lease)).rowcount]
    if not mine:
        return []
    rows = conn.execute(select(NotificationDelivery.id, NotificationEvent.id, NotificationEvent.event,
                               NotificationEvent.created_at, NotificationEvent.data, Webhook.url, Webhook.secret,
                               NotificationDelivery.attempts)
                        .join(NotificationEvent, NotificationEvent.id == NotificationDelivery.event_id)
                        .join(Webhook, Webhook.id == NotificationDelivery.webhook_id)
                        .where(NotificationDelivery.id.in_(mine)).order_by(NotificationDelivery.id)).all()
    return [Due(r[0], r[1], r[2], as_utc(r[3]) or r[3], dict(r[4]), r[5], r[6], r[7]) for r in rows]


def delivered(conn: Connection, delivery: int, owner: str) -> bool:
    """Mark ``delivery`` delivered, if ``owner`` still holds it; whether it did."""
    return bool(conn.execute(update(NotificationDelivery).where(
        NotificationDelivery.id == delivery, NotificationDelivery.claimed_by == owner,
        NotificationDelivery.delivered_at.is_(None)).values(delivered_at=utcnow(), last_error=None)).rowcount)


def failed(conn: Connection, delivery: int, owner: str, error: str, retry_at: datetime | None) -> None:
    """One more failed attempt of ``delivery``: due again at ``retry_at``, or given up (None)."""
    values: dict[str, Any] = {"attempts": NotificationDelivery.attempts + 1, "last_error": error[:500],
                              "claimed_by": None, "claimed_until": None}
    values.update({"next_attempt_at": retry_at} if retry_at is not None else {"gave_up_at": utcnow()})
    conn.execute(update(NotificationDelivery).where(NotificationDelivery.id == delivery,
                                                    NotificationDelivery.claimed_by == owner).values(**values))


def deliveries(conn: Connection, user_id: int | None, limit: int = 50) -> list[dict[str, Any]]:
    """The newest deliveries to ``user_id``'s webhook (None: the operator's), as the settings page shows them."""
    rows = conn.execute(select(NotificationEvent.id, NotificationEvent.event, NotificationEvent.created_at,
                               NotificationDelivery.attempts, NotificationDelivery.delivered_at,
                               NotificationDelivery.gave_up_at, NotificationDelivery.last_error)
                        .join(NotificationDelivery, NotificationDelivery.event_id == NotificationEvent.id)
                        .join(Webhook, Webhook.id == NotificationDelivery.webhook_id)
                        .where(_whose(user_id)).order_by(NotificationDelivery.id.desc()).limit(limit)).all()
    return [{"event_id": r[0], "event": r[1], "created_at": iso_utc(r[2]), "attempts": r[3],
             "status": "delivered" if r[4] else "given_up" if r[5] else "waiting", "delivered_at": iso_utc(r[4]),
             "last_error": r[6]} for r in rows]


def events_of(conn: Connection, names: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Every event (of ``names``), oldest first: for the operator and tests."""
    query = select(NotificationEvent.id, NotificationEvent.event, NotificationEvent.user_id, NotificationEvent.data,
                   NotificationEvent.created_at).order_by(NotificationEvent.id)
    if names:
        query = query.where(NotificationEvent.event.in_(names))
    return [{"id": r[0], "event": r[1], "user_id": r[2], "data": r[3], "created_at": iso_utc(r[4])}
            for r in conn.execute(query)]
