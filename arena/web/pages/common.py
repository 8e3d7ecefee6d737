"""What every page needs: the database, the tournament a path names, times shown as UTC."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import func, select
from starlette.exceptions import HTTPException
from starlette.requests import Request

from ...store.models import Game, Tournament
from ...store.store import Store


def store_of(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def aware(moment: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes; the arena writes UTC."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


def tournament_or_404(request: Request) -> Tournament:
    """The tournament named by the path's ``tournament`` parameter."""
    name = request.path_params["tournament"]
    with store_of(request).session() as s:
        found = s.scalar(select(Tournament).where(Tournament.name == name))
    if found is None:
        raise HTTPException(404, f"no tournament named {name!r}")
    return found


def last_finished(request: Request, tid: int | None = None) -> datetime | None:
    """When the newest game (of tournament ``tid``, or of any) finished: the data's freshness."""
    query = select(func.max(Game.finished_at))
    if tid is not None:
        query = query.where(Game.tournament_id == tid)
    with store_of(request).session() as s:
        return aware(s.scalar(query))
