"""The front page: every tournament and ladder in the database, with how far each has got."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...store.challenges import is_challenge_tournament
from ...store.models import Bot, Game, Tournament, iso_utc
from ..negotiate import page
from .common import last_finished, path_for, store_of


def tournament_rows(request: Request) -> list[dict[str, Any]]:
    """One summary per tournament: active bots, rounds, games by status, the last game's time."""
    with store_of(request).session() as s:
        counts: dict[int, dict[str, int]] = {}
        for tid, status, n in s.execute(select(Game.tournament_id, Game.status, func.count())
                                        .group_by(Game.tournament_id, Game.status)):
            counts.setdefault(tid, {})[status] = n
        bots = dict(s.execute(select(Bot.tournament_id, func.count()).where(Bot.active.is_(True))
                              .group_by(Bot.tournament_id)).all())
        last = dict(s.execute(select(Game.tournament_id, func.max(Game.finished_at))
                              .group_by(Game.tournament_id)).all())
        rows = []
        for t in s.scalars(select(Tournament).order_by(Tournament.name)):
            if is_challenge_tournament(t.settings):  # a challenge's games: on its challenge's page
                continue
            rows.append({"name": t.name, "url": path_for(request, "leaderboard", tournament=t.name),
                         "bots": bots.get(t.id, 0), "rounds": t.rounds,
                         "games": counts.get(t.id, {}),
                         "last_game_at": iso_utc(last.get(t.id))})
        return rows


def index(request: Request) -> Response:
    return page(request, "tournaments.html", {"tournaments": tournament_rows(request)},
                data_as_of=last_finished(request))


ROUTES = [Route("/", index, name="index")]
