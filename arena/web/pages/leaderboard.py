"""A tournament's leaderboard: the standings the `arena standings` command prints (the stored
TrueSkill ratings, records and forfeits, through play/runner.current_standings), each bot's last
game, sortable by any column on the server; provisional bots marked, with why; the head-to-head
table of a round robin, and a note for each bot ranked below one it leads head to head."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import func, select
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...config import StandingsSettings
from ...play.runner import current_standings
from ...rating.results import FORFEIT_KINDS
from ...rating.standings import Standings, note_dict, provisional_legend, rank_notes, rule_dict
from ...store.models import Game, GameSeat, Tournament, iso_utc
from ..negotiate import page
from .common import cached, last_finished, path_for, store_of, tournament_or_404
from .games import bot_url, game_url

# column -> (sort key, highest first); "-column" reverses; ties keep the standings' order
SORTS: dict[str, tuple[Callable[[dict[str, Any]], Any], bool]] = {
    "rank": (lambda r: r["rank"], False),
    "bot": (lambda r: r["name"], False),
    "conservative": (lambda r: r["conservative"], True),
    "mu": (lambda r: r["mu"], True),
    "sigma": (lambda r: r["sigma"], False),
    "games": (lambda r: r["games"], True),
    "wins": (lambda r: r["wins"], True),
    "draws": (lambda r: r["draws"], True),
    "losses": (lambda r: r["losses"], True),
    "points_per_game": (lambda r: r["points_per_game"], True),
    "forfeits": (lambda r: sum(r["forfeits"].values()), True),
    "last_game": (lambda r: (r["last_game"] or {}).get("number", 0), True),
}


def _last_games(request: Request, tid: int) -> dict[int, tuple[int, str | None]]:
    """Each bot's (by position) newest finished game: its number and when it finished."""
    with store_of(request).session() as s:
        last = (select(GameSeat.bot_position, func.max(GameSeat.game_number).label("number"))
                .where(GameSeat.tournament_id == tid).group_by(GameSeat.bot_position).subquery())
        rows = s.execute(select(last.c.bot_position, last.c.number, Game.finished_at)
                         .join(Game, (Game.tournament_id == tid) & (Game.number == last.c.number))).all()
    out = {}
    for position, number, finished in rows:
        out[position] = (number, iso_utc(finished))
    return out


def standings_settings(request: Request, t: Tournament) -> StandingsSettings:
    """When a bot of ``t`` is provisional: its file's [standings] when the app was started with that
    file (`arena web FILE`), else as stored with the tournament (its last run), else the defaults."""
    given = dict(request.app.state.settings.standings)
    return given.get(t.name) or StandingsSettings.from_stored(t.settings)


def standings_for(request: Request, t: Tournament) -> Standings:
    """The tournament's current standings, cached until a game finishes or the thresholds change."""
    settings = standings_settings(request, t)
    return cached(request, f"standings {settings}", t, lambda: current_standings(store_of(request), t.id, settings))


def sorted_rows(rows: list[dict[str, Any]], sort: str) -> list[dict[str, Any]]:
    """``rows`` in the order ``sort`` names (a column of SORTS, ``-`` first to reverse it)."""
    column = sort.removeprefix("-")
    if column not in SORTS:
        raise HTTPException(400, f"sort must be one of {', '.join(SORTS)} (a - first reverses it), not {sort[:40]!r}")
    key, high_first = SORTS[column]
    return sorted(rows, key=key, reverse=high_first != sort.startswith("-"))


def leaderboard_data(request: Request, t: Tournament, sort: str) -> dict[str, Any]:
    store = store_of(request)
    standings = standings_for(request, t)
    bots = {b.name: b for b in store.bots(t.id)}
    last = _last_games(request, t.id)
    rows = []
    for row in standings.rows:
        bot = bots[row.name]
        number, finished = last.get(bot.position, (None, None))
        rows.append({
            "rank": row.rank, "name": row.name, "url": bot_url(request, t.name, row.name), "active": bot.active,
            "conservative": row.conservative, "mu": row.mu, "sigma": row.sigma, "games": row.games,
            "wins": row.wins, "draws": row.draws, "losses": row.losses, "points_per_game": row.points_per_game,
            "forfeits": {kind: row.forfeits[kind] for kind in FORFEIT_KINDS},
            "provisional": bool(row.provisional), "provisional_reasons": list(row.provisional),
            "last_game": {"number": number, "finished_at": finished, "url": game_url(request, t.name, number)}
            if number is not None else None,
        })
    h2h = standings.head_to_head
    round_robin = t.rounds <= 1  # a ladder's pairings change by round: its head-to-head is sparse
    with store_of(request).session() as s:
        names = list(s.scalars(select(Tournament.name).order_by(Tournament.name)))
    return {
        "tournament": t.name, "rounds": t.rounds, "rated_through": t.rated_through, "sort": sort,
        "sorts": list(SORTS), "forfeit_kinds": list(FORFEIT_KINDS),
        "standings": sorted_rows(rows, sort),
        "provisional": rule_dict(standings.rule),
        "provisional_legend": provisional_legend(standings.rule) if standings.rule is not None else None,
        "rank_notes": [note_dict(note) for note in rank_notes(standings)],
        # a row per bot in standings order, a cell per opponent (None on the diagonal)
        "head_to_head": [{"bot": a, "against": [{"opponent": b, "score": h2h.score[a, b], "games": h2h.games[a, b]}
                                                if a != b else None for b in h2h.names]}
                         for a in h2h.names] if round_robin else None,
        "tournaments": [{"name": name, "url": path_for(request, "leaderboard", tournament=name)}
                        for name in names],
        "games_url": path_for(request, "games", tournament=t.name),
    }


def leaderboard(request: Request) -> Response:
    t = tournament_or_404(request)
    data = leaderboard_data(request, t, request.query_params.get("sort") or "rank")
    return page(request, "leaderboard.html", data, data_as_of=last_finished(request, t.id))


ROUTES = [Route("/t/{tournament}", leaderboard, name="leaderboard")]
