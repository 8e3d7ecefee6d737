"""``arena run FILE --queue``: the coordinator of a tournament played by queue workers
(docs/scale-out.md). It schedules the tournament (or resumes it) and queues every pending game in
the same transaction that wrote it, then follows the run in the database until every game is
settled, reporting progress through the same events as a local run (session.py), so the same
live display shows it. It plays nothing itself, and it never puts a running game back: a game is
a worker's until that worker finishes it or is found dead by the queue (worker.py). Once the run
has started, a database outage is ridden out for the outage window (store/outage.py), and past
it the run stops with one line and exit status 2.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import procrastinate
from sqlalchemy import Connection, select

from ..config import TournamentConfig
from ..rating.standings import Standings
from ..store.lease import Lease
from ..store.models import Game, GameStatus
from ..store.outage import Outage
from ..store.store import Store
from .queue import GameJob, defer_games, games_without_job, make_app, release_orphaned_games, require_postgresql
from .queue_status import QueueGauges
from .rate import apply_ratings
from .runner import current_standings, game_setup, logs_dir_for, open_tournament
from .session import GameFinished, NoEvents, RunEnded, RunStarted, SessionEvents

FOLLOW_S = 0.5  # how often the coordinator looks at the games' progress
REQUEUE_S = 10.0  # how often it queues pending games that have no job (an aborted job, a lost one)


class QueuedSession:
    """A tournament run through the job queue; ``run`` returns how it ended (``detach``: as soon
    as every pending game is queued)."""

    def __init__(self, config: TournamentConfig, events: SessionEvents | None = None, detach: bool = False) -> None:
        require_postgresql(config.database, "arena run --queue")
        self.config = config
        self.events: SessionEvents = events or NoEvents()
        self.detach = detach
        self.queued = 0  # jobs this run queued
        self._app = make_app()
        self._store: Store | None = None
        self._tid = 0
        self._stopping = asyncio.Event()

    def stop(self) -> None:
        """Stop following; the workers go on playing the queued games."""
        self._stopping.set()

    def abandon(self) -> None:
        """The same as ``stop``: the games are the workers'."""
        self._stopping.set()

    async def standings_now(self) -> Standings:
        assert self._store is not None, "standings_now is for the length of run()"
        return await asyncio.to_thread(current_standings, self._store, self._tid, self.config.standings)

    def _report(self, number: int, error: str, settled: int, total: int, rate: float) -> None:
        self.events.game_finished(GameFinished(number, error, settled, total, rate))

    def _queue_missing(self, conn: Connection, tid: int) -> int:
        count = queue_missing(self._app, self.config, conn, tid)
        self.queued += count
        return count

    async def run(self) -> RunEnded:
        config = self.config
        store = self._store = await asyncio.to_thread(Store, config.database)
        lease: Lease | None = None
        try:
            tid = self._tid = await asyncio.to_thread(open_tournament, store, config, True, self._queue_missing)
            lease = await asyncio.to_thread(Lease.acquire, store, tid, config.name, "run --queue")
            loop = asyncio.get_running_loop()
            lease.when_lost(lambda: loop.call_soon_threadsafe(self._stopping.set))
            # a resume: games a killed coordinator scheduled without jobs, or whose jobs were aborted.
            # From here on, the database may go away for a while (a restart, a failover): every
            # call is tried again for up to the outage window (store/outage.py)
            outage = Outage(store.url_for_people, give_up=self._stopping)
            await outage.call(store.in_transaction, lambda conn: self._queue_missing(conn, tid))
            counts = await outage.call(store.counts, tid)
            total = sum(counts.values())
            settled_numbers = await outage.call(settled_games, store, tid)
            self.events.started(RunStarted(config.name, len(config.bots), total, len(settled_numbers), 0,
                                           store.url_for_people, logs_dir_for(config), lease.taken_from or ""))
            if not self.detach:
                await follow_games(store, tid, total, settled_numbers, self._stopping,
                                   lambda conn: self._queue_missing(conn, tid), outage, self._report)
                await outage.call(apply_ratings, store, tid)  # the workers' passes, finished here
            counts = await outage.call(store.counts, tid)
            standings = await outage.call(current_standings, store, tid, config.standings)
            failures = await outage.call(_failures, store, tid)
            pending = counts["pending"] + counts["running"]
            return RunEnded(standings, counts, failures, pending > 0, False, store.url_for_people,
                            Path("(on each worker)"))
        finally:
            if lease is not None:
                lease.release()
            self._store = None
            store.close()

OnSettled = Callable[[int, str, int, int, float], None]  # (number, error, settled, total, games per second)


async def follow_games(store: Store, tid: int, total: int, known: dict[int, str], stop: asyncio.Event,
                       requeue: Callable[[Connection], int], outage: Outage,
                       on_settled: OnSettled | None = None) -> None:
    """Follow the queued games of ``tid`` until all ``total`` are settled (``known``: the ones
    settled already, added to as games settle) or ``stop`` is set: each game newly settled is
    reported to ``on_settled``, the queue gauges are refreshed, and every ``REQUEUE_S`` the
    pending games without a job are queued (``requeue``, in a transaction of its own). A database
    outage is ridden out through ``outage`` (every read and the requeue are safe to run again);
    past its window, DatabaseUnavailableError. The one follow loop of ``arena run --queue`` and
    ``arena serve --queue``."""
    started, seen, requeued_at = time.monotonic(), 0, time.monotonic()
    stop_wait = asyncio.ensure_future(stop.wait())
    gauges = QueueGauges(store, tid)
    try:
        while len(known) < total and not stop.is_set():
            await gauges.refresh()
            await asyncio.wait({stop_wait}, timeout=FOLLOW_S)
            now = await outage.call(settled_games, store, tid)
            for number in sorted(set(now) - set(known)):
                known[number] = now[number]
                seen += 1
                if on_settled is not None:
                    on_settled(number, now[number], len(known), total, seen / max(time.monotonic() - started, 1e-9))
            if time.monotonic() - requeued_at >= REQUEUE_S:  # jobs aborted or lost meanwhile
                requeued_at = time.monotonic()
                await outage.call(store.in_transaction, requeue)
    finally:
        stop_wait.cancel()


def queue_missing(app: procrastinate.App, config: TournamentConfig, conn: Connection, tid: int) -> int:
    """Queue every pending game of ``tid`` that has no job, on ``conn`` (in the caller's
    transaction: the one that scheduled the games, or one of its own on a resume); how many."""
    release_orphaned_games(conn, tid)
    ids = games_without_job(conn, tid)
    if not ids:
        return 0
    rows = conn.execute(select(Game.id, Game.number, Game.seat_bots, Game.deck_seed)
                        .where(Game.id.in_(ids)).order_by(Game.number)).all()
    jobs = [GameJob(game_id, tid, number, game_setup(config, number, seats, seed), config.sandbox, config.runtimes)
            for game_id, number, seats, seed in rows]
    return defer_games(app, conn, jobs)


def settled_games(store: Store, tid: int) -> dict[int, str]:
    """Every settled game's number, with its error ("" for a played game)."""
    with store.session() as s:
        rows = s.execute(select(Game.number, Game.status, Game.error).where(
            Game.tournament_id == tid, Game.status.in_([GameStatus.DONE.value, GameStatus.FAILED.value])))
        return {number: (error or "failed") if status == GameStatus.FAILED.value else ""
                for number, status, error in rows}


def _failures(store: Store, tid: int) -> tuple[str, ...]:
    return tuple(f"game {g.number}: {g.error}" for g in store.games(tid, statuses=[GameStatus.FAILED.value]))
