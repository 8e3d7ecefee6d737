"""The game list of a tournament, newest first: filters (a bot, its result, forfeits only) read the
indexed game_seats table, and pages step by game number (keyset: ``?before=N`` / ``?after=N``),
so a page costs the same at game 100,000 as at game 50 (no OFFSET scan)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from sqlalchemy import Select, select
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...rating.failures import failure_where, kind_name, winners
from ...rating.reasons import reason_words
from ...store.models import Game, GameSeat, GameStatus, Tournament, iso_utc
from ...store.store import BotRow, Store
from ..negotiate import page
from ..privacy import public_text
from ..settings import PAGE_SIZE
from .common import last_finished, path_for, query_id, store_of, tournament_or_404, url_or_path

RESULTS = ("win", "draw", "loss")
FINISHED = (GameStatus.DONE.value, GameStatus.FAILED.value)


@dataclass(frozen=True)
class GameFilter:
    """Which games a list shows: all finished ones, or a bot's (with one result), or forfeits only."""

    bot: int | None = None  # a bot's position
    result: str | None = None  # win, draw or loss for that bot
    forfeits: bool = False  # only games someone (the bot, when given) forfeited


def _numbers_query(tid: int, f: GameFilter) -> tuple[Select[Any], Any]:
    """The game numbers ``f`` selects, and the column to step on; every variant reads one index."""
    if f.bot is None and not f.forfeits:
        return (select(Game.number).where(Game.tournament_id == tid, Game.status.in_(FINISHED)),
                Game.number)  # games' unique (tournament_id, number)
    q = select(GameSeat.game_number).where(GameSeat.tournament_id == tid)
    if f.bot is not None:
        q = q.where(GameSeat.bot_position == f.bot)  # ix_game_seats_bot
        if f.result is not None:
            q = q.where(GameSeat.outcome == f.result)  # ix_game_seats_bot_outcome
    if f.forfeits:
        q = q.where(GameSeat.forfeited.is_(True))  # ix_game_seats_forfeited (a bot's: filtered there)
    if f.bot is None:
        q = q.distinct()  # two seats of one game may both have forfeited
    return q, GameSeat.game_number


def page_numbers(store: Store, tid: int, f: GameFilter, before: int | None = None, after: int | None = None,
                 size: int = PAGE_SIZE) -> tuple[list[int], bool, bool]:
    """One page of game numbers, newest first: below ``before``, or above ``after`` (the previous
    page), or the newest; and whether there are newer and older games than the page."""
    q, column = _numbers_query(tid, f)
    with store.session() as s:
        if after is not None:
            found = list(s.scalars(q.where(column > after).order_by(column.asc()).limit(size + 1)))
            newer = len(found) > size
            numbers = sorted(found[:size], reverse=True)
            older = s.scalar(q.where(column <= after).limit(1)) is not None
        else:
            ranged = q.where(column < before) if before is not None else q
            found = list(s.scalars(ranged.order_by(column.desc()).limit(size + 1)))
            older = len(found) > size
            numbers = found[:size]
            newer = before is not None and s.scalar(q.where(column >= before).limit(1)) is not None
    return numbers, newer, older


