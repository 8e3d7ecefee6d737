"""`arena migrate --db URL`, the deployment's one-shot schema step: a real PostgreSQL database
brought to the schema a worker accepts, a second run that changes nothing, and the refusals."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import psycopg

from arena.play.queue import schema_head
from arena.play.worker import check_schema
from tests.arena_support import arena_argv, arena_env
from tests.support import ROOT, assert_usage_error, run_arena

MIGRATE_TIMEOUT_S = 120


def test_migrate_brings_a_new_database_to_the_schema_a_worker_accepts(pg_url: str) -> None:
    head = schema_head()
    # two at once, as a deployment's migrate job and its coordinator may start: one waits for the
    # other's migration (an advisory lock) instead of failing on the tables it made
    both = [subprocess.Popen(arena_argv("migrate", "--db", pg_url), cwd=ROOT, env=arena_env(), text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    for process in both:
        out, err = process.communicate(timeout=MIGRATE_TIMEOUT_S)
        assert process.returncode == 0, err
        assert out.splitlines()[-1] in (f"schema revision after: {head}",
                                        f"schema revision after: {head} (already current)"), out
    check_schema(pg_url)  # the worker's own check: raises unless the revision is exactly its own
    with psycopg.connect(pg_url.replace("+psycopg", "")) as conn:  # procrastinate's schema came with it
        assert conn.execute("SELECT count(*) FROM procrastinate_jobs").fetchone() == (0,)
    again = run_arena("migrate", "--db", pg_url)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[1:] == [f"schema revision before: {head}",
                                             f"schema revision after: {head} (already current)"]


def test_migrate_refuses_a_schema_it_does_not_know_and_a_bad_url(tmp_path: Path) -> None:
    db = tmp_path / "newer.db"
    assert run_arena("migrate", "--db", f"sqlite:///{db}").returncode == 0
    with sqlite3.connect(db) as conn:  # as a newer arena would have left it
        conn.execute("UPDATE alembic_version SET version_num = '9999_future'")
    line = assert_usage_error(run_arena("migrate", "--db", f"sqlite:///{db}"), "arena")
    assert "schema revision '9999_future', which this arena does not know" in line
    line = assert_usage_error(run_arena("migrate", "--db", "nosuchdialect://x/y"), "arena")
    assert "nosuchdialect" in line
    assert_usage_error(run_arena("migrate"), "arena")  # --db is required
