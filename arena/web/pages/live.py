"""Games being played now: ``/live`` lists them across tournaments (refreshed by the page itself),
and ``/t/{tournament}/games/{number}/events`` streams one game's progress as server-sent events.

The stream reads the game's live row (arena/play/live.py) every ``events_poll_s`` and sends
``event: plays`` with ``{"plays": N}`` whenever the count changes (at once on connecting, once the
game has reported), ``event: done`` with ``{"status": ...}`` when the game is stored or failed, then
ends; a comment every ``events_heartbeat_s`` keeps proxies from closing a quiet stream, and after
``events_max_s`` it ends on its own (a browser's EventSource reconnects). A client that leaves ends
it too (Starlette cancels the stream). static/live.js ``followGame`` is the browser's side.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import urllib.parse
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from ...store.models import GameStatus, Tournament, iso_utc
from ...store.store import Store
from ..negotiate import page
from ..settings import WebSettings
from .common import path_id, store_of, tournament_or_404

log = logging.getLogger("arena.web.live")
REFRESH_S = 2  # how often /live refreshes its table in the browser
SETTLED = (GameStatus.DONE.value, GameStatus.FAILED.value)


def live_rows(request: Request) -> tuple[list[dict[str, Any]], datetime | None]:
    """Every game being played now, as the page and its JSON show it, and the newest update."""
    found = store_of(request).live_games()
    rows = []
    for r in found:
        game = f"/t/{urllib.parse.quote(r.tournament, safe='')}/games/{r.number}"
        rows.append({"tournament": r.tournament, "number": r.number, "seats": list(r.seat_names),
                     "plays": r.plays, "attempt": r.attempt, "worker": r.worker,
                     "started_at": iso_utc(r.started_at),
                     "updated_at": r.updated_at.isoformat(timespec="milliseconds"),
                     "game_url": game, "events_url": f"{game}/events"})
    return rows, max((r.updated_at for r in found), default=None)


def live(request: Request) -> Response:
    rows, newest = live_rows(request)
    return page(request, "live.html", {"games": rows, "refresh_s": REFRESH_S}, data_as_of=newest)


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


async def game_events(store: Store, tid: int, number: int, settings: WebSettings) -> AsyncIterator[str]:
    """The event stream of game ``number`` of tournament ``tid`` (see the module docstring)."""
    started = beat = time.monotonic()
    last: int | None = None
    yield "retry: 2000\n\n"  # how long a browser waits before it reconnects
    while time.monotonic() - started < settings.events_max_s:
        progress = await asyncio.to_thread(store.live_plays, tid, number)
        status, plays = progress if progress is not None else (GameStatus.FAILED.value, None)
        if status in SETTLED:
            yield _sse("done", {"status": status})
            return
        now = time.monotonic()
        if plays is not None and plays != last:
            last, beat = plays, now
            if log.isEnabledFor(logging.DEBUG):  # the live delay benchmark reads these
                log.debug("events %d/%d: plays %d sent at %.6f", tid, number, plays, time.time())
            yield _sse("plays", {"plays": plays})
        elif now - beat >= settings.events_heartbeat_s:
            beat = now
            yield ": keep-alive\n\n"
        await asyncio.sleep(settings.events_poll_s)


async def events(request: Request) -> Response:
    tournament: Tournament = await asyncio.to_thread(tournament_or_404, request)
    number = path_id(request, "number", "game")
    store = store_of(request)
    if await asyncio.to_thread(store.live_plays, tournament.id, number) is None:
        raise HTTPException(404, f"no game {number} in tournament {tournament.name!r}")
    settings: WebSettings = request.app.state.settings
    return StreamingResponse(game_events(store, tournament.id, number, settings), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


ROUTES = [
    Route("/live", live, name="live"),
    Route("/t/{tournament}/games/{number:id}/events", events, name="events"),
]
