"""Which version of a user's bot plays: its owner (or an operator) activates an earlier clean
version (a rollback) or retires the bot from the pool, with a POST form on the bot's page (the
session's CSRF token) or a bearer token; the store does it in one transaction
(arena/store/versions.py). A form is answered with a redirect to the bot's page, JSON with the
owner's versions as they now stand. Where submission is not open (no ``--submit``) the app writes
nothing, so neither is offered. Refusals are one line: 401 without a user, 404 for a bot that is
not there (or not the reader's to know of), 403 for another user's bot, 409 for a version that
cannot play or a state that is already so."""

from __future__ import annotations

import re
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from ...errors import quoted
from ...store.models import Tournament
from ...store.store import Store
from ...store.users import UserRow
from ...store.versions import VersionRefused, activate, owner_id, retire, user_named, versions_of
from ..auth import CSRF_FIELD, check_csrf, require_user
from ..negotiate import now_iso, wants_json
from .common import path_for, tournament_or_404

VERSION_NAME = re.compile(r"([A-Za-z0-9_-]{1,32})\.v([0-9]{1,9})")  # USER.vN (arena/store/submissions.py bot_name)
FORM_BYTES = 4096  # a version form holds its CSRF token alone


def writable(request: Request) -> Store | None:
    """The app's writable store: only where submission is open (``--submit``); else None."""
    return getattr(request.app.state, "write_store", None) if request.app.state.settings.submit else None


def _owner_and_version(store: Store, t: Tournament, name: str, reader: UserRow) -> tuple[int, int]:
    """(owner's user id, version number) of version ``name`` of ladder ``t``, which ``reader`` may
    change: 404 for a name that is no user's version (nor a bot), 403 for another user's."""
    found = VERSION_NAME.fullmatch(name)
    owner = owner_id(store, t.id, name)
    if found is None:
        if any(b.name == name for b in store.bots(t.id)):
            raise HTTPException(403, f"{quoted(name)} is the operator's bot, not a submitted version: the operator "
                                     "adds and removes it with arena bots")
        raise HTTPException(404, f"no bot named {quoted(name)} in tournament {quoted(t.name)}")
    if owner is None:  # not a bot: maybe a version whose check rejected it (or is still running)
        try:
            owner = user_named(store, found.group(1))
        except VersionRefused:
            raise HTTPException(404, f"no bot named {quoted(name)} in tournament {quoted(t.name)}") from None
        if owner != reader.id and not reader.operator:  # another user's unplayed version: told apart from none by nothing
            raise HTTPException(404, f"no bot named {quoted(name)} in tournament {quoted(t.name)}")
    elif owner != reader.id and not reader.operator:
        raise HTTPException(403, f"{name} is another user's bot: only its owner (or an operator) may change which of "
                                 "its versions plays")
    return owner, int(found.group(2))


async def _posted(request: Request) -> UserRow:
    """The user posting, with the session's CSRF token in the form (or a bearer token); 401/403 else."""
    user = require_user(request)
    given = None
    if request.headers.get("content-type", "").startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
        length = request.headers.get("content-length", "")
        if not (length.isascii() and length.isdigit() and int(length) <= FORM_BYTES):
            raise HTTPException(413, f"a version form is at most {FORM_BYTES} bytes, with a Content-Length")
        form = await request.form(max_files=0, max_fields=4)
        given = form.get(CSRF_FIELD)
    check_csrf(request, given)
    return user


def _answer(request: Request, t: Tournament, store: Store, owner: int, bot: str, what: dict[str, Any]) -> Response:
    """A form's redirect to the bot's page, or the owner's versions now as JSON."""
    if not wants_json(request):
        return RedirectResponse(path_for(request, "bot", tournament=t.name, bot=bot), status_code=303)
    versions = [v.to_dict() for v in versions_of(store, t.id, owner)]
    active = next((v["bot"] for v in versions if v["active"]), None)
    return JSONResponse({"version": 1, "tournament": t.name, **what, "active": active, "versions": versions,
                         "generated_at": now_iso(request)})


async def change(request: Request) -> Response:
    """POST .../owner/BOT/activate or .../owner/BOT/retire."""
    if request.path_params["action"] not in ("activate", "retire"):
        raise HTTPException(404, "a version's actions are activate and retire")
    t = tournament_or_404(request)
    user = await _posted(request)
    store = writable(request)
    if store is None:
        raise HTTPException(404, "changing versions is not open on this server (its operator opens it with arena "
                                 "web --submit LADDER)")
    name, action = request.path_params["bot"], request.path_params["action"]
    owner, version = await run_in_threadpool(_owner_and_version, store, t, name, user)

    def act() -> dict[str, Any]:
        try:
            if action == "activate":
                active, replaced = activate(store, t.id, owner, version)
                return {"activated": active, "replaced": replaced}
            return {"retired": retire(store, t.id, owner)}
        except VersionRefused as refused:
            raise HTTPException(refused.status, str(refused)) from None

    done = await run_in_threadpool(act)
    return await run_in_threadpool(_answer, request, t, store, owner, name, done)


def version_list(request: Request, t: Tournament, store: Store, bot_name: str, may_change: bool) -> dict[str, Any] | None:
    """The bot page's versions: every submission of the bot's owner to this ladder with its rating,
    which one is active, and (for its owner and the operators, where the app may write) the forms'
    targets. None for a bot nobody submitted (the operator's)."""
    owner = owner_id(store, t.id, bot_name)
    if owner is None:
        return None
    rows = versions_of(store, t.id, owner)
    may_change = may_change and writable(request) is not None
    listed = []
    for v in rows:
        entry = v.to_dict()
        entry["url"] = path_for(request, "bot", tournament=t.name, bot=v.bot) if v.status == "accepted" else None
        if may_change and v.status == "accepted" and not v.active:
            entry["activate_url"] = path_for(request, "version_change", tournament=t.name, bot=v.bot,
                                             action="activate")
        listed.append(entry)
    active = next((v.bot for v in rows if v.active), None)
    return {"active": active, "versions": listed,
            "retire_url": path_for(request, "version_change", tournament=t.name, bot=active, action="retire")
            if may_change and active is not None else None}


ROUTES = [Route("/t/{tournament}/owner/{bot}/{action:str}", change, methods=["POST"], name="version_change")]
