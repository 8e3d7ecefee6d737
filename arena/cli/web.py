"""`arena web`: the web app over a tournament's database (docs/web.md)."""

from __future__ import annotations

import argparse
from typing import Any

from referee.cli.main import add_metrics_argument

from referee.packages.archive import MAX_ARCHIVE_BYTES
from ..errors import UsageError
from ..web.settings import (
    DEFAULT_LISTEN,
    EVENTS_PER_CLIENT,
    EVENTS_TOTAL,
    MAX_IN_FLIGHT,
    MAX_KEPT_BYTES,
    MAX_PER_HOUR,
    MAX_UPLOAD_BYTES,
    MIB,
    TRUSTED_PROXIES,
    UNSPECIFIED_HOSTS,
    WebSettings,
    parse_allowed_host,
    parse_listen,
    parse_public_url,
    parse_trusted_proxy,
)
from .console import add_outage_argument


def add_web_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("web", help="the web app: leaderboards, bot pages, replays, live games (docs/web.md)")
    p.add_argument("file", nargs="?", help="a tournament file (its database is served); or give --db")
    p.add_argument("--db", metavar="URL", help="the database: sqlite:///path or postgresql://user@host/name")
    p.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                   help=f"where to listen (default {DEFAULT_LISTEN}, this machine only)")
    p.add_argument("--private", action="store_true", help="every page needs a user's token, not only submission")
    p.add_argument("--submit", metavar="LADDER", help="let users (arena users add) submit bots to this ladder "
                   "of the database: each is checked (referee check) and enters as a new version")
    p.add_argument("--max-upload", type=float, default=MAX_UPLOAD_BYTES / MIB, metavar="MIB",
                   help=f"largest bot archive accepted (default {MAX_UPLOAD_BYTES // MIB} MiB)")
    p.add_argument("--submissions-in-flight", type=int, default=MAX_IN_FLIGHT, metavar="N",
                   help=f"a user's submissions waiting for or in their check (default {MAX_IN_FLIGHT})")
    p.add_argument("--submissions-per-hour", type=int, default=MAX_PER_HOUR, metavar="N",
                   help=f"a user's submissions in any hour (default {MAX_PER_HOUR})")
    p.add_argument("--kept-per-user", type=float, default=MAX_KEPT_BYTES / MIB, metavar="MIB",
                   help="what a user's submissions may keep: archives, and unpacked copies of those that may play "
                   f"(default {MAX_KEPT_BYTES // MIB} MiB; arena submissions prune frees rejected ones)")
    p.add_argument("--public-url", metavar="URL", help="the address people reach it at, e.g. "
                   "https://arena.example.org: its host is served, and https makes the session cookie Secure")
    p.add_argument("--allowed-host", action="append", default=[], metavar="HOST",
                   help="answer to this Host name too (repeatable; *.DOMAIN for its subdomains); other names get "
                   "a 400. By default: --listen's host (a loopback one: localhost, 127.0.0.1, ::1) and --public-url's")
    p.add_argument("--trusted-proxy", action="append", default=[], metavar="ADDR|CIDR",
                   help="believe X-Forwarded-Proto and X-Forwarded-For from this address or network (repeatable; "
                   f"default: {', '.join(TRUSTED_PROXIES)}; giving one replaces the default)")
    p.add_argument("--events-per-client", type=int, default=EVENTS_PER_CLIENT, metavar="N",
                   help=f"live game streams one client address may hold open (default {EVENTS_PER_CLIENT})")
    p.add_argument("--events-total", type=int, default=EVENTS_TOTAL, metavar="N",
                   help=f"live game streams open at once in all (default {EVENTS_TOTAL})")
    add_metrics_argument(p)
    add_outage_argument(p)
    p.set_defaults(func=cmd_web)


def web_settings(args: argparse.Namespace) -> WebSettings:
    """The command line as settings: exactly one of FILE and --db."""
    # the tournament file's machinery, the database's and prometheus_client: not for `arena --help`
    from referee.metrics import parse_listen as metrics_address

    from ..config import load_config
    from ..play.runner import logs_dir_for

    if (args.file is None) == (args.db is None):
        raise UsageError("arena web needs a tournament file or --db URL (one of them)")
    config = load_config(args.file, check_programs=False) if args.file is not None else None
    db = config.database if config is not None else args.db
    # a tournament file says where its bot logs are (beside it); a database alone does not
    logs = ((config.name, str(logs_dir_for(config))),) if config is not None else ()
    # the file's [standings] for its tournament (the stored copy is only as new as the last run)
    standings = ((config.name, config.standings),) if config is not None else ()
    served = serving(args)
    if args.metrics_listen:
        metrics_address(args.metrics_listen)  # a bad one fails here, before the database is opened
    if not 0 < args.max_upload <= MAX_ARCHIVE_BYTES / MIB:
        raise UsageError(f"--max-upload must be more than 0 and at most {MAX_ARCHIVE_BYTES // MIB} MiB "
                         f"(what a bot archive may be), not {args.max_upload:g}")
    if args.submit is not None and not args.submit.strip():
        raise UsageError("--submit needs the name of a ladder in the database")
    for flag, value in (("--submissions-in-flight", args.submissions_in_flight),
                        ("--submissions-per-hour", args.submissions_per_hour)):
        if value < 1:
            raise UsageError(f"{flag} must be at least 1, not {value}")
    if not args.kept_per_user >= args.max_upload:  # (NaN too)
        raise UsageError(f"--kept-per-user must be at least --max-upload ({args.max_upload:g} MiB), not "
                         f"{args.kept_per_user:g}")
    return WebSettings(db=db, private=args.private, submit=args.submit, max_upload_bytes=int(args.max_upload * MIB),
                       sandbox_from=args.file, logs=logs, standings=standings, metrics_listen=args.metrics_listen,
                       max_in_flight=args.submissions_in_flight, max_per_hour=args.submissions_per_hour,
                       max_kept_bytes=int(args.kept_per_user * MIB), **served)


def serving(args: argparse.Namespace) -> dict[str, Any]:
    """How the command line says to serve, as WebSettings fields: where to listen, the Host names
    and the proxies to believe, the event streams' caps; checked without the database or the
    tournament file (tests/deploy checks the deployment's command lines with it)."""
    host, port = parse_listen(args.listen)
    public_url = parse_public_url(args.public_url) if args.public_url is not None else None
    allowed = tuple(parse_allowed_host(h) for h in args.allowed_host)
    proxies = tuple(parse_trusted_proxy(a) for a in args.trusted_proxy) or TRUSTED_PROXIES
    if host in UNSPECIFIED_HOSTS and public_url is None and not allowed:
        raise UsageError(f"--listen {args.listen} (every interface) needs --public-url URL or --allowed-host HOST: "
                         "the host names this server answers to")
    for flag, value in (("--events-per-client", args.events_per_client), ("--events-total", args.events_total)):
        if value < 1:
            raise UsageError(f"{flag} must be at least 1, not {value}")
    return {"host": host, "port": port, "public_url": public_url, "allowed_hosts": allowed,
            "trusted_proxies": proxies, "events_per_client": args.events_per_client,
            "events_total": args.events_total}


def cmd_web(args: argparse.Namespace) -> int:
    from ..web.serve import serve  # uvicorn and starlette load only for this command

    return serve(web_settings(args))
