"""A bot's private page, for its owner and the operators only (arena/web/owners.py decides who),
and its JSON twin: each version of the owner's bot with its move time and CPU time (p50, p99), its
errors and forfeits per 100 games, its crash streaks, and its games, those with failures or errors
first; and for one game, that bot's own errors and notes and the slice of its log that game wrote
(where this machine has the tournament's logs). Nothing here is on a public page."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...rating.failures import kind_name
from ...store.models import Game, GameSeat, GameStatus, Tournament, iso_utc
from ...store.store import BotRow
from ...store.submissions import owned_positions, owner_of
from ..auth import csrf_token, require_user
from ..negotiate import page
from ..owners import readers_bots
from .common import last_finished, path_for, path_id, store_of, tournament_or_404
from .games import game_url
from .versions import version_list

RECORDS_READ = 200  # of a version's newest games, read for times, errors and streaks
GAMES_LISTED = 50  # a version's games on the page, failures and errors first
LOG_SLICE_BYTES = 64 * 1024  # of a game's slice of a bot's log shown (its end)
STREAK_KINDS = ("crash", "startup", "disconnect")  # failures that end a bot's game by its process


@dataclass
class Tally:
    """One version's figures over its newest games (as many as RECORDS_READ)."""

    games: int = 0
    errors: int = 0
    forfeits: int = 0
    move_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    streak_now: int = 0
    streak_longest: int = 0

    def to_dict(self) -> dict[str, Any]:
        per100 = (lambda n: round(100 * n / self.games, 1)) if self.games else (lambda n: 0.0)
        return {"games_read": self.games, "errors_per_100_games": per100(self.errors),
                "forfeits_per_100_games": per100(self.forfeits), "move_ms": _percentiles(self.move_ms),
                "cpu_ms": _percentiles(self.cpu_ms),
                "crash_streak": {"now": self.streak_now, "longest": self.streak_longest}}


def _percentiles(values: list[float]) -> dict[str, float | None]:
    ordered = sorted(values)
    at = (lambda q: round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)) if ordered else (lambda q: None)
    return {"p50": at(0.5), "p99": at(0.99)}


def _allowed(request: Request, t: Tournament, bot: BotRow) -> None:
    """401 without a user; 404 (told apart from no such bot by nothing) for a bot not the reader's."""
    require_user(request)
    if bot.position not in readers_bots(request, t):
        raise HTTPException(404, f"you have no private page of {bot.name!r} in {t.name!r}")


def _bot(request: Request, t: Tournament) -> BotRow:
    name = request.path_params["bot"]
    found = next((b for b in store_of(request).bots(t.id) if b.name == name), None)
    if found is None:
        raise HTTPException(404, f"no bot named {name!r} in tournament {t.name!r}")
    return found


def _versions(request: Request, t: Tournament, bot: BotRow) -> list[BotRow]:
    """The versions of ``bot``'s owner in the tournament (a bot of the operator's: itself), newest first."""
    store = store_of(request)
    owner = owner_of(store, bot.id)
    positions = owned_positions(store, t.id, owner) if owner is not None else {bot.position}
    return sorted((b for b in store.bots(t.id) if b.position in positions), key=lambda b: -b.position)


def _records(request: Request, t: Tournament, bot: BotRow) -> list[tuple[int, list[int], str, Any, Any]]:
    """(number, seats, status, result, record) of the bot's newest finished games, newest first:
    their numbers from the game_seats index (ix_game_seats_bot), then those games' rows alone."""
    with store_of(request).session() as s:
        numbers = s.execute(select(GameSeat.game_number).distinct()
                            .where(GameSeat.tournament_id == t.id, GameSeat.bot_position == bot.position)
                            .order_by(GameSeat.game_number.desc()).limit(RECORDS_READ)).scalars().all()
        rows = s.execute(select(Game.number, Game.seat_bots, Game.status, Game.result, Game.record)
                         .where(Game.tournament_id == t.id, Game.number.in_(numbers),
                                Game.status.in_([GameStatus.DONE.value, GameStatus.FAILED.value]))
                         .order_by(Game.number.desc())).all()
    return [(n, list(seats), status, result, record) for n, seats, status, result, record in rows]


def _game_entry(request: Request, t: Tournament, bot: BotRow, number: int, seats: list[int], result: Any,
                record: dict[str, Any], tally: Tally) -> dict[str, Any]:
    """One game as the owner's page lists it, counted into ``tally``."""
    mine = {seat for seat, p in enumerate(seats) if p == bot.position}
    failures = [f for f in (result or {}).get("failures", []) if int(f.get("seat", 0)) in mine]
    errors = [r for r in record.get("bot_reports", []) if r.get("seat") in mine and r.get("error")]
    tally.games += 1
    tally.errors += len(errors)
    tally.forfeits += any(f.get("forfeit") for f in failures)
    for seat, micros in record.get("timings_us", []):
        if seat in mine and micros:
            tally.move_ms.append(micros / 1000)
    cpu = record.get("cpu_us") or []
    for index, (seat, _) in enumerate(record.get("timings_us", [])):
        if seat in mine and index < len(cpu) and cpu[index] is not None:
            tally.cpu_ms.append(cpu[index] / 1000)
    return {"game": number, "url": path_for(request, "owner_game", tournament=t.name, bot=bot.name, number=number),
            "public_url": game_url(request, t.name, number),
            "failures": [{"kind": kind_name(f.get("kind", "")), "reason": str(f.get("reason", "")),
                          "forfeit": bool(f.get("forfeit"))} for f in failures],
            "errors": len(errors), "first_error": errors[0]["error"] if errors else None}


