"""procrastinate's schema under the arena's migrations (arena/store/migrations/procrastinate/):
a database the arena migrates has exactly the queue objects procrastinate itself would create
for the installed release, so its code and its schema agree; SQLite gets none."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import procrastinate
import psycopg
import pytest
from procrastinate.schema import SchemaManager

from arena.store.queue_schema import SCHEMA_FILE
from arena.store.store import Store
from tests.conftest import PG_ADMIN_URL

CATALOG = {  # every queue object with what defines it
    "tables": "SELECT table_name || '.' || column_name || ':' || data_type || ':' || is_nullable"
              " FROM information_schema.columns WHERE table_name LIKE 'procrastinate%'",
    "functions": "SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')'"
                 " FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
                 " WHERE n.nspname = 'public' AND p.proname LIKE 'procrastinate%'",
    "function bodies": "SELECT p.proname || md5(p.prosrc) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
                       " WHERE n.nspname = 'public' AND p.proname LIKE 'procrastinate%'",
    "types": "SELECT t.typname || ':' || string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)"
             " FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid WHERE t.typname LIKE 'procrastinate%'"
             " GROUP BY t.typname",
    "indexes": "SELECT indexname || ':' || indexdef FROM pg_indexes WHERE tablename LIKE 'procrastinate%'",
    "triggers": "SELECT tgname FROM pg_trigger WHERE tgname LIKE 'procrastinate%'",
}


@pytest.fixture
def two_databases() -> Iterator[tuple[str, str]]:
    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL not reachable at {PG_ADMIN_URL}: {str(exc).strip().splitlines()[0]}")
    names = [f"arena_qs_{secrets.token_hex(5)}" for _ in range(2)]
    try:
        for name in names:
            admin.execute(f'CREATE DATABASE "{name}"')
        yield tuple(f"postgresql://postgres@127.0.0.1:5432/{name}" for name in names)  # type: ignore[misc]
    finally:
        for name in names:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def catalog(url: str) -> dict[str, set[str]]:
    with psycopg.connect(url) as conn:
        return {kind: {row[0] for row in conn.execute(query)} for kind, query in CATALOG.items()}


def test_the_arena_migrates_exactly_the_queue_schema_procrastinate_creates(two_databases: tuple[str, str]) -> None:
    ours, theirs = two_databases
    Store(ours).close()
    connector = procrastinate.SyncPsycopgConnector(conninfo=theirs)
    connector.open()
    try:
        SchemaManager(connector).apply_schema()
    finally:
        connector.close()
    mine, reference = catalog(ours), catalog(theirs)
    assert reference["tables"] and reference["functions"]  # the comparison compares something
    for kind in CATALOG:
        assert mine[kind] == reference[kind], kind


def test_the_copied_schema_is_the_installed_releases() -> None:
    """The copy under migrations/ is procrastinate's own file for the pinned release: when the pin
    moves, this says that a migration revision is due (migrations/procrastinate/README.md)."""
    installed = SchemaManager.get_schema()
    assert SCHEMA_FILE.read_text(encoding="utf-8") == installed, (
        f"procrastinate {procrastinate.__version__ if hasattr(procrastinate, '__version__') else ''} ships another "
        "schema.sql than the arena's copy: add a migration revision (arena/store/migrations/procrastinate/README.md)")


def test_sqlite_has_no_queue_tables(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    try:
        with store.engine.connect() as conn:
            from sqlalchemy import inspect

            assert not [t for t in inspect(conn).get_table_names() if t.startswith("procrastinate")]
    finally:
        store.close()
