"""One run of a tournament, for any front end: schedule (first time) or resume, take the run lease,
play every pending game and rate them, reporting progress through callbacks.

``arena run`` and ``arena demo`` (cli/live.py) drive it with a terminal display; a web app or a
queue worker gives other callbacks. The session owns the store, the lease and the executor for the
length of ``run``; the front end owns signals and rendering. A platform fault (a full disk under the
bot logs) ends ``run`` with a PlatformFault (``platform_stop``) once the running games are done.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from referee.errors import PlatformFault

from ..config import TournamentConfig
from ..errors import UsageError
from ..rating.standings import Standings
from ..store.lease import Lease
from ..store.store import Store
from .executor import GameExecutor, InProcessExecutor
from .queue import live_jobs
from .runner import GameDone, TournamentRunner, current_standings, logs_dir_for, open_tournament
from .sandbox import arena_launcher


@dataclass(frozen=True)
class RunStarted:
    """The run is under way: the tournament's size, what was already played, where things are."""

    name: str
    bots: int
    total: int  # games scheduled
    settled: int  # games already done or failed when this run started
    concurrency: int
    database: str  # the database's URL for people (no password)
    logs_dir: Path
    lease_taken_from: str  # the holder of a stale lease this run took over, or ""


@dataclass(frozen=True)
class GameFinished:
    """One game of this run is settled (played, or failed by the referee)."""

    number: int
    error: str  # why the referee failed it; "" for a played game
    finished: int  # games settled in all, this one included
    total: int
    rate: float  # games per second in this run so far
    done: GameDone | None = None  # what this process's runner reported (None: a queue worker played it)


@dataclass(frozen=True)
class RunEnded:
    """The run is over: the standings, the game counts by status and the referee's failures."""

    standings: Standings
    counts: dict[str, int]
    failures: tuple[str, ...]  # "game N: why", one per game the referee failed to play
    stopped: bool  # stopped (or abandoned) before every game was played
    abandoned: bool  # running games were cut off (they are replayed next time)
    database: str
    logs_dir: Path

    @property
    def pending(self) -> int:
        """Games still to play: the next run of the same tournament plays them."""
        return self.counts["pending"] + self.counts["running"]


def platform_stop(fault: PlatformFault, counts: dict[str, int]) -> PlatformFault:
    """The error a run stopped by a platform fault ends with (one line, exit 4): the fault, and
    what became of the games."""
    total, done = sum(counts.values()), counts["done"]
    return PlatformFault(fault.condition, f"platform fault ({fault.condition}): {fault}; stopped taking games with "
                         f"{done}/{total} played and kept, none of it a bot's failure: fix it and run the same "
                         "command again to resume")


class SessionEvents(Protocol):
    """What a front end hears from a session; each call is made on the session's event loop and
    must return quickly (the loop also times the bots)."""

    def started(self, event: RunStarted) -> None: ...

    def game_finished(self, event: GameFinished) -> None: ...


class NoEvents:
    """Callbacks that ignore everything: a session run for its result alone."""

    def started(self, event: RunStarted) -> None:
        """Ignored."""

    def game_finished(self, event: GameFinished) -> None:
        """Ignored."""


class TournamentSession:
    """Runs one tournament to its end (or until stopped); ``run`` returns how it ended."""

    def __init__(self, config: TournamentConfig, events: SessionEvents | None = None, concurrency: int | None = None,
                 executor: GameExecutor | None = None) -> None:
        self.config = config
        self.events: SessionEvents = events or NoEvents()
        self.concurrency = concurrency
        self._executor = executor  # None: a referee in this process (InProcessExecutor), closed at the end
        self._store: Store | None = None
        self._tid = 0
        self._runner: TournamentRunner | None = None
        self._playing: asyncio.Task[None] | None = None
        self._abandoned = False
        self._reading: set[asyncio.Future[Standings]] = set()  # standings_now() calls not finished

    def stop(self) -> None:
        """Start no new game; the run ends when the running ones are done."""
        if self._runner is not None:
            self._runner.stopping.set()

    def abandon(self) -> None:
        """Cut the running games off now (they stay to be replayed); the run then ends."""
        self._abandoned = True
        if self._playing is not None:
            self._playing.cancel()

    async def standings_now(self) -> Standings:
        """The standings as stored now, computed in a thread (a query over every game; never on
        the loop that times the bots)."""
        assert self._store is not None, "standings_now is for the length of run()"
        reading = asyncio.ensure_future(
            asyncio.to_thread(current_standings, self._store, self._tid, self.config.standings))
        self._reading.add(reading)  # the store stays open until it is done
        reading.add_done_callback(self._reading.discard)
        return await reading

    async def run(self) -> RunEnded:
        """Open (schedule or resume) the tournament, play every pending game, rate, and report."""
        config = self.config
        store = self._store = Store(config.database)
        lease: Lease | None = None
        executor = self._executor or InProcessExecutor(
            logs_dir_for(config), arena_launcher(config.sandbox, store.sqlite_path, logs_dir_for(config)))
        try:
            tid = self._tid = open_tournament(store, config)
            queued = store.in_transaction(lambda conn: live_jobs(conn, tid))
            if queued:  # a queued run: its workers own those games (a local run would play them again)
                raise UsageError(f"tournament {config.name!r} has {queued} game(s) queued for workers (it was run "
                                 f"with --queue): follow it with `arena run {config.path.name} --queue` or `arena "
                                 f"status {config.path.name}`")
            lease = Lease.acquire(store, tid, config.name, "run")  # before any game is touched
            counts = store.counts(tid)
            total = sum(counts.values())
            settled = counts["done"] + counts["failed"]
            started, played = time.monotonic(), 0
            failures: list[str] = []

            def on_game(done: GameDone) -> None:
                nonlocal played
                played += 1
                if done.report is None:
                    failures.append(f"game {done.task.number}: {done.error}")
                rate = played / max(time.monotonic() - started, 1e-9)
                error = done.error if done.report is None else ""
                self.events.game_finished(GameFinished(done.task.number, error, settled + played, total, rate, done))

            runner = self._runner = TournamentRunner(store, tid, config, executor, self.concurrency, on_game)
            loop = asyncio.get_running_loop()
            lease.when_lost(lambda: loop.call_soon_threadsafe(runner.stopping.set))
            self.events.started(RunStarted(
                config.name, len(config.bots), total, settled, runner.concurrency, store.url_for_people,
                logs_dir_for(config), lease.taken_from or ""))
            self._playing = asyncio.ensure_future(runner.run())
            try:
                await self._playing
            except asyncio.CancelledError:
                if not self._abandoned:
                    raise  # the session itself was cancelled: not a stop the caller asked for
            except PlatformFault as fault:  # one line and exit 4 (EXIT_PLATFORM): what stopped it, what is kept
                raise platform_stop(fault, store.counts(tid)) from fault
            finally:
                self._playing = None
            counts = store.counts(tid)
            standings = current_standings(store, tid, config.standings)
            pending = counts["pending"] + counts["running"]
            return RunEnded(standings, counts, tuple(failures), pending > 0, self._abandoned,
                            store.url_for_people, logs_dir_for(config))
        finally:
            if self._reading:  # a front end's last refresh lands before the store closes
                await asyncio.wait(set(self._reading))
            if self._executor is None:
                await executor.close()
            if lease is not None:
                lease.release()
            self._runner = None
            self._store = None
            store.close()
