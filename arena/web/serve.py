"""Serving the app: uvicorn on the listen address, after checking it can be had (a taken or
unknown address is one line and exit status 2, not a traceback)."""

from __future__ import annotations

import socket
from typing import Any

import uvicorn
from uvicorn.config import LOGGING_CONFIG

from referee.bots.endpoint import INPROCESS_REFUSED, BotEndpoint
from referee.logs import configured_format
from referee.loop import chosen_loop
from referee.metrics import serve_metrics

from ..errors import UsageError, quoted
from ..store.store import Store
from .app import create_app
from .settings import WebSettings


def inprocess_bots(store: Store, ladder: str) -> str:
    """The ladder's in-process bots in words ("in-process bot x, y"), or "" when it has none."""
    tid = store.tournament_id(ladder)
    names = [b.name for b in store.bots(tid) if BotEndpoint.is_inprocess(b.spec)] if tid is not None else []
    return f"in-process bot{'s' if len(names) > 1 else ''} {', '.join(quoted(n) for n in names)}" if names else ""


def check_listen(host: str, port: int) -> None:
    """Bind once and let go: a taken port or an address not on this machine is refused up front."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def uvicorn_log_config(log_format: str) -> dict[str, Any]:
    """Uvicorn's logging in the command's ``--log-format``: its own lines as ever for text; for json
    its loggers hand their records (at info, whatever -v says) to the root handler referee/logs.py
    set up, access lines included, so every line on stderr is one JSON object."""
    if log_format != "json":
        return LOGGING_CONFIG
    return {"version": 1, "disable_existing_loggers": False,
            "loggers": {name: {"level": "INFO", "handlers": [], "propagate": True}
                        for name in ("uvicorn", "uvicorn.error", "uvicorn.access")}}


def serve(settings: WebSettings) -> int:
    """Run the web app until stopped (Ctrl-C or SIGTERM); the database is checked first."""
    if settings.submit is not None:  # the web writes then: the schema is brought up to date first
        Store(settings.db).close()
    store = Store(settings.db, read_only=True)  # a missing or unreadable database fails here, as one line
    if settings.submit is not None and store.tournament_id(settings.submit) is None:
        store.close()
        raise UsageError(f"--submit: no ladder named {quoted(settings.submit)} in {store.url_for_people}")
    if settings.submit is not None and (own := inprocess_bots(store, settings.submit)):
        store.close()
        raise UsageError(f"--submit: ladder {quoted(settings.submit)} has {own}: {INPROCESS_REFUSED} "
                         "(submitted bots would play beside them)")
    check_listen(settings.host, settings.port)
    if settings.metrics_listen:
        serve_metrics(settings.metrics_listen, "arena web")
    try:
        config = uvicorn.Config(create_app(settings, store), host=settings.host, port=settings.port,
                                # the app reads forwarded headers itself, from settings.trusted_proxies
                                # only (arena/web/guard.py), so uvicorn must not do it a second time
                                log_level="info", proxy_headers=False, server_header=False,
                                loop=chosen_loop(),  # as every other command's (referee/loop.py)
                                log_config=uvicorn_log_config(configured_format()))
        uvicorn.Server(config).run()
    finally:
        store.close()
    return 0
