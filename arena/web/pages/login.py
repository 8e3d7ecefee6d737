"""/login and /logout: a user's token, given once in a form, becomes a signed session cookie
(arena/web/auth.py); both forms carry the session's CSRF token. Logging out ends every session of
the user on the server (their session epoch moves on), not only this browser's cookie."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from ...store.users import user_for_token
from ..auth import CSRF_FIELD, SessionKeys, check_csrf, csrf_token, new_session, session_of, set_session
from ..negotiate import page, wants_json
from .common import store_of

FORM_LIMIT = 64 * 1024  # a login or logout form is a token and a CSRF token


def _next(target: object) -> str:
    """Where to go after logging in: a path of this site only (never ``//elsewhere``)."""
    if isinstance(target, str) and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/"


def _login_page(request: Request, error: str | None = None, status: int = 200, target: str = "/") -> Response:
    session = session_of(request)
    return page(request, "login.html", {"user": session.user.name if session.user else None, "error": error,
                                        "next": target, "csrf": csrf_token(request)}, status=status)


async def login(request: Request) -> Response:
    if request.method == "GET":
        return _login_page(request, target=_next(request.query_params.get("next")))
    form = await request.form(max_files=0, max_fields=8, max_part_size=FORM_LIMIT)
    check_csrf(request, form.get(CSRF_FIELD))
    target = _next(form.get("next"))
    token = form.get("token")
    user = await run_in_threadpool(user_for_token, store_of(request), token.strip()) if isinstance(token, str) else None
    if user is None:
        return _login_page(request, "that token is not a user's: check it, or ask the arena's operator",
                           status=401, target=target)
    keys: SessionKeys = request.app.state.session_keys
    # a new CSRF token too: nothing from before the login carries over
    set_session(request, new_session(user, epoch=keys.epoch(user.id)))
    if wants_json(request):
        return page(request, "login.html", {"user": user.name, "error": None, "next": target, "csrf": None})
    return RedirectResponse(target, status_code=303)


async def logout(request: Request) -> Response:
    form = await request.form(max_files=0, max_fields=8, max_part_size=FORM_LIMIT)
    check_csrf(request, form.get(CSRF_FIELD))
    user = session_of(request).user
    if user is not None:  # every cookie of theirs is refused from now on, a copy taken before included
        keys: SessionKeys = request.app.state.session_keys
        keys.end_sessions(user.id)
    set_session(request, new_session(None))
    if wants_json(request):
        return page(request, "login.html", {"user": None, "error": None, "next": "/", "csrf": None})
    return RedirectResponse("/", status_code=303)


ROUTES = [Route("/login", login, methods=["GET", "POST"], name="login"),
          Route("/logout", logout, methods=["POST"], name="logout")]
