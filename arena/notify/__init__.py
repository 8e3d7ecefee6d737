"""Notifications: events (a submission's verdict, a challenge's verdict, a bot's crash streak) told
to users' and the operator's webhooks as signed JSON, at least once, never on a game's path
(docs/notifications.md).

``notify`` writes an event to the outbox in the database (arena/store/notices.py), in the caller's
transaction or one of its own; a deliverer (``Deliverer``, run by ``arena notify deliver`` and by
``arena web --submit``) sends it later, with retries."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from ..store import notices
from ..store.store import Store

EVENTS = ("submission.verdict", "challenge.verdict", "bot.crash_streak")


def notify(store: Store | Connection, event: str, user_id: int | None, data: dict[str, Any],
           key: str | None = None) -> int | None:
    """Enqueue ``event`` for ``user_id`` (None: the operator's webhook only) with ``data``: on a
    connection, in its transaction; on a store, in a transaction of its own. Its event id (None: an
    event of the same ``key`` was enqueued before, so it is told once)."""
    if event not in EVENTS:
        raise ValueError(f"unknown event {event!r}: one of {', '.join(EVENTS)}")
    if isinstance(store, Connection):
        return notices.enqueue(store, event, user_id, data, key)
    with store.engine.begin() as conn:
        return notices.enqueue(conn, event, user_id, data, key)
