"""`arena submissions prune`: delete the stored archives of old rejected submissions (the web's
per-user quota counts them until then; docs/web.md, "Security model"). `arena submissions activate`
and `retire`: the operator's rollback of a user's bot to an earlier clean version, or its retirement
from the pool, as its owner does on the web (docs/web.md, "Versions")."""

from __future__ import annotations

import argparse
import math
import sys

from ..errors import UsageError, quoted
from .database import DB_HELP, add_database_arguments, database_url

DEFAULT_OLDER_THAN_DAYS = 30.0


def add_submissions_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("submissions", help="the web's submitted bots: prune old rejected ones' archives; activate "
                       "a user's earlier version, or retire their bot")
    actions = p.add_subparsers(dest="submissions_action", required=True, metavar="{prune,activate,retire}")
    q = actions.add_parser("prune", help="delete the archives of rejected submissions older than --older-than days "
                           "(and their unpacked copies on this machine); the submissions and reports stay")
    add_database_arguments(q)
    q.add_argument("--older-than", type=float, default=DEFAULT_OLDER_THAN_DAYS, metavar="DAYS",
                   help=f"rejected at least this long ago (default {DEFAULT_OLDER_THAN_DAYS:g}; 0: every one)")
    a = actions.add_parser("activate", help="make a user's earlier clean version the one in the pool (a rollback); "
                           "their active version leaves it")
    a.add_argument("user", help="the user whose bot it is")
    a.add_argument("version", help="the version to activate: its number (2) or its bot's name (alice.v2)")
    r = actions.add_parser("retire", help="take a user's bot out of the pool: no version of theirs plays until "
                           "one is activated or a new one accepted")
    r.add_argument("user", help="the user whose bot it is")
    for q in (a, r):
        q.add_argument("file", nargs="?", help="the ladder's tournament file (its database and name); or give --db "
                       "and --ladder")
        q.add_argument("--db", metavar="URL", help=DB_HELP)
        q.add_argument("--ladder", metavar="NAME", help="the ladder (with --db)")
    p.set_defaults(func=cmd_submissions)


def _version_number(user: str, given: str) -> int:
    """A version as the command line gives it: ``2`` or ``alice.v2`` (that user's); else exit 2."""
    text = given.removeprefix(f"{user}.v")
    if not (text.isascii() and text.isdigit() and 0 < len(text) <= 9 and int(text) > 0):
        raise UsageError(f"a version is a number or {user}.vN, not {quoted(given)}")
    return int(text)


def cmd_versions(args: argparse.Namespace) -> int:
    from ..config import load_config
    from ..store.store import Store
    from ..store.versions import VersionRefused, activate, retire, user_named

    action = args.submissions_action
    if (args.file is None) == (args.db is None) or (args.db is not None) != (args.ladder is not None):
        raise UsageError(f"arena submissions {action} needs the ladder's tournament file, or --db URL and --ladder NAME")
    version = _version_number(args.user, args.version) if action == "activate" else 0
    if args.file is not None:
        config = load_config(args.file, check_programs=False)
        url, ladder = str(config.database), config.name
    else:
        url, ladder = str(args.db), str(args.ladder)
    store = Store(url)
    try:
        tid = store.tournament_id(ladder)
        if tid is None:
            raise UsageError(f"no ladder named {quoted(ladder)} in {store.url_for_people}")
        try:
            user = user_named(store, args.user)
            if action == "activate":
                name, replaced = activate(store, tid, user, version)
                was = f" ({replaced} left it)" if replaced else ""
                sys.stdout.write(f"activated {name}: it plays from the ladder's next round{was}\n")
            else:
                name = retire(store, tid, user)
                sys.stdout.write(f"retired {name}: no version of {args.user}'s plays from the ladder's next round\n")
        except VersionRefused as refused:
            raise UsageError(str(refused)) from None
    finally:
        store.close()
    return 0


def cmd_submissions(args: argparse.Namespace) -> int:
    if args.submissions_action != "prune":
        return cmd_versions(args)
    from datetime import timedelta

    from ..play.archives import ArchiveCache
    from ..store.store import Store
    from ..store.submissions import prune

    url = database_url(args, "arena submissions prune")
    if not (math.isfinite(args.older_than) and args.older_than >= 0):
        raise UsageError(f"--older-than must be a number of days, 0 or more, not {args.older_than:g}")
    store = Store(url)
    try:
        pruned = prune(store, timedelta(days=args.older_than))
    finally:
        store.close()
    cache = ArchiveCache()
    for sha in pruned.archives:
        cache.remove(sha)
    sys.stdout.write(f"pruned {pruned.submissions} rejected submission(s): {len(pruned.archives)} archive(s) deleted, "
                     f"{pruned.freed_bytes / (1 << 20):.1f} MiB freed\n")
    return 0
