"""procrastinate's tables in the arena's database, applied by the arena's own Alembic migrations
(migrations/procrastinate/README.md says how a later procrastinate release is taken in)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import procrastinate.schema

SCHEMA_FILE = Path(__file__).parent / "migrations" / "procrastinate" / "schema-3.10.0.sql"
QUEUE_PREFIX = "procrastinate_"  # every table, type and function of the queue starts so


def is_queue_object(name: str | None) -> bool:
    """Whether a table (or other object) name is procrastinate's, not the arena's models'."""
    return bool(name) and str(name).startswith(QUEUE_PREFIX)


def include_object(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    """Alembic's filter: procrastinate's objects come from its SQL, not from the arena's models."""
    return not is_queue_object(name)


def _run_sql(op: Any, sql: str) -> None:
    """Run a whole SQL script on the migration's connection, in its transaction. Through the
    driver's connection without parameters, so psycopg sends it as it is (no placeholders)."""
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return  # the queue is PostgreSQL only; a SQLite database has none
    bind.connection.driver_connection.execute(sql)


def apply_procrastinate_schema(op: Any) -> None:
    """Create procrastinate's tables, types and functions as of the pinned release."""
    _run_sql(op, SCHEMA_FILE.read_text(encoding="utf-8"))


def apply_procrastinate_migrations(op: Any, names: Sequence[str]) -> None:
    """Apply procrastinate's own migration files (``procrastinate/sql/migrations/NAME``), in order."""
    folder = Path(procrastinate.schema.migrations_path)
    for name in names:
        _run_sql(op, (folder / name).read_text(encoding="utf-8"))
