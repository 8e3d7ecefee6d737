"""Every page is also JSON: the same path with ``Accept: application/json`` or a ``.json``
suffix answers the data the page shows, as Datasette does. One function renders both."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, pass_context
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Receive, Scope, Send

from .times import ago_filter, utc_filter

JSON_SUFFIX = ".json"


@pass_context
def _url_path(context: dict[str, Any], name: str, /, **params: Any) -> str:
    """The templates' ``url_for``: the route's path alone. Starlette's would put the request's Host
    in front, so a forged Host would become the origin of the page's links and scripts."""
    request: Request = context["request"]
    return str(request.url_for(name, **params).path)


@pass_context
def _json_path(context: dict[str, Any]) -> str:
    """This page's JSON form (its path with ``.json``, and its query): the footer's link. Built
    from the path as sent, so an encoded ``/`` in a name stays encoded, and always one leading
    slash: a request for ``//elsewhere/x`` must not make a link to another site."""
    request: Request = context["request"]
    raw = request.scope.get("raw_path") or request.url.path.encode()
    path = "/" + quote(raw.decode("latin-1"), safe="/%:@!$&'()*+,;=-._~").lstrip("/")
    query = request.url.query
    return path + JSON_SUFFIX + (f"?{query}" if query else "")


_ENV = Environment(loader=FileSystemLoader(Path(__file__).parent / "templates"), autoescape=True)
_ENV.globals["url_for"] = _url_path  # before Jinja2Templates, which only sets its own where none is
_ENV.globals["json_path"] = _json_path
_ENV.filters["ago"] = ago_filter  # times relative to the answer's generated_at (arena/web/times.py)
_ENV.filters["utc"] = utc_filter  # a time as it is, in UTC
TEMPLATES = Jinja2Templates(env=_ENV)


class JsonSuffix:
    """ASGI middleware: ``/x.json`` is routed as ``/x`` with the JSON format chosen, so every route
    answers both forms without a second route."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].endswith(JSON_SUFFIX) and scope["path"] != JSON_SUFFIX:
            scope = dict(scope, path=scope["path"][: -len(JSON_SUFFIX)], arena_json=True)
            scope["raw_path"] = scope["path"].encode()
        await self.app(scope, receive, send)


def wants_json(request: Request) -> bool:
    """A ``.json`` path, or an Accept header asking for JSON before HTML."""
    if request.scope.get("arena_json"):
        return True
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(UTC)


def now_iso(request: Request | None = None) -> str:
    """Now, as the answer's ``generated_at``: by the app's clock (``app.state.clock``, the system's
    unless a test gave the app a fixed one), to the second."""
    clock: Clock = getattr(request.app.state, "clock", system_clock) if request is not None else system_clock
    return clock().astimezone(UTC).isoformat(timespec="seconds")


def page(request: Request, template: str, data: dict[str, Any], status: int = 200,
         data_as_of: datetime | None = None) -> Response:
    """The page ``template`` showing ``data``, or ``data`` itself as JSON; both carry the data's
    freshness (``data_as_of``: the newest change they show, and ``generated_at``)."""
    body = dict(data, generated_at=now_iso(request),
                data_as_of=data_as_of.isoformat(timespec="seconds") if data_as_of else None)
    if wants_json(request):
        return JSONResponse(body, status_code=status)
    return TEMPLATES.TemplateResponse(request, template, {"data": body}, status_code=status)
