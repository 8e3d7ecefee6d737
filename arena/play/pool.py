"""Games between in-process bots on a pool of worker processes (``arena compare``/``gauntlet``).

A game whose every seat is an in-process bot (``inprocess:PATH.py``) needs no gRPC and no bot
process, so the whole game is played by one worker process, one worker per game at once (the
comparison's concurrency, by default the cores): each worker runs the same game loop
(``InProcessExecutor.play``, referee/match/game.py) on an event loop of its own, keeps its bot
objects from game to game as a bot process would keep its state, and sends back the game's
report without its record when the caller does not keep records (a comparison reads only the
result). Any other game, or one that is watched play by play, is played by ``fallback`` in
this process as before.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import tempfile
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from referee.loop import loop_factory
from referee.match.game import Observer
from referee.match.report import GameReport
from referee.match.spec import GameSetup

from .executor import GameExecutor, InProcessExecutor, SeatBot

_worker: dict[str, Any] = {}  # in a worker process: its event loop and executor


def all_inprocess(seats: Sequence[SeatBot]) -> bool:
    """Whether every seat's bot plays in-process (so a worker can play the whole game)."""
    return all(bot.endpoint.inprocess for bot in seats)


def _start_worker(logs_dir: str) -> None:
    _worker["loop"] = loop_factory()()  # the referee's chosen event loop (referee/loop.py)
    _worker["executor"] = InProcessExecutor(Path(logs_dir))


def _play(setup: GameSetup, seats: Sequence[SeatBot], keep_record: bool) -> GameReport:
    """One whole game in this worker (see the module docstring)."""
    loop: asyncio.AbstractEventLoop = _worker["loop"]
    report: GameReport = loop.run_until_complete(_worker["executor"].play(setup, seats))
    return report if keep_record else GameReport(report.game_id, report.game_number, report.seat_bots,
                                                 report.result, {})


class WorkerPoolExecutor:
    """A GameExecutor that plays all-in-process games on ``workers`` processes (see the module
    docstring); ``keep_record`` False sends back results without records (what a comparison
    needs). Workers are started with the first such game, by ``start_method`` (default fork,
    the cheapest start: the workers inherit the loaded engine; measured in docs/benchmarks.md)."""

    def __init__(self, fallback: GameExecutor, workers: int, logs_dir: Path | None = None,
                 keep_record: bool = False, start_method: str = "fork") -> None:
        self.fallback = fallback
        self.workers = max(1, workers)
        self.keep_record = keep_record
        self.start_method = start_method
        self._logs_dir = logs_dir
        self._pool: ProcessPoolExecutor | None = None

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            logs = str(self._logs_dir) if self._logs_dir else tempfile.mkdtemp(prefix="arena-inprocess-")
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context(self.start_method),
                                             initializer=_start_worker, initargs=(logs,))
        return self._pool

    async def play(self, setup: GameSetup, seats: Sequence[SeatBot], observe: Observer | None = None) -> GameReport:
        if observe is not None or not all_inprocess(seats):
            return await self.fallback.play(setup, seats, observe)
        future = self._get_pool().submit(_play, setup, list(seats), self.keep_record)
        return await asyncio.wrap_future(future)

    async def close(self) -> None:
        """Stop the workers (a game still playing is waited for), then the fallback's bots."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await asyncio.get_running_loop().run_in_executor(None, lambda: pool.shutdown(cancel_futures=True))
        await self.fallback.close()

