"""A bot's page: its rating and record, its rating history drawn as SVG on the server (μ with a
±σ band, a point per rated game), its score against each opponent with a confidence interval, its
recent games, every failure with its kind, reason and play; to the user who submitted it alone, the
tail of its log files where this machine can read them. A bot removed from a ladder keeps its page.
A submitted bot's page lists its owner's versions with their ratings, which one plays, and for its
owner and the operators the forms that change it (arena/web/pages/versions.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...config import BOT_NAME
from ...rating.failures import failure_place, kind_name
from ...rating.standings import Standings
from ...rating.stats import total_score_interval
from ...store.models import Game, GameSeat, RatingHistory, Tournament, iso_utc
from ...store.store import BotRow
from ..negotiate import page
from ..auth import csrf_token
from ..owners import readers_bots
from ..privacy import public_text
from .challenges import challenge_form
from .common import last_finished, path_for, store_of, tournament_or_404
from .games import GameFilter, bot_url, game_rows, game_url, page_numbers
from .leaderboard import standings_for
from .versions import version_list

HISTORY_POINTS = 1000  # the chart's newest rated games (a point each); the JSON says how many there are
RECENT_GAMES = 20
FAILURES_SHOWN = 200  # newest first
LOG_FILES = 4  # the newest of the bot's log files (one per process it ran as)
LOG_EXCERPT_BYTES = 4096  # the tail of each
CHART_W, CHART_H, PAD_L, PAD_R, PAD_T, PAD_B = 640, 220, 48, 12, 10, 28


def bot_or_404(request: Request, t: Tournament) -> BotRow:
    name = request.path_params["bot"]
    for bot in store_of(request).bots(t.id):
        if bot.name == name:
            return bot
    raise HTTPException(404, f"no bot named {name!r} in tournament {t.name!r}")


def history(request: Request, bot: BotRow) -> tuple[list[tuple[int, float, float]], int]:
    """The bot's rating after each of its newest HISTORY_POINTS rated games, oldest first, and how
    many rated games it has (ix_rating_history_bot)."""
    with store_of(request).session() as s:
        total = s.scalar(select(func.count()).select_from(RatingHistory).where(RatingHistory.bot_id == bot.id)) or 0
        rows = s.execute(select(RatingHistory.game_number, RatingHistory.mu, RatingHistory.sigma)
                         .where(RatingHistory.bot_id == bot.id)
                         .order_by(RatingHistory.game_number.desc()).limit(HISTORY_POINTS)).all()
    return [(int(n), float(mu), float(sigma)) for n, mu, sigma in reversed(rows)], total


def chart(points: list[tuple[int, float, float]]) -> dict[str, Any] | None:
    """The SVG's geometry: x by game number, y by rating; the μ line, the ±σ band, a point per game."""
    if not points:
        return None
    low = min(mu - sigma for _, mu, sigma in points)
    high = max(mu + sigma for _, mu, sigma in points)
    if high - low < 1e-9:
        low, high = low - 1, high + 1
    first, last = points[0][0], points[-1][0]
    width, height = CHART_W - PAD_L - PAD_R, CHART_H - PAD_T - PAD_B

    def x(number: int) -> float:
        return round(PAD_L + (width / 2 if first == last else (number - first) / (last - first) * width), 1)

    def y(value: float) -> float:
        return round(PAD_T + (high - value) / (high - low) * height, 1)

    upper = [f"{x(n)},{y(mu + sigma)}" for n, mu, sigma in points]
    lower = [f"{x(n)},{y(mu - sigma)}" for n, mu, sigma in reversed(points)]
    return {
        "width": CHART_W, "height": CHART_H, "left": PAD_L, "right": CHART_W - PAD_R, "top": PAD_T,
        "bottom": CHART_H - PAD_B,
        "band": " ".join(upper + lower), "line": " ".join(f"{x(n)},{y(mu)}" for n, mu, _ in points),
        "points": [{"game": n, "x": x(n), "y": y(mu), "mu": round(mu, 3), "sigma": round(sigma, 3)}
                   for n, mu, sigma in points],
        "y_labels": [{"y": y(v), "value": f"{v:.1f}"} for v in (high, (high + low) / 2, low)],
        "x_labels": [{"x": x(first), "value": first}] + ([{"x": x(last), "value": last}] if last != first else []),
    }


def opponent_scores(standings: Standings, name: str) -> list[dict[str, Any]]:
    """The bot's score against each opponent it met (1 per game ranked above it, 0.5 level, 0
    below: the head-to-head sums), with a 95% Wilson interval (rating/stats.py)."""
    h2h = standings.head_to_head
    return [{"opponent": opponent, **total_score_interval(h2h.score[name, opponent], h2h.games[name, opponent])}
            for opponent in sorted(h2h.names) if opponent != name and h2h.games[name, opponent]]


