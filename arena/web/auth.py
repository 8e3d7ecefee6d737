"""Who is asking: a user's token as ``Authorization: Bearer TOKEN`` (the API), or a session cookie
set by /login (the browser), and the CSRF token every form carries.

The session cookie holds ``payload.signature``: the payload (the user's id or none, the user's
session epoch, the session's CSRF token, when it was issued) signed with HMAC-SHA256 under a
secret made when the app starts (``secrets``, never stored): a restart logs everyone out, and
nothing secret has to be kept on disk. The cookie is HttpOnly and SameSite=Strict (Secure over
https, or always when the public URL is https). Every POST from a session must carry the
session's CSRF token in the hidden field ``csrf`` (checked with ``hmac.compare_digest``); only a
request whose bearer token is a user's needs none, as a browser never adds that header by itself
(an Authorization header of another scheme is no token at all). With ``WebSettings.private``
every page but /login and the stylesheet needs a user.

Logging out ends the user's sessions on the server, not only in the browser that asked: it moves
the user's session epoch on (``SessionKeys.end_sessions``), and a cookie of an older epoch is
nobody's, in every browser the user logged in from. The epochs are kept in memory beside the
secret, which is complete because no cookie outlives the secret: a restart makes a new secret
and ends every session anyway. (Were the secret ever kept across restarts, or shared by several
replicas, the epochs would have to be kept with it, e.g. as a column of the users table.)
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import secrets
import time
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..store.store import Store
from ..store.users import UserRow, active_user, user_for_token
from .negotiate import page

log = logging.getLogger("arena.web")
COOKIE = "arena_session"
SESSION_MAX_AGE_S = 12 * 3600  # a session cookie older than this is not accepted (log in again)
CSRF_FIELD = "csrf"
PUBLIC_WHEN_PRIVATE = ("/login", "/static/")  # what a private app shows without a token


@dataclass(frozen=True)
class Session:
    """This request's session: its user (None: nobody), its CSRF token, how the user was known
    (``"bearer"``, ``"cookie"`` or ``""``) and whether the cookie must be (re)sent."""

    user: UserRow | None
    csrf: str
    issued: int
    via: str = ""
    dirty: bool = False
    stored: bool = False  # the browser holds this session's cookie already
    epoch: int = 0  # the user's session epoch when they logged in (SessionKeys)


@dataclass
class SessionKeys:
    """This run's sessions: the secret every cookie is signed with, and each user's session epoch
    (by user id; 0 until they first log out). In memory only, together: see the module docstring."""

    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    epochs: dict[int, int] = field(default_factory=dict)

    def epoch(self, user_id: int) -> int:
        return self.epochs.get(user_id, 0)

    def end_sessions(self, user_id: int) -> None:
        """Every session of this user ends now, in every browser: their cookies' epoch is past."""
        self.epochs[user_id] = self.epoch(user_id) + 1


def new_session(user: UserRow | None = None, epoch: int = 0) -> Session:
    return Session(user=user, csrf=secrets.token_urlsafe(24), issued=int(time.time()),
                   via="cookie" if user else "", dirty=True, epoch=epoch)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sign(secret: bytes, session: Session) -> str:
    """The cookie's value for ``session``."""
    payload = _b64(json.dumps({"u": session.user.id if session.user else None, "e": session.epoch,
                               "c": session.csrf, "t": session.issued}, separators=(",", ":")).encode())
    return payload + "." + _b64(hmac.new(secret, payload.encode(), hashlib.sha256).digest())


def unsign(secret: bytes, value: str) -> dict[str, Any] | None:
    """The payload of a cookie this app signed and that is not too old, or None."""
    payload, _, signature = value.partition(".")
    expected = _b64(hmac.new(secret, payload.encode(), hashlib.sha256).digest())
    if not signature or not hmac.compare_digest(signature, expected):
        return None
    try:
        data = json.loads(_unb64(payload))
    except (binascii.Error, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("c"), str) or not isinstance(data.get("t"), int) \
            or not isinstance(data.get("e"), int):
        return None
    if not 0 <= time.time() - data["t"] <= SESSION_MAX_AGE_S:
        return None
    return data


