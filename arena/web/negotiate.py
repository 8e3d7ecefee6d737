"""Every page is also JSON: the same path with ``Accept: application/json`` or a ``.json``
suffix answers the data the page shows, as Datasette does. One function renders both."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Receive, Scope, Send

JSON_SUFFIX = ".json"
TEMPLATES = Jinja2Templates(env=Environment(loader=FileSystemLoader(Path(__file__).parent / "templates"), autoescape=True))


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


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def page(request: Request, template: str, data: dict[str, Any], status: int = 200,
         data_as_of: datetime | None = None) -> Response:
    """The page ``template`` showing ``data``, or ``data`` itself as JSON; both carry the data's
    freshness (``data_as_of``: the newest change they show, and ``generated_at``)."""
    body = dict(data, generated_at=now_iso(),
                data_as_of=data_as_of.isoformat(timespec="seconds") if data_as_of else None)
    if wants_json(request):
        return JSONResponse(body, status_code=status)
    return TEMPLATES.TemplateResponse(request, template, {"data": body}, status_code=status)
