"""`arena migrate --db URL`: bring a database to this arena's schema (its Alembic migrations,
procrastinate's queue schema among them) and say the revision before and after.

Every command that writes already migrates on open (``Store``); this is the same step on its own,
for a deployment's one-shot job: run once before the coordinator, workers and web app start
(workers never migrate: arena/play/worker.py ``check_schema``).
"""

from __future__ import annotations

import argparse
import sys

from ..errors import UsageError


def add_migrate_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("migrate", help="create or upgrade a database's schema (the queue's included); "
                       "print the revision before and after")
    p.add_argument("--db", required=True, metavar="URL",
                   help="the database: postgresql://user@host/name (password: PGPASSWORD or ~/.pgpass) or sqlite:///path")
    p.set_defaults(func=cmd_migrate)


def cmd_migrate(args: argparse.Namespace) -> int:
    from ..store.store import Store, known_revisions  # SQLAlchemy and Alembic: not for `arena --help`

    store = Store(args.db, migrate=False)
    try:
        before = store.schema_revision()
        known = known_revisions()
        if before is not None and before not in known:  # Alembic itself would fail with a traceback
            raise UsageError(f"database {store.url_for_people} has schema revision {before!r}, which this arena does "
                             f"not know (its newest is {known[0]!r}): run a newer arena's migrate, or this one on "
                             "another database")
        store.upgrade()  # creates a PostgreSQL database that does not exist yet, when its user may
        after = store.schema_revision()
    finally:
        store.close()
    sys.stdout.write(f"database {store.url_for_people}\n"
                     f"schema revision before: {before or 'none (no arena tables)'}\n"
                     f"schema revision after: {after}" + (" (already current)" if before == after else "") + "\n")
    return 0
