"""The participant's own pages, each also JSON for the API with a bearer token (docs/api.md):
``/me`` (who they are, their bots and versions with ratings, their submissions, their webhook),
``/t/NAME/me/games`` (their bots' games in a tournament, newest first) and ``/me/webhook`` (set or
clear where their notifications go: the secret is shown once, docs/notifications.md). Only the
user themselves sees any of it."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...notify.targets import TargetRefused, check_target
from ...store import notices
from ...store.models import iso_utc
from ...store.participants import bots_of, games_of
from ...store.submissions import owned_positions, submissions_of
from ...store.users import UserRow
from ..auth import CSRF_FIELD, check_csrf, csrf_token, require_user
from ..negotiate import page
from ..settings import PAGE_SIZE
from .common import path_for, query_id, store_of, tournament_or_404

API_VERSION = 1  # of these pages' JSON (docs/api.md)
FORM_BYTES = 8 * 1024  # a webhook form or JSON body: a URL and a token


def _me(request: Request, user: UserRow, webhook: dict[str, Any] | None = None, error: str | None = None,
        status: int = 200) -> Response:
    store = store_of(request)
    with store.engine.connect() as conn:
        hook = notices.webhook_of(conn, user.id)
        recent = notices.deliveries(conn, user.id, limit=20)
    return page(request, "me.html", {
        "version": API_VERSION, "user": user.name, "operator": user.operator,
        "bots": bots_of(store, user.id),
        "submissions": [{k: v for k, v in r.to_dict().items() if k != "report"} | {"url": f"/submissions/{r.id}"}
                        for r in submissions_of(store, user.id)],
        "webhook": {"url": hook[0], "set_at": iso_utc(hook[1])} if hook else None,
        "deliveries": recent, "new_webhook": webhook, "error": error,
        "webhooks_open": request.app.state.settings.submit is not None, "csrf": csrf_token(request),
    }, status=status)


async def me(request: Request) -> Response:
    user = require_user(request)
    return await run_in_threadpool(_me, request, user)


async def webhook(request: Request) -> Response:
    """POST ``url`` (form field or JSON): set the user's webhook, its secret answered once; ``url``
    empty or ``none``: clear it. A URL the arena does not send to is a 400 saying why."""
    user = require_user(request)
    if request.app.state.settings.submit is None:
        raise HTTPException(404, "notifications are set on a server that takes submissions (arena web --submit)")
    length = request.headers.get("content-length", "")
    if not (length.isascii() and length.isdigit()) or int(length) > FORM_BYTES:
        raise HTTPException(413 if length.isdigit() else 411, f"a webhook form is at most {FORM_BYTES} bytes, "
                            "with its Content-Length")
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            body = await request.json()
        except ValueError:
            raise HTTPException(400, "the body is not JSON: send {\"url\": \"https://...\"}") from None
        fields = body if isinstance(body, dict) else {}
    else:
        fields = dict(await request.form(max_files=0, max_fields=4))
    check_csrf(request, fields.get(CSRF_FIELD))
    url = fields.get("url")
    if not isinstance(url, str):
        raise HTTPException(400, "give the webhook's url (an http or https URL; empty or none to clear it)")
    return await run_in_threadpool(_set_webhook, request, user, url.strip())


def _set_webhook(request: Request, user: UserRow, url: str) -> Response:
    store = request.app.state.write_store
    if url in ("", "none"):
        with store.engine.begin() as conn:
            notices.clear_webhook(conn, user.id)
        return _me(request, user)
    with store.engine.begin() as conn:
        allow_private = notices.settings(conn).allow_private
    try:
        check_target(url, allow_private)
    except TargetRefused as exc:
        return _me(request, user, error=str(exc), status=400)
    with store.engine.begin() as conn:
        secret = notices.set_webhook(conn, user.id, url)
    return _me(request, user, webhook={"url": url, "secret": secret}, status=201)


def my_games(request: Request) -> Response:
    user = require_user(request)
    t = tournament_or_404(request)
    before = query_id(request, "before")
    positions = owned_positions(store_of(request), t.id, user.id)
    rows, older = games_of(store_of(request), t.id, positions, before, PAGE_SIZE)
    for row in rows:
        row["url"] = path_for(request, "game", tournament=t.name, number=row["number"])
        row["owner_url"] = path_for(request, "owner_game", tournament=t.name, bot=row["bot"], number=row["number"])
    older_url = (path_for(request, "my_games", tournament=t.name) + f"?before={rows[-1]['number']}"
                 if older and rows else None)
    return page(request, "me_games.html", {"version": API_VERSION, "tournament": t.name, "user": user.name,
                                           "games": rows, "older_url": older_url})


ROUTES = [Route("/me", me, name="me"),
          Route("/me/webhook", webhook, methods=["POST"], name="my_webhook"),
          Route("/t/{tournament}/me/games", my_games, name="my_games")]
