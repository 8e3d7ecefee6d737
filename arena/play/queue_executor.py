"""A GameExecutor whose games are played by ``arena worker`` processes (``arena compare --queue``,
``arena gauntlet --queue``; docs/scale-out.md), so ``Comparison`` plays the same pairs, in the same
order, whether its games run in this process or on the queue's workers.

``open`` makes a tournament row for the run (its two or more bots, positions in the order given:
a game's ``seat_bots`` name them) in the database the workers read. Each ``play`` then writes the
game's row and defers its ``play_game`` job in one transaction, exactly as ``arena run --queue``
does for a tournament's games, and waits until a worker has settled the row: the GameReport is
rebuilt from the stored result and record. One poller reads every awaited row together every
``POLL_S``. A cancelled ``play`` (a game past the verdict) withdraws its game: the job is deleted
if it still waits, or its worker is asked to abort it (it stops the game, and does not retry it),
and the row is deleted unless it was finished meanwhile. ``close`` withdraws what is left and
waits, bounded, until no job of the run is waiting or running any more (its rating passes too).

Every wait is bounded: the start waits ``WORKER_WAIT_S`` for a live worker, a game that a worker
has not started while no worker has been alive for ``NO_WORKER_S`` ends the run with an error, and
``close`` waits ``CLOSE_WAIT_S`` at most. A game the workers could not play (the referee's own
failure, ``MAX_ATTEMPTS`` times) raises, as the in-process executor's failure does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from google.protobuf import json_format
from sqlalchemy import Connection, insert, text

from casino.v1 import game_pb2
from referee.match.game import Observer
from referee.match.report import GameReport
from referee.match.spec import GameSetup
from referee.sandbox import SandboxSettings

from ..config import PACKAGE_SPEC
from ..errors import ArenaError
from ..store.models import Game, GameStatus
from ..store.store import BotSpec, Store
from .archives import store_package
from .executor import SeatBot
from .queue import PLAY_TASK, GameJob, defer_games, game_lock, make_app, queue_name, require_postgresql

log = logging.getLogger(__name__)

POLL_S = 0.1  # how often the awaited games' rows are read (one query for all of them)
WORKER_CHECK_S = 5.0  # how often the live workers are counted while games wait
WORKER_WAIT_S = 60.0  # at the start: the longest wait for a first live worker
NO_WORKER_S = 60.0  # a game still unstarted while no worker has been alive this long: the run stops
CLOSE_WAIT_S = 60.0  # at the end: the longest wait for the run's jobs to leave the queue
DATABASE_ERRORS_S = 30.0  # the poller's database errors are retried this long before the run stops
GAMES_PER_WORKER = 4  # the default window: games queued at once per live worker (docs/scale-out.md)


class QueueRunError(ArenaError):
    """The queue could not play the run's games (no live worker, a game the workers gave up on,
    the database lost): one line and exit 2, as for an unreachable database (``compare``'s 1 and
    3 are verdicts: H0, and no decision within the limit)."""


@dataclass
class _Waiting:
    setup: GameSetup
    future: asyncio.Future[GameReport]
    started: bool = False  # a worker has claimed it (running)


def _warn(line: str) -> None:
    sys.stderr.write(f"arena: warning: {line}\n")
    sys.stderr.flush()


def default_window(live_workers: int) -> int:
    """Games in the queue at once when ``--window`` is not given: ``GAMES_PER_WORKER`` per live
    worker (the queue does not know a worker's --concurrency), at least 2 (one pair)."""
    return max(2, GAMES_PER_WORKER * live_workers)


def run_name(label: str) -> str:
    """A tournament name of its own for one run: the label, the time and a random tail."""
    return f"{label}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def bot_spec(bot: SeatBot) -> BotSpec:
    """How a worker starts ``bot``: its command or address as given; a command runs in the folder it
    names, else in this process's folder (a worker on this machine then starts it as this process
    would; a worker on another machine needs the same paths there)."""
    endpoint = bot.endpoint
    cwd = None if endpoint.address else (endpoint.cwd or os.getcwd())
    return BotSpec(bot.name, endpoint.spec, cwd, dict(endpoint.env), endpoint.archive)


def package_spec(store: Store, bot: SeatBot) -> BotSpec:
    """A bot package for the workers: stored in the database (once), each worker builds it."""
    assert bot.package is not None
    return BotSpec(bot.name, PACKAGE_SPEC, None, {}, store_package(store, bot.package))


class QueueExecutor:
    """Plays games through the job queue of ``database`` (see the module docstring)."""

    def __init__(self, database: str, name: str, bots: Sequence[SeatBot], settings: dict[str, Any],
                 sandbox: SandboxSettings | None = None, what: str = "arena compare --queue",
                 warn: Callable[[str], None] | None = None, runtimes: dict[str, Any] | None = None) -> None:
        require_postgresql(database, what, hint="--db postgresql://user@host/name")
        self.database = database
        self.name = name
        self.bots = list(bots)
        self.settings = settings
        self.sandbox = sandbox or SandboxSettings()
        self.runtimes = dict(runtimes or {})  # a tournament file's [runtimes], for the workers' package builds
        self.warn = warn or _warn
        self.tid = 0
        self.store: Store | None = None
        self._app = make_app()
        self._waiting: dict[int, _Waiting] = {}
        self._withdrawals: set[asyncio.Future[None]] = set()
        self._poller: asyncio.Task[None] | None = None
        self._closed = False

    # --- the run's tournament -----------------------------------------------------------------

    async def open(self, worker_wait_s: float = WORKER_WAIT_S, tournament_id: int | None = None) -> int:
        """Wait for a live worker (the database migrated first, as ``arena run --queue`` does),
        then create the run's tournament and its bots, or play into tournament ``tournament_id``
        made already (a ladder's challenge); how many workers are live."""
        from .queue_status import live_workers

        store = self.store = await asyncio.to_thread(Store, self.database)
        deadline = time.monotonic() + worker_wait_s
        while not (live := await asyncio.to_thread(live_workers, store)):
            if time.monotonic() >= deadline:
                raise QueueRunError(f"no arena worker is running on database {store.url_for_people} (none sent a "
                                    f"heartbeat within {worker_wait_s:g} s): start some (arena worker --db URL)")
            await asyncio.sleep(min(1.0, worker_wait_s))
        if tournament_id is not None:
            self.tid = tournament_id
        else:
            specs = [await asyncio.to_thread(package_spec, store, bot) if bot.package else bot_spec(bot)
                     for bot in self.bots]
            self.tid = await asyncio.to_thread(store.create_tournament, self.name, "arena-compare", self.settings, specs)
        self._poller = asyncio.create_task(self._poll(), name="queue-executor-poll")
        return live

    # --- games --------------------------------------------------------------------------------

    def _queue(self, setup: GameSetup) -> int:
        """The game's row and its job, in one transaction; the row's id."""
        assert self.store is not None

        def write(conn: Connection) -> int:
            game_id: int = conn.execute(insert(Game).values(
                tournament_id=self.tid, number=setup.game_number, round=1,
                set_number=(setup.game_number + 1) // 2,  # a comparison's pair: games 2k-1 and 2k
                deck_seed=setup.seed, seat_bots=list(setup.seat_bots), status=GameStatus.PENDING.value,
                attempt=0).returning(Game.id)).scalar_one()
            defer_games(self._app, conn, [GameJob(game_id, self.tid, setup.game_number, setup, self.sandbox,
                                                  self.runtimes)])
            return game_id

        return self.store.in_transaction(write)

    async def play(self, setup: GameSetup, seats: Sequence[SeatBot], observe: Observer | None = None) -> GameReport:
        """Queue the game, wait until a worker has settled it, and report it as stored. ``seats``
        are the run's bots at ``setup.seat_bots``' positions (the workers read them from the
        database); ``observe`` is not called: the workers write running games to the live table."""
        if self._closed or self._poller is None:
            raise RuntimeError("QueueExecutor.play needs open() first, and not after close()")
        queued = asyncio.ensure_future(asyncio.to_thread(self._queue, setup))
        try:
            game_id = await asyncio.shield(queued)
        except asyncio.CancelledError:  # the row and job may be written all the same: withdraw them then
            self._withdraw_later(queued)
            raise
        waiting = self._waiting[game_id] = _Waiting(setup, asyncio.get_running_loop().create_future())
        try:
            return await waiting.future
        except asyncio.CancelledError:
            known: asyncio.Future[int] = asyncio.get_running_loop().create_future()
            known.set_result(game_id)
            self._withdraw_later(known)
            raise
        finally:
            self._waiting.pop(game_id, None)

    def _withdraw_later(self, game_id: asyncio.Future[int]) -> None:
        """Withdraw the game once its id is known (its queueing may still be running); ``close``
        waits for every withdrawal."""

        async def withdraw() -> None:
            try:
                gid = await game_id
            except Exception:  # noqa: BLE001 - it was never queued: nothing to withdraw
                return
            await asyncio.to_thread(self._withdraw, gid)

        task = asyncio.ensure_future(withdraw())
        self._withdrawals.add(task)
        task.add_done_callback(self._withdrawals.discard)

    def _withdraw(self, game_id: int) -> None:
        """Delete the game's waiting job, or ask its worker to abort it (the worker then stops the
        game and does not retry it), and delete its row unless it was finished: in one transaction,
        so a worker is told to abort only once the row is gone, and finds nothing to store."""
        assert self.store is not None

        def write(conn: Connection) -> None:
            jobs = conn.execute(text(  # the job waiting (its queueing lock), or the one that claimed the game
                "SELECT id FROM procrastinate_jobs WHERE task_name = :task AND status IN ('todo', 'doing')"
                " AND (queueing_lock = :lock OR id = (SELECT job_id FROM games WHERE id = :id))"),
                {"lock": game_lock(game_id), "task": PLAY_TASK, "id": game_id}).scalars().all()
            raw = conn.connection.driver_connection
            for job_id in jobs:
                self._app.job_manager.cancel_job_by_id(job_id, abort=True, delete_job=True, connection=raw)
            conn.execute(text("DELETE FROM games WHERE id = :id AND status IN ('pending', 'running')"),
                         {"id": game_id})

        try:
            self.store.in_transaction(write)
        except Exception as exc:  # noqa: BLE001 - a job left behind is played and dropped: never counted
            log.warning("could not withdraw game row %d: %s: %s", game_id, type(exc).__name__, exc)

    # --- following the games ------------------------------------------------------------------

    def _read(self, ids: list[int]) -> list[tuple[int, str, Any, str | None, str | None]]:
        assert self.store is not None
        with self.store.engine.connect() as conn:
            return [tuple(row) for row in conn.execute(text(  # type: ignore[misc]
                "SELECT id, status, result, record, error FROM games WHERE id = ANY(:ids)"
                " AND status IN ('running', 'done', 'failed')"), {"ids": ids})]

    def _settle(self, waiting: _Waiting, status: str, result: Any, record: str | None, error: str | None) -> None:
        setup = waiting.setup
        if status == GameStatus.DONE.value:
            payload = result if isinstance(result, dict) else json.loads(result)
            report = GameReport(setup.game_id, setup.game_number, list(setup.seat_bots),
                                json_format.ParseDict(payload, game_pb2.GameResult()),
                                json.loads(record) if record else {})
            waiting.future.set_result(report)
        else:
            waiting.future.set_exception(QueueRunError(
                f"game {setup.game_number} ({setup.game_id}) could not be played by the workers: {error or 'failed'}"))

    async def _poll(self) -> None:
        """Settle every awaited game whose row a worker has settled; stop the run (fail every
        waiter) when no worker has been alive for ``NO_WORKER_S`` while games wait unstarted, or
        the database has failed for ``DATABASE_ERRORS_S``."""
        from .queue_status import live_workers

        assert self.store is not None
        checked_at, seen_worker_at, failing_since = time.monotonic(), time.monotonic(), None
        while True:
            await asyncio.sleep(POLL_S)
            if not self._waiting:  # nothing waits for a worker: none is missed
                seen_worker_at = time.monotonic()
                continue
            try:
                rows = await asyncio.to_thread(self._read, list(self._waiting))
                now = time.monotonic()
                if now - checked_at >= WORKER_CHECK_S:
                    checked_at = now
                    if await asyncio.to_thread(live_workers, self.store):
                        seen_worker_at = now
                failing_since = None
            except Exception as exc:  # noqa: BLE001 - retried until DATABASE_ERRORS_S, then the run stops
                failing_since = failing_since or time.monotonic()
                if time.monotonic() - failing_since < DATABASE_ERRORS_S:
                    log.warning("could not read the queued games: %s: %s", type(exc).__name__, exc)
                    continue
                self._fail_all(QueueRunError(f"lost database {self.store.url_for_people} for "
                                             f"{DATABASE_ERRORS_S:g} s: {type(exc).__name__}: {exc}"))
                continue
            for waiting in self._waiting.values():
                waiting.started = False  # pending, unless its row says otherwise below
            for game_id, status, result, record, error in rows:
                waiting = self._waiting.get(game_id)
                if waiting is None or waiting.future.done():
                    continue
                if status == GameStatus.RUNNING.value:
                    waiting.started = True
                else:
                    self._settle(waiting, status, result, record, error)
            if time.monotonic() - seen_worker_at >= NO_WORKER_S and any(
                    not w.started for w in self._waiting.values()):
                self._fail_all(QueueRunError(
                    f"no arena worker has been alive on database {self.store.url_for_people} for {NO_WORKER_S:g} s "
                    f"while games wait in queue {queue_name()}: start some (arena worker --db URL)"))

    def _fail_all(self, error: Exception) -> None:
        for waiting in self._waiting.values():
            if not waiting.future.done():
                waiting.future.set_exception(error)

    # --- the end ------------------------------------------------------------------------------

    def _live_jobs(self) -> int:
        assert self.store is not None
        with self.store.engine.connect() as conn:
            return int(conn.execute(text(
                "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')"
                " AND args->>'tournament_id' = :tid"), {"tid": str(self.tid)}).scalar() or 0)

    async def close(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """Withdraw every game still awaited, then wait (at most ``wait_s``) until no job of the run
        waits or runs: its aborted games and its rating passes are over. A warning if they are not."""
        self._closed = True
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
            self._poller = None
        for waiting in list(self._waiting.values()):
            if not waiting.future.done():
                waiting.future.cancel()  # its play() withdraws it
        for _ in range(3):  # those plays see the cancellation and schedule their withdrawals
            await asyncio.sleep(0)
        while self._withdrawals:
            await asyncio.gather(*list(self._withdrawals), return_exceptions=True)
        if self.store is None:
            return
        try:
            deadline = time.monotonic() + wait_s
            while (left := await asyncio.to_thread(self._live_jobs)) and time.monotonic() < deadline:
                await asyncio.sleep(POLL_S)
            if left:
                self.warn(f"{left} job(s) of {self.name} were still in the queue after {wait_s:g} s; the workers "
                          "drop them (their games were withdrawn)")
        except Exception as exc:  # noqa: BLE001 - the run's result stands; say what could not be checked
            self.warn(f"could not check that the queue let go of {self.name}: {type(exc).__name__}: {exc}")
        finally:
            self.store.close()
            self.store = None