def failures(request: Request, t: Tournament, bot: BotRow) -> list[dict[str, Any]]:
    """Every failure of the bot (a forfeit or a move the referee replaced), newest first."""
    with store_of(request).session() as s:
        rows = s.execute(
            select(Game.number, GameSeat.seat, Game.result, Game.finished_at)
            .join(Game, (Game.tournament_id == GameSeat.tournament_id) & (Game.number == GameSeat.game_number))
            .where(GameSeat.tournament_id == t.id, GameSeat.bot_position == bot.position, GameSeat.failures > 0)
            .order_by(GameSeat.game_number.desc()).limit(FAILURES_SHOWN)).all()
    out = []
    for number, seat, result, finished in rows:
        for f in (result or {}).get("failures", []):
            if int(f.get("seat", 0)) != seat:
                continue
            out.append({"game": number, "url": game_url(request, t.name, number), "kind": kind_name(f.get("kind", "")),
                        "reason": public_text(str(f.get("reason", "")), [bot.spec]), "forfeit": bool(f.get("forfeit")),
                        "where": failure_place(f), "deal": int(f.get("deal", 0)) + 1,
                        "play": int(f.get("playNumber", 0)),
                        "finished_at": iso_utc(finished)})
    return out


def log_excerpts(request: Request, t: Tournament, bot: BotRow) -> dict[str, Any]:
    """The tail of the bot's newest log files, when this app was told where the tournament's logs
    are (``arena web FILE``: next to the file); else why there are none. Neither the database nor
    a game's record names a log file: they are kept by whoever played the games."""
    folder = dict(request.app.state.settings.logs).get(t.name)
    if folder is None:
        return {"readable": False, "files": [],
                "why": "the bot logs are not readable here: the database does not say where they are (they are "
                       "kept beside the tournament file, in <name>-logs/, on the machine that played the games, or "
                       "in each worker's --logs folder); serve the tournament FILE with arena web to show them"}
    if not BOT_NAME.fullmatch(bot.name):
        return {"readable": False, "files": [], "why": "this bot's name cannot be a log file's name"}
    pattern = re.compile(re.escape(bot.name) + r"-\d+\.log")
    try:
        found = [p for p in Path(folder).iterdir() if pattern.fullmatch(p.name) and p.is_file()]
    except OSError as exc:
        return {"readable": False, "files": [], "why": f"cannot read the log folder: {exc.strerror or exc}"}
    found.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    files = []
    for path in found[:LOG_FILES]:
        try:
            size = path.stat().st_size
            with path.open("rb") as handle:
                handle.seek(max(0, size - LOG_EXCERPT_BYTES))
                tail = handle.read(LOG_EXCERPT_BYTES)
        except OSError as exc:
            files.append({"name": path.name, "size": None, "excerpt": "", "error": exc.strerror or str(exc)})
            continue
        if size > LOG_EXCERPT_BYTES and b"\n" in tail:
            tail = tail[tail.index(b"\n") + 1:]  # from a line's start
        files.append({"name": path.name, "size": size, "cut": size > len(tail),
                      "excerpt": tail.decode("utf-8", errors="replace"), "error": None})
    return {"readable": True, "files": files,
            "why": None if files else f"no log file of this bot in the tournament's log folder ({len(found)} found)"}


def bot_page(request: Request) -> Response:
    t = tournament_or_404(request)
    bot = bot_or_404(request, t)
    store = store_of(request)
    bots = {b.position: b for b in store.bots(t.id)}
    standings = standings_for(request, t)
    opponents = opponent_scores(standings, bot.name)
    row = next(r for r in standings.rows if r.name == bot.name)
    points, rated = history(request, bot)
    numbers, _, older = page_numbers(store, t.id, GameFilter(bot=bot.position), size=RECENT_GAMES)
    games_url = path_for(request, "games", tournament=t.name)
    data = {
        "tournament": t.name, "bot": bot.name, "active": bot.active, "position": bot.position,
        "leaderboard_url": path_for(request, "leaderboard", tournament=t.name),
        "games_url": games_url,
        "standing": {"rank": row.rank, "conservative": row.conservative, "mu": row.mu, "sigma": row.sigma,
                     "games": row.games, "wins": row.wins, "draws": row.draws, "losses": row.losses,
                     "points_per_game": row.points_per_game, "forfeits": dict(row.forfeits),
                     "provisional": bool(row.provisional), "provisional_reasons": list(row.provisional)},
        "history": {"rated_games": rated, "shown": len(points),
                    "points": [{"game": n, "mu": mu, "sigma": sigma} for n, mu, sigma in points]},
        "chart": chart(points),
        "opponents": [dict(o, url=bot_url(request, t.name, o["opponent"])) for o in opponents],
        "recent_games": game_rows(request, t, numbers, bots, for_bot=bot.position),
        "more_games": older,
        "failures": failures(request, t, bot),
    }
    form = challenge_form(request, t, bot.name, bot.position)
    if form is not None:  # the bot's owner, where challenges are open (docs/challenges.md)
        data["challenge"] = form
    reader = bot.position in readers_bots(request, t)  # its owner or an operator (docs/web.md, "Security model")
    versions = version_list(request, t, store, bot.name, reader)
    if versions is not None:  # a submitted bot: its owner's versions, and the forms that change which plays
        data["versions"] = versions
        if versions["retire_url"] or any("activate_url" in v for v in versions["versions"]):
            data["csrf"] = csrf_token(request)
    if reader:
        data["logs"] = log_excerpts(request, t, bot)
        data["private_url"] = path_for(request, "owner", tournament=t.name, bot=bot.name)
    return page(request, "bot.html", data, data_as_of=last_finished(request, t.id))


ROUTES = [Route("/t/{tournament}/bots/{bot:path}", bot_page, name="bot")]
