"""Challenges on the web (docs/challenges.md): a logged-in user asks, from their bot's page or the
JSON API, for an unrated match of one of their bots against an active bot of the ladder or another
of their own versions (``POST /t/NAME/challenges``); the challenge's page shows its progress,
reloading itself while it plays, then the verdict, with a link to every game; its JSON twin has the
shape scripts rely on (``"version": 1``). Challenges are open where submission is (``arena web
--submit LADDER``): the users' bots are that ladder's, and the write goes through the submission's
writable connection. A refusal is one line: 400 for a bad request, 404 for a bot that is not there
(or not the user's), 429 with Retry-After for a quota."""

from __future__ import annotations

import json
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from ...config import ChallengeSettings
from ...store.challenges import (ChallengeRefused, ChallengeRow, bots_of_user, challenge, game_numbers,
                                 new_challenge)
from ...store.models import Tournament, as_utc
from ..auth import CSRF_FIELD, check_csrf, require_user
from ..negotiate import page, wants_json
from ..privacy import public_text
from .common import path_for, path_id, store_of, tournament_or_404

MAX_BODY = 4096  # a challenge's form or JSON: a few short fields
UNTIL_DECIDED = "until_decided"


def challenges_open(request: Request, t: Tournament) -> bool:
    """Whether users may challenge in tournament ``t`` here: it is the ladder of ``--submit``."""
    return request.app.state.settings.submit == t.name and getattr(request.app.state, "write_store", None) is not None


def challenge_data(request: Request, row: ChallengeRow) -> dict[str, Any]:
    """The challenge JSON (docs/challenges.md): the stored fields, each game's page, and the page's own URL."""
    data = row.to_dict()
    data["error"] = public_text(row.error, []) if row.error else None
    numbers = game_numbers(store_of(request), row.games_tournament_id) if row.games_tournament_id else []
    games_tournament = row.games_tournament or ""
    data["games"] = [{"number": n, "url": path_for(request, "game", tournament=games_tournament, number=n)}
                     for n in numbers]
    data["url"] = path_for(request, "challenge", tournament=row.tournament, id=row.id)
    data["bot_url"] = path_for(request, "bot", tournament=row.tournament, bot=row.bot)
    data["opponent_url"] = path_for(request, "bot", tournament=row.tournament, bot=row.opponent)
    return data


async def _fields(request: Request) -> dict[str, Any]:
    """The request's fields (a form or a JSON object), refused (413) past MAX_BODY, (400) when not
    one of those."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise HTTPException(413, f"a challenge's request is a few short fields: at most {MAX_BODY} bytes")
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "application/json":
        try:
            fields = json.loads(body or b"{}")
        except ValueError:
            raise HTTPException(400, "the body is not JSON: send {\"bot\": ..., \"opponent\": ..., \"pairs\": ...}") \
                from None
        if not isinstance(fields, dict):
            raise HTTPException(400, "the body must be a JSON object: {\"bot\": ..., \"opponent\": ..., \"pairs\": ...}")
        return fields
    if kind in ("application/x-www-form-urlencoded", ""):
        from urllib.parse import parse_qsl

        try:
            return dict(parse_qsl(body.decode("utf-8"), max_num_fields=8))
        except (UnicodeDecodeError, ValueError):
            raise HTTPException(400, "the form could not be read (UTF-8, at most 8 fields)") from None
    raise HTTPException(415, "send the challenge as a form (application/x-www-form-urlencoded) or as JSON")


def _pairs(value: Any) -> int | None:
    """``pairs``: a whole number, or absent, empty or "until_decided" for the sequential test."""
    if value is None or value == "" or value == UNTIL_DECIDED:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 6:
        return int(value)
    raise HTTPException(400, f"pairs must be a whole number or \"{UNTIL_DECIDED}\", not {str(value)[:40]!r}")


def _name(fields: dict[str, Any], key: str) -> str:
    value = fields.get(key)
    if not isinstance(value, str) or not value or len(value) > 64:
        raise HTTPException(400, f"{key} must name a bot (1 to 64 characters)")
    return value


async def start(request: Request) -> Response:
    user = require_user(request)
    t = await run_in_threadpool(tournament_or_404, request)
    if not challenges_open(request, t):
        raise HTTPException(404, f"challenges are not open in {t.name!r} on this server (they are where bots are "
                                 "submitted: arena web --submit LADDER)")
    fields = await _fields(request)
    check_csrf(request, fields.get(CSRF_FIELD))
    bot, opponent, pairs = _name(fields, "bot"), _name(fields, "opponent"), _pairs(fields.get("pairs"))
    settings = ChallengeSettings.from_stored(t.settings)
    try:
        row = await run_in_threadpool(new_challenge, request.app.state.write_store, t.id, user.id, bot, opponent,
                                      pairs, settings)
    except ChallengeRefused as refused:
        headers = {"retry-after": str(refused.retry_after_s)} if refused.retry_after_s is not None else None
        raise HTTPException(refused.status, str(refused), headers=headers) from None
    url = path_for(request, "challenge", tournament=t.name, id=row.id)
    if wants_json(request) or request.headers.get("content-type", "").startswith("application/json") \
            or request.headers.get("authorization", "").lower().startswith("bearer "):
        data = await run_in_threadpool(challenge_data, request, row)
        response = page(request, "challenge.html", data, status=201)
        response.headers["location"] = url
        return response
    return RedirectResponse(url, status_code=303)


def challenge_page(request: Request) -> Response:
    t = tournament_or_404(request)
    cid = path_id(request, "id", "challenge")
    row = challenge(store_of(request), cid)
    if row is None or row.tournament_id != t.id:
        raise HTTPException(404, f"no challenge {cid} in {t.name!r}")
    return page(request, "challenge.html", challenge_data(request, row),
                data_as_of=as_utc(row.finished_at or row.created_at))


def challenge_form(request: Request, t: Tournament, bot: str, position: int) -> dict[str, Any] | None:
    """What the bot page's challenge form needs, for the bot's owner where challenges are open:
    the opponents (the ladder's active bots and the user's other versions), the previous version
    (the one-click challenge), the CSRF token and where to post. None for anyone else."""
    from ...store.submissions import owned_positions
    from ..auth import csrf_token, session_of

    user = session_of(request).user
    if user is None or not challenges_open(request, t):
        return None
    store = store_of(request)
    if position not in owned_positions(store, t.id, user.id):
        return None
    mine = [name for name in bots_of_user(store, t.id, user.id) if name != bot]
    active = [b.name for b in store.bots(t.id, active_only=True) if b.name != bot and b.name not in mine]
    settings = ChallengeSettings.from_stored(t.settings)
    return {"url": path_for(request, "challenges", tournament=t.name), "csrf": csrf_token(request),
            "csrf_field": CSRF_FIELD, "opponents": active, "versions": mine, "previous": mine[0] if mine else None,
            "max_pairs": settings.max_pairs}


ROUTES = [Route("/t/{tournament}/challenges", start, methods=["POST"], name="challenges"),
          Route("/t/{tournament}/challenges/{id:id}", challenge_page, name="challenge")]