def _bearer(scope: Scope) -> str | None:
    """The token of an ``Authorization: Bearer`` header; None without one, and for any other
    scheme (``Basic``...), which this app does not speak: such a request is a session's, and its
    POSTs need the session's CSRF token like any other."""
    for key, value in scope.get("headers", []):
        if key == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            return token.strip() if scheme.lower() == "bearer" else None
    return None


def _cookie(request: Request) -> str | None:
    return request.cookies.get(COOKIE)


class Sessions:
    """ASGI middleware: finds this request's session (``request.scope["arena_session"]``), refuses
    a private app's pages to nobody (401), and sends the cookie back when the session changed."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        state = scope["app"].state
        # the users are looked up on a thread, as the pages' queries are: the loop never waits on the database
        keys: SessionKeys = state.session_keys
        session = await run_in_threadpool(self.session_of, request, state.store, keys)
        scope["arena_session"] = session
        if state.settings.private and session.user is None and not scope["path"].startswith(PUBLIC_WHEN_PRIVATE):
            response = page(request, "error.html", {"status": 401, "error": "this arena is private: log in with "
                                                    "your token first"}, status=401)
            response.headers["www-authenticate"] = "Bearer"
            await response(scope, receive, send)
            return

        async def send_with_cookie(message: Message) -> None:
            final: Session = scope["arena_session"]
            if message["type"] == "http.response.start" and final.dirty:
                secure = "; Secure" if scope.get("scheme") == "https" or state.settings.secure_cookies else ""
                cookie = (f"{COOKIE}={sign(keys.secret, final)}; Path=/; HttpOnly; SameSite=Strict; "
                          f"Max-Age={SESSION_MAX_AGE_S}{secure}")
                message = dict(message, headers=[*message.get("headers", []), (b"set-cookie", cookie.encode())])
            await send(message)

        await self.app(scope, receive, send_with_cookie)

    @staticmethod
    def session_of(request: Request, store: Store, keys: SessionKeys) -> Session:
        """A bearer token's user, else the cookie's session (with its user if they are still one
        and have not logged out since), else a new anonymous session (sent only if a page uses
        its CSRF token)."""
        token = _bearer(request.scope)
        value = _cookie(request)
        data = unsign(keys.secret, value) if value else None
        session = Session(None, data["c"], data["t"], stored=True, epoch=data["e"]) if data \
            else replace(new_session(), dirty=False)
        try:
            if token is not None:
                return replace(session, user=user_for_token(store, token), via="bearer")
            if data and isinstance(data.get("u"), int):
                if data["e"] != keys.epoch(data["u"]):  # they logged out since: this session ended
                    return replace(new_session(), dirty=True)
                user = active_user(store, data["u"])
                return replace(session, user=user, via="cookie" if user else "")
        except SQLAlchemyError as exc:  # a database from before the users table: nobody is a user there
            log.warning("cannot read the users: %s", str(exc).splitlines()[0])
        return session


def session_of(request: Request) -> Session:
    session: Session = request.scope["arena_session"]
    return session


def set_session(request: Request, session: Session) -> None:
    """Replace this request's session (login, logout); the response carries the new cookie."""
    request.scope["arena_session"] = replace(session, dirty=True)


def csrf_token(request: Request) -> str:
    """The session's CSRF token for a form's hidden field (a new session's cookie is sent with it)."""
    session = session_of(request)
    if not session.stored and not session.dirty and session.via != "bearer":
        request.scope["arena_session"] = replace(session, dirty=True)
    return session.csrf


def check_csrf(request: Request, given: object) -> None:
    """A POST from a session must carry its CSRF token (403 otherwise); only a bearer token that
    is a user's needs none (a wrong one is no exemption: it is checked like a session)."""
    session = session_of(request)
    if session.via == "bearer" and session.user is not None:
        return
    if not isinstance(given, str) or not hmac.compare_digest(given.encode(), session.csrf.encode()):
        raise HTTPException(403, "this form is out of date or did not come from this site (no or wrong CSRF "
                                 "token): load the page again and resend it")


def require_user(request: Request) -> UserRow:
    """The user asking, or 401."""
    session = session_of(request)
    if session.user is None:
        why = "the token is not a user's" if session.via == "bearer" else "log in with your token first"
        raise HTTPException(401, why, headers={"www-authenticate": "Bearer"})
    return session.user
