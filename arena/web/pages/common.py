"""What every page needs: the database, the tournament a path names, the numbers a path or a
query gives (bounded: never a 500), times shown as UTC."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import quote

from sqlalchemy import func, select
from starlette.convertors import Convertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.routing import NoMatchFound

from ...store.models import Bot, Game, Tournament, as_utc
from ...store.store import Store
from ..settings import MAX_ID, parse_id

T = TypeVar("T")
OUT_OF_RANGE = -1  # what the id convertor gives for digits beyond MAX_ID: no row has it


class IdConvertor(Convertor[int]):
    """``{name:id}`` in a route: ASCII digits (as Starlette's ``int``) as a number of at most
    MAX_ID; more digits than that, or a larger value, become OUT_OF_RANGE, which ``path_id``
    answers as a 404 (Starlette's ``int`` hands 2**63 to the database, which fails: a 500)."""

    regex = "[0-9]+"

    def convert(self, value: str) -> int:
        parsed = parse_id(value)
        return parsed if parsed is not None else OUT_OF_RANGE

    def to_string(self, value: int) -> str:
        return str(int(value))


register_url_convertor("id", IdConvertor())  # before any route is made (the page modules import this one)


def path_id(request: Request, name: str, what: str) -> int:
    """The path's ``{name:id}``: a 404 when it is out of range (no such ``what`` can exist)."""
    value: int = request.path_params[name]
    if value == OUT_OF_RANGE:
        raise HTTPException(404, f"no {what} with that number (they go up to {MAX_ID})")
    return value


def query_id(request: Request, name: str, what: str = "a game number") -> int | None:
    """Query parameter ``name`` as a number from 0 to MAX_ID (None when absent or empty); anything
    else is a 400 saying so (``str.isdigit`` would take ``²`` and ``int`` then fail)."""
    text = request.query_params.get(name)
    if text is None or text == "":
        return None
    value = parse_id(text)
    if value is None:
        raise HTTPException(400, f"{name} must be {what} from 0 to {MAX_ID} in ASCII digits, not {text[:40]!r}")
    return value


def store_of(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


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
        return as_utc(s.scalar(query))


def url_or_path(request: Request, name: str, path: str, **params: Any) -> str:
    """The URL of route ``name``, or ``path`` when this app has no such route (a page another part
    of the app serves, such as the replay viewer)."""
    try:
        return path_for(request, name, **params)
    except NoMatchFound:
        return path


def freshness_key(request: Request, t: Tournament) -> tuple[Any, ...]:
    """What a tournament's standings depend on: its bots, its finished games and how far it is
    rated. Cached figures are reused while this is unchanged (one indexed query)."""
    with store_of(request).session() as s:
        finished, newest = s.execute(select(func.count(), func.max(Game.finished_at))
                                     .where(Game.tournament_id == t.id, Game.finished_at.is_not(None))).one()
        bots = s.scalar(select(func.count()).select_from(Bot).where(Bot.tournament_id == t.id))
    return t.rated_through, finished, newest, bots


def cached(request: Request, what: str, t: Tournament, compute: Callable[[], T]) -> T:
    """``compute()`` for tournament ``t``, kept in the app while ``freshness_key`` is unchanged:
    standings read every finished game, which need not happen on every page view."""
    store: dict[tuple[str, int], tuple[tuple[Any, ...], Any]] | None = getattr(request.app.state, "page_cache", None)
    if store is None:
        store = request.app.state.page_cache = {}
    key = freshness_key(request, t)
    hit = store.get((what, t.id))
    if hit is not None and hit[0] == key:
        value: T = hit[1]
        return value
    value = compute()
    store[(what, t.id)] = (key, value)
    return value


def path_for(request: Request, name: str, **params: Any) -> str:
    """The path of route ``name`` with ``params`` percent-encoded: a bot-chosen name with a ``/``,
    a space or a ``<`` stays one path segment (url_for puts values in as they are)."""
    quoted = {key: quote(str(value), safe="") if isinstance(value, str) else value for key, value in params.items()}
    return str(request.url_for(name, **quoted).path)
