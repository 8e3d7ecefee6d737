"""`arena submissions prune`: delete the stored archives of old rejected submissions (the web's
per-user quota counts them until then; docs/web.md, "Security model")."""

from __future__ import annotations

import argparse
import math
import sys

from ..errors import UsageError

DEFAULT_OLDER_THAN_DAYS = 30.0


def add_submissions_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("submissions", help="the web's submitted bots: prune old rejected ones' archives")
    actions = p.add_subparsers(dest="submissions_action", required=True, metavar="{prune}")
    q = actions.add_parser("prune", help="delete the archives of rejected submissions older than --older-than days "
                           "(and their unpacked copies on this machine); the submissions and reports stay")
    q.add_argument("file", nargs="?", help="a tournament file (its database); or give --db")
    q.add_argument("--db", metavar="URL", help="the database: sqlite:///path or postgresql://user@host/name")
    q.add_argument("--older-than", type=float, default=DEFAULT_OLDER_THAN_DAYS, metavar="DAYS",
                   help=f"rejected at least this long ago (default {DEFAULT_OLDER_THAN_DAYS:g}; 0: every one)")
    p.set_defaults(func=cmd_submissions)


def cmd_submissions(args: argparse.Namespace) -> int:
    from datetime import timedelta

    from ..config import load_config
    from ..play.archives import ArchiveCache
    from ..store.store import Store
    from ..store.submissions import prune

    if (args.file is None) == (args.db is None):
        raise UsageError("arena submissions prune needs a tournament file or --db URL (one of them)")
    if not (math.isfinite(args.older_than) and args.older_than >= 0):
        raise UsageError(f"--older-than must be a number of days, 0 or more, not {args.older_than:g}")
    url = str(args.db if args.db is not None else load_config(args.file, check_programs=False).database)
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
