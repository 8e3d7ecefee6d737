"""`arena notify`: the operator's side of notifications (docs/notifications.md): run the deliverer,
set the webhook for everyone's events or a user's, and the settings (crash streak length, private
addresses)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from ..errors import UsageError
from .database import add_database_arguments, database_url


def add_notify_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("notify", help="notifications: run the deliverer, set webhooks and settings")
    actions = p.add_subparsers(dest="notify_action", required=True, metavar="{deliver,webhook,settings}")
    q = actions.add_parser("deliver", help="send the outbox's events to their webhooks until stopped")
    q.add_argument("--timeout", type=float, default=5.0, help="seconds to connect, and for the answer (default 5)")
    q.add_argument("--attempts", type=int, default=6, help="attempts of a delivery before it is given up (default 6)")
    q.add_argument("--backoff", type=float, default=10.0, help="seconds before the first retry, doubled for each "
                   "next one (default 10)")
    q.add_argument("--lease", type=float, default=60.0, help="seconds a claimed delivery is this process's; one "
                   "that died is replaced after it (default 60, more than twice --timeout)")
    q.add_argument("--poll", type=float, default=2.0, help="seconds between looks at an empty outbox (default 2)")
    q.add_argument("--once", action="store_true", help="send what is due now and stop")
    q = actions.add_parser("webhook", help="set (print its secret once) or clear everyone's or a user's webhook")
    q.add_argument("url", nargs="?", help="an http(s) URL; none: show it; 'none': clear it")
    q.add_argument("--user", metavar="NAME", help="a user's webhook (default: the operator's, for everyone's events)")
    q = actions.add_parser("settings", help="show or change the notification settings")
    q.add_argument("--crash-streak", type=int, metavar="N", help="games in a row ended by a bot's process that "
                   "make a bot.crash_streak event (default 3)")
    q.add_argument("--allow-private", action=argparse.BooleanOptionalAction, default=None,
                   help="whether webhooks may point at loopback and private addresses (default: not)")
    for q in actions.choices.values():
        add_database_arguments(q)
    p.set_defaults(func=cmd_notify)


def cmd_notify(args: argparse.Namespace) -> int:
    from ..store.store import Store

    if args.notify_action == "settings" and args.crash_streak is not None and not 1 <= args.crash_streak <= 1000:
        raise UsageError("--crash-streak is a number of games from 1 to 1000")
    if args.notify_action == "deliver":
        settings = _delivery_settings(args)
    store = Store(database_url(args, f"arena notify {args.notify_action}"))
    try:
        if args.notify_action == "deliver":
            return _deliver(store, settings, args.once)
        with store.engine.begin() as conn:
            return _webhook(conn, args) if args.notify_action == "webhook" else _settings(conn, args)
    finally:
        store.close()


def _delivery_settings(args: argparse.Namespace) -> Any:
    from ..notify.deliver import DeliverySettings

    if args.timeout <= 0 or args.backoff < 0 or args.poll <= 0 or not 1 <= args.attempts <= 100:
        raise UsageError("--timeout and --poll are seconds above 0, --backoff 0 or more, --attempts 1 to 100")
    try:
        return DeliverySettings(timeout_s=args.timeout, attempts=args.attempts, backoff_s=args.backoff,
                                lease_s=args.lease, poll_s=args.poll)
    except ValueError as exc:
        raise UsageError(f"--lease: {exc}") from None


def _deliver(store: Any, settings: Any, once: bool) -> int:
    from ..notify.deliver import Deliverer

    deliverer = Deliverer(store, settings)
    if once:
        sys.stdout.write(f"delivered {deliverer.run_once()}\n")
        return 0
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    deliverer.start()
    sys.stderr.write(f"delivering notifications from {store.url_for_people}; stop with Ctrl-C\n")
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        deliverer.stop()
    return 0


def _user_id(conn: Any, name: str | None) -> int | None:
    from sqlalchemy import select

    from ..store.models import User

    if name is None:
        return None
    found = conn.scalar(select(User.id).where(User.name == name, User.active))
    if found is None:
        raise UsageError(f"no user named {name!r}")
    return int(found)


def _webhook(conn: Any, args: argparse.Namespace) -> int:
    from ..notify.targets import TargetRefused, check_url
    from ..store import notices

    user = _user_id(conn, args.user)
    whose = f"{args.user}'s webhook" if args.user else "the webhook for everyone's events"
    if args.url is None:
        hook = notices.webhook_of(conn, user)
        sys.stdout.write(f"{whose}: {hook[0] if hook else 'none'}\n")
    elif args.url == "none":
        notices.clear_webhook(conn, user)
        sys.stdout.write(f"{whose}: none\n")
    else:
        try:  # the operator's own URL may be anywhere (the settings' private rule is checked at delivery)
            check_url(args.url)
        except TargetRefused as exc:
            raise UsageError(str(exc)) from None
        sys.stdout.write(notices.set_webhook(conn, user, args.url) + "\n")
        sys.stderr.write(f"set {whose}; the line above is its secret, shown this once: each delivery's "
                         "X-Arena-Signature is the HMAC-SHA256 of its body under it (docs/notifications.md)\n")
    return 0


def _settings(conn: Any, args: argparse.Namespace) -> int:
    from dataclasses import replace

    from ..store import notices

    now = notices.settings(conn)
    changes = {k: v for k, v in (("crash_streak", args.crash_streak), ("allow_private", args.allow_private))
               if v is not None}
    if changes:
        now = replace(now, **changes)
        notices.set_settings(conn, now)
    sys.stdout.write(f"crash streak: {now.crash_streak} games\nprivate addresses: "
                     f"{'allowed' if now.allow_private else 'refused'}\n")
    return 0