def game_rows(request: Request, t: Tournament, numbers: list[int], bots: dict[int, BotRow],
              for_bot: int | None = None) -> list[dict[str, Any]]:
    """What a list shows of each game in ``numbers`` (in that order); ``for_bot``: also that bot's
    result in each game."""
    if not numbers:
        return []
    with store_of(request).session() as s:
        games = {g.number: g for g in s.execute(
            select(Game.number, Game.round, Game.seat_bots, Game.status, Game.result, Game.error, Game.finished_at)
            .where(Game.tournament_id == t.id, Game.number.in_(numbers))).all()}
        outcomes: dict[int, str | None] = {}
        if for_bot is not None:
            outcomes = dict(s.execute(select(GameSeat.game_number, GameSeat.outcome).where(
                GameSeat.tournament_id == t.id, GameSeat.bot_position == for_bot,
                GameSeat.game_number.in_(numbers))).all())
        # which condition won a condition_met game is in its record's last score sheet: those only
        by_condition = [n for n, g in games.items() if (g.result or {}).get("reason") == "condition_met"]
        records: dict[int, str | None] = dict(s.execute(select(Game.number, Game.record).where(
            Game.tournament_id == t.id, Game.number.in_(by_condition))).all()) if by_condition else {}
    rows = []
    for number in numbers:
        g = games[number]
        names = [bots[p].name if p in bots else f"bot {p}" for p in g.seat_bots]
        result = g.result or {}
        commands = [bots[p].spec for p in g.seat_bots if p in bots]
        forfeits = [{"bot": names[int(f.get("seat", 0))], "kind": kind_name(f.get("kind", "")),
                     "reason": public_text(str(f.get("reason", "")), commands), "where": failure_where(f)}
                    for f in result.get("failures", []) if f.get("forfeit")]
        won = winners(result, names)
        rows.append({
            "number": number, "round": g.round, "status": g.status,
            "seats": [{"bot": name, "url": bot_url(request, t.name, name)} for name in names],
            "scores": [int(x) for x in result.get("scores", [])],
            "result": ("failed" if g.status == GameStatus.FAILED.value else
                       "draw" if g.result and not won else ("won by " + " + ".join(won)) if won else ""),
            "reason": result.get("reason", ""),
            "reason_words": reason_words(result, names, _record(records.get(number))),
            "error": public_text(g.error) if g.error else g.error,
            "forfeits": forfeits, "finished_at": iso_utc(g.finished_at),
            "url": game_url(request, t.name, number),
            **({"bot_result": outcomes.get(number)} if for_bot is not None else {}),
        })
    return rows


def _record(text: str | None) -> dict[str, Any] | None:
    """A stored record's JSON, or None when there is none or it is not JSON (the words then say less)."""
    try:
        found = json.loads(text) if text else None
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def bot_url(request: Request, tournament: str, bot: str) -> str:
    return path_for(request, "bot", tournament=tournament, bot=bot)


def game_url(request: Request, tournament: str, number: int) -> str:
    """The replay viewer's page of game ``number``."""
    return url_or_path(request, "game", f"/t/{quote(tournament, safe='')}/games/{number}",
                       tournament=tournament, number=number)


def game_list(request: Request) -> Response:
    t = tournament_or_404(request)
    store = store_of(request)
    bots = {b.position: b for b in store.bots(t.id)}
    by_name = {b.name: b for b in bots.values()}
    params = request.query_params
    bot_name, result = params.get("bot") or None, params.get("result") or None
    if bot_name is not None and bot_name not in by_name:
        raise HTTPException(404, f"no bot named {bot_name!r} in tournament {t.name!r}")
    if result is not None and result not in RESULTS:
        raise HTTPException(400, f"result must be one of {', '.join(RESULTS)}, not {result[:40]!r}")
    if result is not None and bot_name is None:
        raise HTTPException(400, "a result filter needs a bot: the result is that bot's")
    before, after = query_id(request, "before"), query_id(request, "after")
    f = GameFilter(by_name[bot_name].position if bot_name else None, result, params.get("forfeits") in ("1", "on", "true"))
    size = request.app.state.settings.page_size
    numbers, newer, older = page_numbers(store, t.id, f, before, after, size)
    kept = {k: v for k, v in {"bot": bot_name, "result": result, "forfeits": "1" if f.forfeits else None}.items() if v}
    here = path_for(request, "games", tournament=t.name)
    data = {
        "tournament": t.name,
        "tournaments_url": str(request.url_for("index").path),
        "leaderboard_url": path_for(request, "leaderboard", tournament=t.name),
        "filters": {"bot": bot_name, "result": result, "forfeits": f.forfeits},
        "bots": sorted(by_name),
        "games": game_rows(request, t, numbers, bots, for_bot=f.bot),
        "newer_url": f"{here}?{urlencode(kept | {'after': numbers[0]})}" if newer and numbers else None,
        "older_url": f"{here}?{urlencode(kept | {'before': numbers[-1]})}" if older and numbers else None,
        "page_size": size,
    }
    return page(request, "games.html", data, data_as_of=last_finished(request, t.id))


ROUTES = [Route("/t/{tournament}/games", game_list, name="games")]
