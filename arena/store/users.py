"""The web app's users: names and token hashes. A token is 32 random bytes from ``secrets``, shown
once when the user is added; the database keeps only its sha256, and a token presented later is
hashed and compared with ``hmac.compare_digest``."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from ..errors import ArenaError, quoted
from .models import Submission, User
from .store import Store

TOKEN_BYTES = 32
# A user's name is their bot's name too ("alice" submits "alice.v1", "alice.v2"...): the characters
# of a bot name (arena/config.py) but no dot, so "NAME.vN" can only be one user's version N.
USER_NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")
MAX_TOKEN_CHARS = 200  # a presented token longer than this is not one of ours (no hashing of megabytes)


class UserError(ArenaError):
    """A users command that cannot be done: a bad or taken name, no such user."""


@dataclass(frozen=True, slots=True)
class UserRow:
    id: int
    name: str
    active: bool
    created_at: datetime
    submissions: int = 0
    operator: bool = False  # sees every bot's private pages (logs, errors, notes), not only their own


def token_hash(token: str) -> str:
    """What the database keeps of a token: its sha256, in hex."""
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def check_user_name(name: str) -> str:
    if not USER_NAME.fullmatch(name):
        raise UserError(f"a user name must be 1 to 32 of the characters A-Z a-z 0-9 _ -, not {quoted(name)}")
    return name


def add_user(store: Store, name: str, operator: bool = False) -> str:
    """Add user ``name`` (or give a removed one a new token and let them in again); their new token."""
    check_user_name(name)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    try:
        with store.session() as s, s.begin():
            existing = s.scalar(select(User).where(User.name == name))
            if existing is not None and existing.active:
                raise UserError(f"a user named {quoted(name)} exists already (remove them first for a new token)")
            if existing is not None:
                existing.token_sha256, existing.active, existing.operator = token_hash(token), True, operator
            else:
                s.add(User(name=name, token_sha256=token_hash(token), active=True, operator=operator))
    except IntegrityError:
        raise UserError(f"a user named {quoted(name)} was just added by someone else") from None
    return token


def remove_user(store: Store, name: str) -> None:
    """Take a user's access away (their token stops working at once); their submissions and bots stay."""
    with store.session() as s, s.begin():
        user = s.scalar(select(User).where(User.name == name, User.active.is_(True)))
        if user is None:
            raise UserError(f"no user named {quoted(name)}")
        user.active = False
        user.token_sha256 = secrets.token_hex(32)  # no token hashes to it: the old one is dead for good


def users(store: Store) -> list[UserRow]:
    with store.session() as s:
        counts = dict(s.execute(select(Submission.user_id, func.count()).group_by(Submission.user_id)).all())
        return [UserRow(u.id, u.name, u.active, u.created_at, counts.get(u.id, 0), u.operator)
                for u in s.scalars(select(User).order_by(User.name))]


def user_for_token(store: Store, token: str) -> UserRow | None:
    """The active user whose token this is, or None."""
    if not token or len(token) > MAX_TOKEN_CHARS:
        return None
    wanted = token_hash(token)
    with store.session() as s:
        user = s.scalar(select(User).where(User.token_sha256 == wanted, User.active.is_(True)))
    if user is None or not hmac.compare_digest(user.token_sha256, wanted):
        return None
    return UserRow(user.id, user.name, user.active, user.created_at, operator=user.operator)


def active_user(store: Store, user_id: int) -> UserRow | None:
    """User ``user_id`` if they may still log in (a session outlives nobody's removal)."""
    with store.session() as s:
        user = s.get(User, user_id)
    if user is None or not user.active:
        return None
    return UserRow(user.id, user.name, user.active, user.created_at, operator=user.operator)
