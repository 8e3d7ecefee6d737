"""The run lease: at most one process (`arena run` or `arena serve`) plays a tournament's games.

Without it, a second `arena run` on the same file put the first one's running games back to
pending and both played them. The lease is a row per tournament (owner id, host, pid, command,
start and heartbeat times) taken in one transaction before any game is touched. The holder
renews the heartbeat every HEARTBEAT_S from a thread of its own (a busy event loop cannot
starve it) and deletes the row on any exit it lives through. A second process refuses to start
while the holder lives, naming it. A holder is dead, and its lease taken over, when its heartbeat
is older than EXPIRY_S, or at once when it ran on this host and its pid is gone (a `kill -9`
then resumes without waiting). Heartbeat ages are measured with the database server's clock on
PostgreSQL (hosts' clocks may differ) and with this machine's for SQLite (a local file).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from sqlalchemy import Connection, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError, OperationalError, SQLAlchemyError

from ..errors import quoted, shown
from .models import RunLease as LeaseRow
from .models import as_utc, utcnow
from .store import StorageError, Store, first_line

log = logging.getLogger(__name__)
HEARTBEAT_S = 10.0  # how often the holder renews its lease
EXPIRY_S = 60.0  # a heartbeat older than this: the holder is dead (six missed beats)
ACQUIRE_TRIES = 5  # concurrent starts: the losers of a write race look again


class LeaseHeldError(StorageError):
    """Another live process holds the tournament's lease (the CLI prints it and exits 2)."""


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds a lease, as stored."""

    owner: str
    command: str
    host: str
    pid: int
    started_at: datetime
    heartbeat_at: datetime


def holder_is_alive(holder: Holder, now: datetime, host: str, pid_exists: Callable[[int], bool]) -> bool:
    """Whether ``holder`` may still be playing: a fresh heartbeat, and on this ``host`` a live pid."""
    if now - holder.heartbeat_at > timedelta(seconds=EXPIRY_S):
        return False
    return holder.host != host or pid_exists(holder.pid)


def pid_exists(pid: int) -> bool:
    """A process with this pid exists on this machine (in this pid namespace)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True


def describe_holder(holder: Holder, now: datetime) -> str:
    """``arena run (pid 123 on host "box"), since 2026-12-01 10:00:00 UTC, last heartbeat 4 s ago``."""
    age = max(0, round((now - holder.heartbeat_at).total_seconds()))
    return (f"`arena {shown(holder.command)}` (pid {holder.pid} on host {quoted(holder.host)}), "
            f"since {holder.started_at.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC, last heartbeat {age} s ago")


class Lease:
    """A held lease: heartbeats in a thread until released; ``lost`` if another process took it."""

    def __init__(self, store: Store, tid: int, owner: str) -> None:
        self.store = store
        self.tid = tid
        self.owner = owner
        self.lost = threading.Event()
        self.taken_from: str | None = None  # who held it before, when it was taken over from a dead process
        self._stop = threading.Event()
        self._on_lost: Callable[[], None] = lambda: None
        self._thread = threading.Thread(target=self._beat_loop, name=f"lease-{tid}", daemon=True)

    @classmethod
    def acquire(cls, store: Store, tid: int, name: str, command: str) -> Lease:
        """Take the lease of tournament ``tid`` (named ``name`` in messages) for ``command``
        ("run" or "serve"); LeaseHeldError when a live process has it."""
        owner, host, pid = uuid.uuid4().hex, socket.gethostname(), os.getpid()
        for attempt in range(ACQUIRE_TRIES):
            taken_from = None
            try:
                with store.engine.begin() as conn:
                    now = _db_now(conn)
                    query = select(LeaseRow.__table__).where(LeaseRow.tournament_id == tid)
                    if conn.dialect.name == "postgresql":
                        query = query.with_for_update()
                    row = conn.execute(query).first()
                    values = dict(owner=owner, command=command, host=host, pid=pid, started_at=now, heartbeat_at=now)
                    if row is None:
                        conn.execute(insert(LeaseRow).values(tournament_id=tid, **values))
                    else:
                        holder = _holder(row)
                        if holder_is_alive(holder, now, host, pid_exists):
                            raise LeaseHeldError(
                                f"tournament {quoted(name)} is being played by another process: "
                                f"{describe_holder(holder, now)}; wait for it to finish or stop it "
                                f"(a lease whose holder died is taken over: at once on its host, "
                                f"{EXPIRY_S:g} s after its last heartbeat from elsewhere)")
                        taken = conn.execute(update(LeaseRow).where(LeaseRow.tournament_id == tid,
                                                                    LeaseRow.owner == holder.owner).values(**values))
                        if taken.rowcount != 1:
                            raise _Raced()
                        taken_from = describe_holder(holder, now)
                        log.warning("took over the lease of a process that is gone: %s", taken_from)
            except (_Raced, IntegrityError, OperationalError) as exc:
                # another process wrote the lease between our read and our write: look again
                if attempt == ACQUIRE_TRIES - 1:
                    raise StorageError(f"cannot take the lease of tournament {quoted(name)} in "
                                       f"{store.url_for_people}: {first_line(exc)}") from None
                time.sleep(0.05 * (attempt + 1))
                continue
            lease = cls(store, tid, owner)
            lease.taken_from = taken_from
            lease._thread.start()
            return lease
        raise AssertionError("unreachable")

    def when_lost(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (from the heartbeat thread) if another process takes the lease over."""
        self._on_lost = callback

    def beat(self) -> bool:
        """Renew the heartbeat now; False when the lease is no longer ours."""
        with self.store.engine.begin() as conn:
            done = conn.execute(update(LeaseRow).where(LeaseRow.tournament_id == self.tid, LeaseRow.owner == self.owner)
                                .values(heartbeat_at=_db_now(conn)))
            return done.rowcount == 1

    def _beat_loop(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                ours = self.beat()
            except SQLAlchemyError as exc:  # a busy or unreachable database: try again at the next beat
                log.warning("lease heartbeat failed (will retry): %s", first_line(exc))
                continue
            if not ours:
                log.error("another process took over this tournament's lease: no new games are started here")
                self.lost.set()
                self._on_lost()
                return

    def release(self) -> None:
        """Stop the heartbeat and delete the lease (if it is still ours); never raises."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=HEARTBEAT_S)
        try:
            with self.store.engine.begin() as conn:
                conn.execute(delete(LeaseRow).where(LeaseRow.tournament_id == self.tid, LeaseRow.owner == self.owner))
        except SQLAlchemyError as exc:  # left behind: the next start takes it over (pid gone, or expiry)
            log.warning("could not release the lease: %s", first_line(exc))


class _Raced(Exception):
    """The lease changed hands between our read and our write."""


def _db_now(conn: Connection) -> datetime:
    """Now, by the database server's clock where it has one (PostgreSQL), else this machine's."""
    if conn.dialect.name == "postgresql":
        return _aware(conn.execute(select(func.now())).scalar_one())
    return utcnow()


def _aware(value: datetime) -> datetime:
    """SQLite gives stored times back without their zone; they were written in UTC."""
    moment = as_utc(value)
    assert moment is not None
    return moment


def _holder(row: object) -> Holder:
    r = row._mapping  # type: ignore[attr-defined]
    return Holder(r["owner"], r["command"], r["host"], r["pid"], _aware(r["started_at"]), _aware(r["heartbeat_at"]))