def owner_page(request: Request) -> Response:
    t = tournament_or_404(request)
    bot = _bot(request, t)
    _allowed(request, t, bot)
    versions = []
    for version in _versions(request, t, bot):
        tally, games = Tally(), []
        for number, seats, _, result, text in _records(request, t, version):
            record = json.loads(text) if text else {}
            games.append(_game_entry(request, t, version, number, seats, result, record, tally))
        # oldest first for the streaks: a run of games the bot's process did not see to their end
        run = 0
        for entry in reversed(games):
            run = run + 1 if any(f["kind"] in STREAK_KINDS for f in entry["failures"]) else 0
            tally.streak_longest = max(tally.streak_longest, run)
        tally.streak_now = run
        games.sort(key=lambda g: (not (g["failures"] or g["errors"]), -g["game"]))
        versions.append({"bot": version.name, "active": version.active, "figures": tally.to_dict(),
                         "games": games[:GAMES_LISTED], "public_url": path_for(request, "bot", tournament=t.name,
                                                                             bot=version.name)})
    data: dict[str, Any] = {"tournament": t.name, "bot": bot.name, "versions": versions}
    changes = version_list(request, t, store_of(request), bot.name, True)  # the reader may: _allowed said so
    if changes is not None:  # the same forms as on the bot's page (arena/web/pages/versions.py)
        forms = {v["bot"]: v.get("activate_url") for v in changes["versions"]}
        for version in versions:
            version["activate_url"] = forms.get(version["bot"])
        data["retire_url"] = changes["retire_url"]
        if changes["retire_url"] or any(forms.values()):
            data["csrf"] = csrf_token(request)
    return page(request, "owner.html", data, data_as_of=last_finished(request, t.id))


def owner_game(request: Request) -> Response:
    t = tournament_or_404(request)
    bot = _bot(request, t)
    _allowed(request, t, bot)
    number = path_id(request, "number", "game")
    with store_of(request).session() as s:
        found = s.execute(select(Game.seat_bots, Game.record, Game.result, Game.finished_at)
                          .where(Game.tournament_id == t.id, Game.number == number)).first()
    if found is None or bot.position not in found[0]:
        raise HTTPException(404, f"{bot.name!r} played no game {number} in {t.name!r}")
    seats, text, result, finished = found
    record = json.loads(text) if text else {}
    mine = [seat for seat, p in enumerate(seats) if p == bot.position]
    reports = [r for r in record.get("bot_reports", []) if r.get("seat") in mine]
    logs = [_log_slice(request, t, s) for seat, s in enumerate(record.get("seats", [])) if seat in mine]
    failures = [f for f in (result or {}).get("failures", []) if int(f.get("seat", 0)) in mine]
    return page(request, "owner_game.html", {
        "tournament": t.name, "bot": bot.name, "game": number, "seats": mine, "finished_at": iso_utc(finished),
        "public_url": game_url(request, t.name, number),
        "owner_url": path_for(request, "owner", tournament=t.name, bot=bot.name),
        "failures": [{"kind": kind_name(f.get("kind", "")), "reason": str(f.get("reason", "")),
                      "forfeit": bool(f.get("forfeit"))} for f in failures],
        "reports": [{"play": int(r["play"]) + 1, **{k: str(r[k]) for k in ("error", "note") if k in r}}
                    for r in reports],
        "logs": logs}, data_as_of=finished)


def _log_slice(request: Request, t: Tournament, seat: dict[str, Any]) -> dict[str, Any]:
    """What the bot's log holds of this game (from the record's offsets), where this machine has
    the tournament's logs; else why not."""
    where = seat.get("log") if isinstance(seat, dict) else None
    folder = dict(request.app.state.settings.logs).get(t.name)
    if not isinstance(where, dict) or folder is None:
        return {"readable": False, "text": "", "why": "this server does not have the log of this game (it is kept "
                "where the game was played: beside the tournament file, or on the worker that played it)"}
    name, start, end = str(where.get("file", "")), int(where.get("from", 0)), int(where.get("to", 0))
    path = Path(folder) / name
    if "/" in name or not name.endswith(".log") or not path.is_file():
        return {"readable": False, "text": "", "why": f"no log file {name!r} here"}
    start = max(start, end - LOG_SLICE_BYTES)
    try:
        with path.open("rb") as handle:
            handle.seek(start)
            data = handle.read(max(0, end - start))
    except OSError as exc:
        return {"readable": False, "text": "", "why": f"cannot read {name}: {exc.strerror or exc}"}
    return {"readable": True, "file": name, "from": start, "to": end, "cut": int(where.get("from", 0)) < start,
            "text": data.decode("utf-8", errors="replace"), "why": None}


ROUTES = [Route("/t/{tournament}/owner/{bot}", owner_page, name="owner"),
          Route("/t/{tournament}/owner/{bot}/games/{number:id}", owner_game, name="owner_game")]
