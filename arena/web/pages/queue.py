"""A tournament's queue: the games waiting to be played and about when each starts, the
challenges waiting after them, and the bots new to the pool waiting for their first games (at the
ladder's next round); arena/play/waiting.py reads and estimates it, as for `arena status`."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...play.waiting import waiting
from ..negotiate import page
from .common import last_finished, path_for, store_of, tournament_or_404


def queue_page(request: Request) -> Response:
    t = tournament_or_404(request)
    stored = (t.settings or {}).get("new_bot_games")
    data = waiting(store_of(request), t.id, stored if isinstance(stored, int) and not isinstance(stored, bool) else None,
                   now=request.app.state.clock())
    for game in data["games"]["listed"]:
        game["url"] = path_for(request, "game", tournament=t.name, number=game["number"])
    for bot in data["new_bots"]:
        bot["url"] = path_for(request, "bot", tournament=t.name, bot=bot["bot"])
    return page(request, "queue.html", data, data_as_of=last_finished(request, t.id))


ROUTES = [Route("/t/{tournament}/queue", queue_page, name="queue")]
