"""Live games: how the plays of running games reach the web, whoever plays them.

Every process that plays games (`arena run` and `arena serve` through the runner, `arena worker`
through the queue) shares one database, so running games are kept there, in the table
``live_games`` (arena/store/models.py ``LiveGame``): one row per running game with its tournament,
the attempt playing it, its plays so far, when it was last written and its record so far (JSON
text in the format of a finished game's record, referee/match/record.py, with ``"result": null``).

- **Who writes.** The referee calls a play observer after every play (``play_game(observe=...)``,
  referee/match/game.py), on the loop that times the bots; the observer given by
  ``LiveWriter.observer`` only keeps the newest ``GameSoFar`` of the game (no copy, no record built).
  A ``LiveWriter`` task wakes on a play, builds the records and writes every game that changed in
  one transaction on a thread of its own, then waits ``interval_s`` (250 ms): at most four writes a
  second per process however many games run, never one per play, and the referee never waits on
  the database (a slow write only makes the next one carry more plays).
- **Who deletes.** Storing or failing a game deletes its row in the same transaction
  (``Store.finish``/``fail``); ``LiveWriter.done`` first lets a write under way end, so a row is never
  written back after its game is stored. A row is written only while its game runs with the
  writer's attempt (``Store.put_live``), and read only then (``Store.live_games``): a player that
  crashed leaves rows nobody sees, which ``Store.trim_live`` deletes when a writer starts and the
  runner's resume (``requeue_running``) deletes for its tournament.
- **Who reads.** The web (arena/web/pages/live.py): ``/live`` lists the rows, and a game's
  ``/events`` stream polls its row and tells the browser when the plays count changes.

PostgreSQL's LISTEN/NOTIFY could push the changes instead of a poll, but the table works on SQLite
too, keeps the record so far for a viewer that opens mid-game, and costs one indexed read a poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Self

from referee.match.game import Observer
from referee.match.record import GameSoFar

from ..store.store import GameTask, LiveEntry, Store

log = logging.getLogger(__name__)
LIVE_INTERVAL_S = 0.25  # the shortest time between two writes of one process's live games


class LiveWriter:
    """Writes the running games of one process to ``live_games``, batched (module docstring).
    Use it as ``async with LiveWriter(store) as live`` around the games it follows."""

    def __init__(self, store: Store, interval_s: float = LIVE_INTERVAL_S) -> None:
        self.store = store
        self.interval_s = interval_s
        self._pending: dict[int, tuple[GameTask, GameSoFar]] = {}  # by game id: the newest of each
        self._wake = asyncio.Event()
        self._thread: ThreadPoolExecutor | None = None
        self._loop_task: asyncio.Task[None] | None = None
        self._writing: asyncio.Future[int] | None = None
        self.writes = 0  # transactions written (for benchmarks and tests)

    async def __aenter__(self) -> Self:
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="arena-live")
        try:
            trimmed = await asyncio.get_running_loop().run_in_executor(self._thread, self.store.trim_live)
            if trimmed:
                log.info("%d live game row(s) of games no longer running were deleted", trimmed)
        except Exception as exc:  # noqa: BLE001 - a live page's loss, never the games'
            log.warning("could not trim live games: %s", exc)
        self._loop_task = asyncio.create_task(self._run(), name="live-writer")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._loop_task is not None:
            self._loop_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop_task
        await self._written()
        if self._thread is not None:
            self._thread.shutdown(wait=True)
        self._pending.clear()

    def observer(self, task: GameTask) -> Observer:
        """The play observer of ``task``'s game (for ``play_game(observe=...)``): notes the newest
        state and returns at once."""
        def observe(game: GameSoFar) -> None:
            self._pending[task.id] = (task, game)
            self._wake.set()
        return observe

    async def done(self, task: GameTask) -> None:
        """``task``'s game is over: nothing more of it is written, and a write under way has ended
        (call it before storing the game, so its row cannot come back after the delete)."""
        self._pending.pop(task.id, None)
        await self._written()

    def forget(self, task: GameTask) -> None:
        """As ``done`` without waiting (on a cancelled task's way out)."""
        self._pending.pop(task.id, None)

    async def _written(self) -> None:
        if self._writing is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.shield(self._writing)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self._pending = list(self._pending.values()), {}
            if not batch:
                continue
            self._writing = loop.run_in_executor(self._thread, _write, self.store, batch)
            try:
                await asyncio.shield(self._writing)
                self.writes += 1
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a missed update of a live page; the next play writes again
                log.warning("could not write live games: %s", exc)
            finally:
                self._writing = None
            await asyncio.sleep(self.interval_s)


def _write(store: Store, batch: list[tuple[GameTask, GameSoFar]]) -> int:
    """On the writer's thread: build each game's record so far and write them in one transaction."""
    entries = [LiveEntry(task.id, task.attempt, game.plays, json.dumps(game.record(), separators=(",", ":")))
               for task, game in batch]
    return store.put_live(entries)
