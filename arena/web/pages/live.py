"""Games being played now: ``/live`` lists them across tournaments (refreshed by the page itself),
and ``/t/{tournament}/games/{number}/events`` streams one game's progress as server-sent events.

The streams of a game share one watch of its live row (arena/web/live_hub.py: one read every
``events_poll_s`` whoever follows it). A stream sends ``event: plays`` with ``{"plays": N}``
whenever the count changes (at once on connecting, once the game has reported), ``event: done``
with ``{"status": ...}`` when the game is stored or failed, then ends; a comment every
``events_heartbeat_s`` keeps proxies from closing a quiet stream, and after ``events_max_s`` it
ends on its own (a browser's EventSource reconnects). A client that leaves ends it too (Starlette
cancels the stream). Streams are capped per client and in all (429 or 503, with Retry-After).
static/live.js ``followGame`` is the browser's side.
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

from sqlalchemy import select
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from referee.rules import RuleOptions, RulesError

from ...store.models import GameStatus, LiveGame, Tournament, iso_utc
from ..live_hub import SETTLED, LiveHub, Ticket, Watch
from ..negotiate import page
from ..settings import WebSettings
from .common import path_id, store_of, tournament_or_404

log = logging.getLogger("arena.web.live")
REFRESH_S = 2  # how often /live refreshes its table in the browser


def scores_so_far(record: Any) -> tuple[list[int], int] | None:
    """A running game's scores by side and the deal it is in, from its record so far: the scores
    after its last finished deal (that deal's score sheet; 0 each before one has ended), as the
    replay viewer's step shows them (arena/web/replay.py: a deal's points count once it is
    settled). None when the record does not say (not an engine record, malformed numbers)."""
    engine = record.get("engine") if isinstance(record, dict) else None
    deals = engine.get("deals") if isinstance(engine, dict) else None
    options = engine.get("options") if isinstance(engine, dict) else None
    if not isinstance(deals, list) or not deals or not isinstance(options, dict):
        return None
    try:
        sides = RuleOptions.from_dict(options).sides
    except RulesError:
        return None
    sheets = [d.get("sheet") for d in deals if isinstance(d, dict) and isinstance(d.get("sheet"), dict)]
    scores = sheets[-1].get("scores_after") if sheets else [0] * sides
    if not isinstance(scores, list) or len(scores) != sides or not all(type(v) is int for v in scores):
        return None
    settled = isinstance(deals[-1], dict) and isinstance(deals[-1].get("sheet"), dict)
    return scores, len(deals) + settled  # a deal that has ended is followed at once by the next one's deal


def _scores(request: Request, game_ids: list[int]) -> dict[int, tuple[list[int], int] | None]:
    """The scores so far of the running games ``game_ids``, from their live rows' records (one read)."""
    if not game_ids:
        return {}
    with store_of(request).session() as s:
        found = s.execute(select(LiveGame.game_id, LiveGame.record).where(LiveGame.game_id.in_(game_ids))).all()
    out: dict[int, tuple[list[int], int] | None] = {}
    for gid, text in found:
        try:
            out[gid] = scores_so_far(json.loads(text))
        except ValueError:
            out[gid] = None
    return out


def live_rows(request: Request) -> tuple[list[dict[str, Any]], datetime | None]:
    """Every game being played now, as the page and its JSON show it (its scores so far and the
    deal it is in, None where its record does not say), and the newest update."""
    found = store_of(request).live_games()
    scores = _scores(request, [r.game_id for r in found])
    rows = []
    for r in found:
        game = f"/t/{urllib.parse.quote(r.tournament, safe='')}/games/{r.number}"
        so_far = scores.get(r.game_id)
        rows.append({"tournament": r.tournament, "number": r.number, "seats": list(r.seat_names),
                     "plays": r.plays, "scores": so_far[0] if so_far else None, "deal": so_far[1] if so_far else None,
                     "attempt": r.attempt, "worker": r.worker,
                     "started_at": iso_utc(r.started_at),
                     "updated_at": r.updated_at.isoformat(timespec="milliseconds"),
                     "game_url": game, "events_url": f"{game}/events"})
    return rows, max((r.updated_at for r in found), default=None)


def live(request: Request) -> Response:
    rows, newest = live_rows(request)
    return page(request, "live.html", {"games": rows, "refresh_s": REFRESH_S}, data_as_of=newest)


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


async def game_events(watch: Watch, settings: WebSettings) -> AsyncIterator[str]:
    """The event stream of the game ``watch`` follows (see the module docstring)."""
    started = beat = time.monotonic()
    last: int | None = None
    tid, number = watch.key
    yield "retry: 2000\n\n"  # how long a browser waits before it reconnects
    while (left := settings.events_max_s - (time.monotonic() - started)) > 0:
        changed = watch.changed  # taken before the progress is read: a change after it sets this one
        if watch.failed:
            return  # the database failed (logged): the browser reconnects after `retry`
        status, plays = watch.progress if watch.progress is not None else (GameStatus.FAILED.value, None)
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
        wait = min(left, settings.events_heartbeat_s - (time.monotonic() - beat))
        if wait > 0:
            try:
                await asyncio.wait_for(changed.wait(), timeout=wait)
            except TimeoutError:
                pass


class EventStream(StreamingResponse):
    """A game's event stream that gives back its place under the caps and its subscription when
    it ends, however it ends (done, timed out, the client gone, an error)."""

    def __init__(self, watch: Watch, hub: LiveHub, ticket: Ticket, settings: WebSettings) -> None:
        super().__init__(game_events(watch, settings), media_type="text/event-stream",
                         headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        self.watch, self.hub, self.ticket = watch, hub, ticket

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.hub.unsubscribe(self.watch)
            self.ticket.release()


def client_of(request: Request) -> str:
    """Who a stream is counted against: the client's address (behind a trusted proxy, the client
    the proxy forwarded for: uvicorn's ProxyHeadersMiddleware, arena/web/guard.py)."""
    return request.client.host if request.client is not None else "unknown"


async def events(request: Request) -> Response:
    tournament: Tournament = await asyncio.to_thread(tournament_or_404, request)
    number = path_id(request, "number", "game")
    settings: WebSettings = request.app.state.settings
    hub: LiveHub = request.app.state.live_hub
    ticket = hub.admit(client_of(request))
    watch = hub.subscribe(store_of(request), tournament.id, number)
    try:
        await watch.ready.wait()  # the watch's first read (shared, when the game is followed already)
        if watch.failed:
            raise HTTPException(503, "cannot read the live games now: try again later",
                                headers={"Retry-After": "2"})
        if watch.progress is None:
            raise HTTPException(404, f"no game {number} in tournament {tournament.name!r}")
    except BaseException:
        hub.unsubscribe(watch)
        ticket.release()
        raise
    return EventStream(watch, hub, ticket, settings)


ROUTES = [
    Route("/live", live, name="live"),
    Route("/t/{tournament}/games/{number:id}/events", events, name="events"),
]
