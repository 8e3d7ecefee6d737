"""One game: the replay viewer page, its per-play states as JSON and the stored record itself."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from referee.names import clean_name, clean_version
from referee.rules import InvalidRecordError

from ...rating.failures import winners
from ...rating.reasons import reason_words
from ...store.models import Bot, Game, GameStatus, as_utc, iso_utc
from ..negotiate import now_iso, page
from ..owners import public_notes, readers_bots
from ..privacy import public_record, public_result, public_text
from ..replay import replay_views
from .common import path_id, store_of, tournament_or_404


@dataclass(frozen=True)
class StoredGame:
    """A game row as the viewer shows it, with its record (None until it is played)."""

    summary: dict[str, Any]
    seats: list[dict[str, Any]]
    names: list[str]
    record: dict[str, Any] | None
    finished_at: datetime | None


def _parsed(text: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """The stored record, or None and why it cannot be read."""
    if not text:
        return None, None
    try:
        record = json.loads(text)
    except ValueError:
        return None, "the stored record is not JSON"
    return (record, None) if isinstance(record, dict) else (None, "the stored record is not a JSON object")


def _recorded_seats(record: dict[str, Any] | None) -> dict[int, dict[str, Any]]:
    """The record's seat entries by seat number (what each bot said of itself); malformed ones
    skipped, since a record is not trusted."""
    seats = (record or {}).get("seats")
    out: dict[int, dict[str, Any]] = {}
    for entry in seats if isinstance(seats, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("seat"), int):
            out[entry["seat"]] = entry
    return out


def stored_game(request: Request) -> StoredGame:
    """The game the path names (404 if the tournament or the game is unknown)."""
    tournament = tournament_or_404(request)
    number = path_id(request, "number", "game")
    with store_of(request).session() as s:
        g = s.scalar(select(Game).where(Game.tournament_id == tournament.id, Game.number == number))
        if g is None:
            raise HTTPException(404, f"no game {number} in tournament {tournament.name!r}")
        rows = list(s.scalars(select(Bot).where(Bot.tournament_id == tournament.id)))
        bots = {b.position: b.name for b in rows}
        commands = [b.spec for b in rows if b.position in g.seat_bots]
        record, error = _parsed(g.record)
        live = False
        if record is None and g.status == GameStatus.RUNNING.value:
            # a game being played: its record so far, as the player last wrote it (arena/play/live.py)
            found = store_of(request).live_record((tournament.id, g.number))
            record, live = (found[1], True) if found is not None else (None, False)
        if record is not None:  # no command, log or path of this server; the reader's bots' own words (privacy.py)
            mine = readers_bots(request, tournament)
            record = public_record(record, commands, [seat for seat, p in enumerate(g.seat_bots) if p in mine],
                                   public_notes(tournament))
        # the tournament's names by the game's seats, as `arena show` shows them
        names = [bots.get(p, f"bot {p}") for p in g.seat_bots]
        recorded = _recorded_seats(record)
        seats = [{"seat": seat, "bot": position, "name": names[seat],
                  "hello_name": clean_name(str(recorded.get(seat, {}).get("hello_name", ""))),
                  "version": clean_version(str(recorded.get(seat, {}).get("version", "")))}
                 for seat, position in enumerate(g.seat_bots)]
        summary = {"tournament": tournament.name, "number": g.number, "round": g.round, "status": g.status,
                   "attempt": g.attempt, "error": public_text(g.error) if g.error else error,
                   "result": public_result(g.result, commands), "live": live,
                   # why it ended in words (arena/rating/reasons.py), and who won: none for a draw
                   "reason_words": reason_words(g.result, names, record) if g.result else "",
                   "winners": winners(g.result, names),
                   "started_at": iso_utc(g.started_at), "finished_at": iso_utc(g.finished_at)}
        return StoredGame(summary, seats, names, record, as_utc(g.finished_at))


def _views(game: StoredGame) -> tuple[list[dict[str, Any]], str | None]:
    """The viewer's steps, or why the stored record gives none."""
    if game.record is None:
        return [], None
    try:
        return replay_views(game.record, game.names), None
    except InvalidRecordError as exc:
        return [], f"the stored record does not replay: {exc}"


def _links(request: Request, game: StoredGame) -> dict[str, str]:
    params = {"tournament": game.summary["tournament"], "number": game.summary["number"]}
    # paths, never the request's Host in front of them (arena/web/guard.py)
    return {name: str(request.url_for(name, **params).path) for name in ("game", "states", "record", "events")}


def game_page(request: Request) -> Response:
    """The replay viewer; its steps come from the states route (replay.js loads them)."""
    game = stored_game(request)
    _, replay_error = _views(game) if game.record is not None else ([], None)
    return page(request, "game.html", {"game": game.summary, "seats": game.seats, "links": _links(request, game),
                                       "has_record": game.record is not None, "replay_error": replay_error},
                data_as_of=game.finished_at)


def states(request: Request) -> Response:
    """``{"game", "seats", "views"}``: every step of the game (arena/web/replay.py); no views
    for a game without a record, a 500 with the reason for a record that does not replay."""
    game = stored_game(request)
    views, replay_error = _views(game)
    body = {"game": game.summary, "seats": game.seats, "views": views, "error": replay_error,
            "generated_at": now_iso(request), "data_as_of": iso_utc(game.finished_at)}
    return JSONResponse(body, status_code=500 if replay_error else 200)


def record(request: Request) -> Response:
    """The referee's JSON game record, for download, as the public sees it (privacy.py: no
    seat's command, no server path)."""
    game = stored_game(request)
    if game.record is None or game.summary["live"]:
        raise HTTPException(404, f"game {game.summary['number']} is {game.summary['status']}: no record yet")
    return JSONResponse(game.record)


ROUTES = [
    Route("/t/{tournament}/games/{number:id}", game_page, name="game"),
    Route("/t/{tournament}/games/{number:id}/states", states, name="states"),
    Route("/t/{tournament}/games/{number:id}/record", record, name="record"),
]
