"""The outage window's setting (arena/store/outage.py) and which errors count as an outage; no
database needed."""

from __future__ import annotations

import time

import psycopg
import pytest
from procrastinate import exceptions as queue_errors
from sqlalchemy.exc import IntegrityError, OperationalError

from arena.errors import UsageError
from arena.store import outage
from tests.arena_support import run_arena


def test_the_window_is_the_flag_else_the_environment_else_300_s(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(outage.OUTAGE_ENV, raising=False)
    monkeypatch.setattr(outage, "_given_s", None)
    assert outage.window_s() == outage.DEFAULT_OUTAGE_S == 300
    monkeypatch.setenv(outage.OUTAGE_ENV, "42")
    assert outage.window_s() == 42
    outage.set_window(7)
    assert outage.window_s() == 7
    for bad in ("soon", "-1", "nan"):
        outage.set_window(None)
        monkeypatch.setenv(outage.OUTAGE_ENV, bad)
        with pytest.raises(UsageError, match=outage.OUTAGE_ENV):
            outage.window_s()


def test_a_negative_flag_is_one_line_and_exit_2() -> None:
    done = run_arena("worker", "--db", "postgresql://nobody@127.0.0.1:1/none", "--db-outage", "-1", timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--db-outage" in done.stderr, done.stderr


def test_an_outage_is_a_lost_or_refused_connection_not_a_refused_query() -> None:
    refused = psycopg.OperationalError("connection refused")
    wrapped = queue_errors.ConnectorException()
    wrapped.__cause__ = refused
    assert outage.unreachable(refused) and outage.unreachable(wrapped)
    assert outage.unreachable(OperationalError("SELECT 1", {}, refused))
    assert not outage.unreachable(IntegrityError("INSERT", {}, Exception("duplicate key")))
    assert not outage.unreachable(ValueError("no"))


def test_an_outage_is_said_once_and_its_end_once_and_past_the_window_it_stops() -> None:
    said: list[str] = []
    watch = outage.Outage("db", window=0.2, say=said.append)
    error = psycopg.OperationalError("connection refused")
    waits = [watch.failed(error), watch.failed(error)]
    assert all(0 < w <= 0.2 for w in waits) and len(said) == 1 and "retrying for up to 0.2 s" in said[0]
    watch.succeeded()
    watch.succeeded()
    assert len(said) == 2 and said[1].startswith("arena: database reachable again after")
    watch.failed(error)
    time.sleep(0.25)
    with pytest.raises(outage.DatabaseUnavailableError, match="unreachable for"):
        watch.failed(error)


def test_the_longest_wait_between_tries_is_5_s_unless_the_environment_says(monkeypatch: pytest.MonkeyPatch) -> None:
    error = psycopg.OperationalError("connection refused")
    monkeypatch.delenv(outage.RETRY_MAX_ENV, raising=False)
    watch = outage.Outage("db", window=1000, say=lambda line: None)
    assert [watch.failed(error) for _ in range(7)] == [0.5, 1.0, 2.0, 3.0, 5.0, 5.0, 5.0]
    monkeypatch.setenv(outage.RETRY_MAX_ENV, "1.5")
    watch = outage.Outage("db", window=1000, say=lambda line: None)
    assert [watch.failed(error) for _ in range(5)] == [0.5, 1.0, 1.5, 1.5, 1.5]
    for bad in ("0", "-1", "soon", "nan", "inf"):
        monkeypatch.setenv(outage.RETRY_MAX_ENV, bad)
        with pytest.raises(UsageError, match=outage.RETRY_MAX_ENV):
            outage.Outage("db", window=1000)
