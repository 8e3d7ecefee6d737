"""Every request the web app answers, counted by route and status and timed
(``arena_web_requests_total``, ``arena_web_request_seconds``: arena/metrics.py). The route is its
path template (``/t/{name}``), never the path itself, so the series stay bounded whatever is asked."""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..metrics import WEB_REQUESTS, WEB_SECONDS

UNMATCHED = "unmatched"  # a path no route takes (its 404)


class RequestMetrics:
    """ASGI middleware, inside ``JsonSuffix`` (whose copy of the scope the router fills in with
    the route it chose)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began, status = time.perf_counter(), 500  # an answer never started is the server's error

        async def send_seen(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_seen)
        finally:
            route = scope.get("route")
            name = getattr(route, "path", None) or UNMATCHED
            WEB_SECONDS.labels(name).observe(time.perf_counter() - began)
            WEB_REQUESTS.labels(name, str(status)).inc()
