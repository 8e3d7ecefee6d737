"""Riding out a database outage (a restart, a failover, a server down for a while).

The long-running commands (``arena run --queue``, ``arena serve``, ``arena worker``, ``arena web``)
retry what the database refused for want of a connection, with a growing wait between tries
(0.5 s to 5 s, or to ``ARENA_DB_RETRY_MAX_S``), for up to a window (``--db-outage S``, else the ``ARENA_DB_OUTAGE_S`` environment variable, else
``DEFAULT_OUTAGE_S``; docs/scale-out.md, "What survives what"). They say one line when the
database goes ("arena: database unreachable (…); retrying for up to 300 s") and one when it comes
back, and when it stays away past the window they stop with one line and exit status 2
(``DatabaseUnavailableError``). Only calls that may run twice are retried: reads, and writes whose
second run finds the first one's work (the queue's queueing locks, the games' attempt guard).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import psycopg
from sqlalchemy import Engine, text
from sqlalchemy.exc import InterfaceError, OperationalError

from ..errors import UsageError, quoted
from .store import StorageError, first_line

T = TypeVar("T")
OUTAGE_ENV = "ARENA_DB_OUTAGE_S"
DEFAULT_OUTAGE_S = 300.0
BACKOFF_S = (0.5, 1.0, 2.0, 3.0, 5.0)  # the waits between tries; the last one repeats
RETRY_MAX_ENV = "ARENA_DB_RETRY_MAX_S"  # the longest of those waits (a database back is seen within it)
PREFIX = "arena: "

_given_s: float | None = None  # --db-outage, when the command line had it


class DatabaseUnavailableError(StorageError):
    """The database stayed unreachable for the whole outage window: one line, exit status 2."""


def set_window(seconds: float | None) -> None:
    """The command line's ``--db-outage`` (None: not given); UsageError on a negative one."""
    global _given_s
    if seconds is not None and not seconds >= 0:
        raise UsageError(f"--db-outage must be at least 0 s, not {seconds:g}")
    _given_s = seconds


def window_s() -> float:
    """How long an outage is ridden out: ``--db-outage``, else ``ARENA_DB_OUTAGE_S``, else 300 s."""
    if _given_s is not None:
        return _given_s
    raw = os.environ.get(OUTAGE_ENV, "").strip()
    if not raw:
        return DEFAULT_OUTAGE_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise UsageError(f"{OUTAGE_ENV} must be a number of seconds, at least 0, not {quoted(raw)}")
    return value


def retry_max_s() -> float:
    """The longest wait between two tries while the database is unreachable: ``ARENA_DB_RETRY_MAX_S``,
    else the last of ``BACKOFF_S`` (5 s); how late, at most, a process sees the database back."""
    raw = os.environ.get(RETRY_MAX_ENV, "").strip()
    if not raw:
        return BACKOFF_S[-1]
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise UsageError(f"{RETRY_MAX_ENV} must be a number of seconds above 0, not {quoted(raw)}")
    return value


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it: procrastinate wraps the driver's errors) says the
    database could not be reached or dropped the connection, rather than refusing a query."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (OperationalError, InterfaceError, psycopg.OperationalError,
                                psycopg.InterfaceError)):
            return True
        current = current.__cause__ or current.__context__
    return False


def reason(exc: BaseException) -> str:
    """The first line of what the driver said (procrastinate's wrapper says only "Database error.")."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return first_line(exc)


def ping(engine: Engine) -> None:
    """One round trip to the database (raises what the driver raises when it cannot)."""
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))


def _stderr(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


class Outage:
    """One process's outages of one database: ``call`` retries a database call while the database
    is unreachable, for up to the window counted from the first failure; one line when it goes,
    one when it is back (``say``: stderr by default). Safe to share between threads."""

    def __init__(self, where: str, window: float | None = None, say: Callable[[str], None] = _stderr,
                 give_up: asyncio.Event | None = None, meanwhile: str = "") -> None:
        self.where = where  # the database, for people (Store.url_for_people)
        self.meanwhile = meanwhile  # what the process does meanwhile, for its line (default: it retries)
        self.give_up = give_up  # once set (the command is stopping), a call fails at its next failed try
        self.window_s = window_s() if window is None else window
        self.retry_max_s = retry_max_s()
        self.say = say
        self.down_since: float | None = None  # monotonic, while the database is unreachable
        self.outages = 0  # how many began (for tests and metrics)
        self._tries = 0  # failed tries in this outage
        self._lock = threading.Lock()

    def failed(self, exc: BaseException) -> float:
        """Note a failed try (saying so the first time); the wait before the next try.
        DatabaseUnavailableError once the window is over."""
        now = time.monotonic()
        with self._lock:
            if self.down_since is None:
                self.down_since, self._tries = now, 0
                self.outages += 1
                meanwhile = self.meanwhile or f"retrying for up to {self.window_s:g} s"
                self.say(f"{PREFIX}database unreachable ({reason(exc)}); {meanwhile}")
            elapsed = now - self.down_since
            if self.give_up is not None and self.give_up.is_set():
                raise DatabaseUnavailableError(f"database {self.where} unreachable ({reason(exc)}) when asked "
                                               "to stop: stopped without waiting for it") from None
            if elapsed >= self.window_s:
                raise DatabaseUnavailableError(
                    f"database {self.where} unreachable for {elapsed:.0f} s ({reason(exc)}): stopped "
                    f"(the outage window is {self.window_s:g} s: --db-outage or {OUTAGE_ENV})") from None
            wait = min(BACKOFF_S[min(self._tries, len(BACKOFF_S) - 1)], self.retry_max_s)
            self._tries += 1
            return min(wait, max(self.window_s - elapsed, 0.05))

    def succeeded(self) -> None:
        """Note a call that worked: the end of an outage, said once."""
        if self.down_since is None:
            return
        with self._lock:
            if self.down_since is None:
                return
            gone = time.monotonic() - self.down_since
            self.down_since = None
            self.say(f"{PREFIX}database reachable again after {gone:.0f} s")

    async def call(self, fn: Callable[..., T], *args: object) -> T:
        """``fn(*args)`` on a thread, tried again while the database is unreachable (see the class)."""
        while True:
            try:
                result = await asyncio.to_thread(fn, *args)
            except Exception as exc:
                if not unreachable(exc):
                    raise
                wait = self.failed(exc)
                if self.give_up is None:
                    await asyncio.sleep(wait)
                else:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.give_up.wait(), wait)
                continue
            self.succeeded()
            return result

    def call_blocking(self, fn: Callable[..., T], *args: object) -> T:
        """``call`` for code that runs on a thread of its own (the web app's handlers)."""
        while True:
            try:
                result = fn(*args)
            except Exception as exc:
                if not unreachable(exc):
                    raise
                time.sleep(self.failed(exc))
                continue
            self.succeeded()
            return result


__all__ = ["DEFAULT_OUTAGE_S", "OUTAGE_ENV", "RETRY_MAX_ENV", "DatabaseUnavailableError", "Outage", "ping", "reason",
           "retry_max_s", "set_window", "unreachable", "window_s"]
