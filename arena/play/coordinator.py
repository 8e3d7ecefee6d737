"""``arena run FILE --queue``: the coordinator of a tournament played by queue workers
(docs/scale-out.md). It schedules the tournament (or resumes it) and queues every pending game in
the same transaction that wrote it, then follows the run in the database until every game is
settled, reporting progress through the same events as a local run (session.py), so the same
live display shows it. It plays nothing itself, and it never puts a running game back: a game is
a worker's until that worker finishes it or is found dead by the queue (worker.py).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import procrastinate
from sqlalchemy import Connection, select

from ..config import TournamentConfig
from ..rating.standings import Standings
from ..store.lease import Lease
from ..store.models import Game, GameStatus
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
            # a resume: games a killed coordinator scheduled without jobs, or whose jobs were aborted
            await asyncio.to_thread(store.in_transaction, lambda conn: self._queue_missing(conn, tid))
            counts = await asyncio.to_thread(store.counts, tid)
            total = sum(counts.values())
            settled_numbers = await asyncio.to_thread(_settled, store, tid)
            self.events.started(RunStarted(config.name, len(config.bots), total, len(settled_numbers), 0,
                                           store.url_for_people, logs_dir_for(config), lease.taken_from or ""))
            if not self.detach:
                await self._follow(store, tid, total, settled_numbers)
                await asyncio.to_thread(apply_ratings, store, tid)  # the workers' passes, finished here
            counts = await asyncio.to_thread(store.counts, tid)
            standings = await asyncio.to_thread(current_standings, store, tid, config.standings)
            failures = await asyncio.to_thread(_failures, store, tid)
            pending = counts["pending"] + counts["running"]
            return RunEnded(standings, counts, failures, pending > 0, False, store.url_for_people,
                            Path("(on each worker)"))
        finally:
            if lease is not None:
                lease.release()
            self._store = None
            store.close()

    async def _follow(self, store: Store, tid: int, total: int, known: dict[int, str]) -> None:
        """Report each game as it is settled, until all are or ``stop`` is called."""
        started, seen, requeued_at = time.monotonic(), 0, time.monotonic()
        stop_wait = asyncio.ensure_future(self._stopping.wait())
        gauges = QueueGauges(store, tid)
        try:
            while len(known) < total and not self._stopping.is_set():
                await gauges.refresh()
                await asyncio.wait({stop_wait}, timeout=FOLLOW_S)
                now = await asyncio.to_thread(_settled, store, tid)
                for number in sorted(set(now) - set(known)):
                    known[number] = now[number]
                    seen += 1
                    rate = seen / max(time.monotonic() - started, 1e-9)
                    self.events.game_finished(GameFinished(number, now[number], len(known), total, rate))
                if time.monotonic() - requeued_at >= REQUEUE_S:
                    requeued_at = time.monotonic()
                    await asyncio.to_thread(store.in_transaction, lambda conn: self._queue_missing(conn, tid))
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


def _settled(store: Store, tid: int) -> dict[int, str]:
    """Every settled game's number, with its error ("" for a played game)."""
    with store.session() as s:
        rows = s.execute(select(Game.number, Game.status, Game.error).where(
            Game.tournament_id == tid, Game.status.in_([GameStatus.DONE.value, GameStatus.FAILED.value])))
        return {number: (error or "failed") if status == GameStatus.FAILED.value else ""
                for number, status, error in rows}


def _failures(store: Store, tid: int) -> tuple[str, ...]:
    return tuple(f"game {g.number}: {g.error}" for g in store.games(tid, statuses=[GameStatus.FAILED.value]))
