"""The ASGI app of `arena web`: routes, the database it reads, and error pages in the app's
style (a 404 or a 500 never shows a traceback; the error goes to the log)."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from referee.metrics import watch_event_loop

from ..errors import UsageError, quoted
from ..notify.deliver import Deliverer, DeliverySettings
from ..store.outage import Outage, unreachable
from ..store.store import Store, describe_url
from .auth import SessionKeys, Sessions
from .checks import SubmissionChecks, require_bwrap, submission_runtimes
from .guard import guarded
from .live_hub import LiveHub
from .nav import install as install_nav
from .negotiate import TEMPLATES, Clock, JsonSuffix, page, system_clock, wants_json
from .pages import (bot, challenges, game, games, kits, leaderboard, live, login, me, owner, queue, submit,
                    tournaments, versions)
from .request_metrics import RequestMetrics
from .settings import UPLOAD_THREADS, WebSettings

log = logging.getLogger("arena.web")
RETRY_AFTER_S = 5  # a page answered 503 while the database is unreachable: when to try again
install_nav(TEMPLATES.env)  # every page's header (arena/web/nav.py)


def routes() -> list[BaseRoute]:
    """Every page's routes, one module per page (arena/web/pages/)."""
    return [
        *tournaments.ROUTES,
        *leaderboard.ROUTES, *bot.ROUTES, *games.ROUTES, *queue.ROUTES,
        *live.ROUTES,
        *game.ROUTES,
        *login.ROUTES,
        *submit.ROUTES,
        *challenges.ROUTES,
        *kits.ROUTES,
        *owner.ROUTES,
        *me.ROUTES,
        *versions.ROUTES,
        Mount("/static", StaticFiles(directory=str(Path(__file__).parent / "static")), name="static"),
    ]


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 401 and request.method == "GET" and not wants_json(request) \
            and request.url.path != "/login":
        # a person at a page that needs a user: to the login form, and back here after it
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"{request.url_for('login').path}?{urlencode({'next': target})}", status_code=303)
    response = page(request, "error.html", {"status": exc.status_code, "error": exc.detail}, status=exc.status_code)
    response.headers.update(exc.headers or {})
    return response


async def _server_error(request: Request, exc: Exception) -> Response:
    if unreachable(exc):  # an outage: said once (not a traceback per page), and the page comes back by itself
        request.app.state.outage.failed(exc)
        response = page(request, "error.html", {"status": 503, "error": "the database is unreachable for now; "
                                                "try again in a moment"}, status=503)
        response.headers["Retry-After"] = str(RETRY_AFTER_S)
        return response
    log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return page(request, "error.html", {"status": 500, "error": "the server could not answer this page; "
                                         "the reason is in its log"}, status=500)


class OutageWatch:
    """Says when the database is back: the first page answered (below 500) after an outage
    (``_server_error`` says when it went); pages need no retry of their own, the next request reads again."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        outage: Outage = scope["app"].state.outage
        if scope["type"] != "http" or outage.down_since is None:
            await self.app(scope, receive, send)
            return
        status = 0

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        await self.app(scope, receive, sending)
        if 0 < status < 500:
            outage.succeeded()


class ArenaApp(Starlette):
    """Starlette with arena/web/guard.py's guards outside its whole stack, its error middleware
    included: a 500 page carries the security headers as every other answer does."""

    def build_middleware_stack(self) -> ASGIApp:
        return guarded(super().build_middleware_stack(), self.state.settings)


def create_app(settings: WebSettings, store: Store | None = None, clock: Clock = system_clock) -> Starlette:
    """The app over ``settings.db`` (or an open ``store``, which the caller then closes); ``clock``
    says when an answer is made (its ``generated_at``, which pages' relative times count from)."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if settings.submit is not None:  # submissions write: users' bots, their checks' verdicts
            app.state.write_store = Store(settings.db)
            app.state.submit_tid = app.state.write_store.tournament_id(settings.submit)
            if app.state.submit_tid is None:
                app.state.write_store.close()
                raise UsageError(f"--submit: no ladder named {quoted(settings.submit)} in the database")
            require_bwrap(settings)
            app.state.runtimes = submission_runtimes(settings)
            app.state.checks = SubmissionChecks(app.state.write_store, app.state.submit_tid, settings)
            app.state.checks.resume()
            # notifications (submission verdicts, crash streaks, challenges) go out from here, off the page threads
            app.state.deliverer = Deliverer(app.state.write_store, settings.delivery or DeliverySettings())
            app.state.deliverer.start()
            app.state.upload_pool = ThreadPoolExecutor(UPLOAD_THREADS, thread_name_prefix="arena-upload")
            app.state.uploading = set()  # users with an upload being taken (one each at a time)
        app.state.store = store if store is not None else Store(settings.db, read_only=True)
        watcher = asyncio.ensure_future(watch_event_loop()) if settings.metrics_listen else None
        try:
            yield
        finally:
            app.state.live_hub.close()
            if watcher is not None:
                watcher.cancel()
            if settings.submit is not None:
                app.state.deliverer.stop()
                app.state.upload_pool.shutdown(wait=True)
                app.state.checks.close()
                app.state.write_store.close()
            if store is None:
                app.state.store.close()

    middleware = [Middleware(OutageWatch), Middleware(JsonSuffix), Middleware(RequestMetrics), Middleware(Sessions),
                  # a replay's states are ~150 KB of JSON, ~11 KB gzipped; Starlette leaves the live
                  # games' event streams (text/event-stream) uncompressed
                  Middleware(GZipMiddleware, minimum_size=1024)]
    app = ArenaApp(routes=routes(), middleware=middleware, lifespan=lifespan,
                   exception_handlers={HTTPException: _http_error, Exception: _server_error})
    app.state.settings = settings
    app.state.clock = clock
    # the web app never stops for an outage: it answers 503 until the database is back
    app.state.outage = Outage(describe_url(settings.db), window=math.inf,
                              meanwhile="pages answer 503 until it is back")
    app.state.session_keys = SessionKeys()  # per run: a restart ends every session (arena/web/auth.py)
    app.state.live_hub = LiveHub(settings)  # one poll per followed game, and the event streams' caps
    return app
