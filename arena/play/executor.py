"""How the arena gets a game played: one small interface, so games can later run on queue
workers on other machines instead of in this process.

``InProcessExecutor`` plays through the referee library in this process. Each bot has a pool
of processes (or connections, for an address), reused across games and restarted after a crash
or timeout; a game takes one from each seat's pool and gives them back when it ends.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from referee.bots.endpoint import BotEndpoint
from referee.bots.inprocess import InProcessSlot, new_slot
from referee.bots.launcher import Launcher
from referee.bots.logcap import private_folder
from referee.bots.slot import BotSlot
from referee.bots.sockets import label_room, socket_root
from referee.match.game import Observer, play_game
from referee.match.report import GameReport
from referee.match.spec import GameSetup
from referee.sandbox import default_launcher


@dataclass(frozen=True, slots=True)
class SeatBot:
    """A bot as a game needs it: its name and how to reach it."""

    name: str
    endpoint: BotEndpoint
    package: str | None = None  # the bot package it was built from here (a queue's workers build their own)


class GameExecutor(Protocol):
    """Plays one game and reports it; never raises for anything a bot does (that is a result).
    ``observe``, if given, is told of every play (referee/match/game.py; the live games)."""

    async def play(self, setup: GameSetup, seats: Sequence[SeatBot], observe: Observer | None = None) -> GameReport: ...

    async def close(self) -> None: ...


@dataclass
class _BotPool:
    bot: SeatBot
    logs_dir: Path
    socket_dir: Path
    launcher: Launcher
    idle: list[BotSlot | InProcessSlot] = field(default_factory=list)
    made: int = 0

    def acquire(self) -> BotSlot | InProcessSlot:
        # a slot that failed to start comes back first and fails at once (no new start-up wait)
        if self.idle:
            return self.idle.pop()
        self.made += 1
        # the tournament's name is the bot's name in every record and output, not its Hello name
        return new_slot(self.made, self.bot.endpoint, self.logs_dir, self.socket_dir,
                        label=f"{self.bot.name}-{self.made}", name=self.bot.name, launcher=self.launcher)

    def release(self, slot: BotSlot | InProcessSlot) -> None:
        self.idle.append(slot)

    async def close(self) -> None:
        # all at once: each stop may wait for a process to exit, and a run's end waits for the last
        await asyncio.gather(*(slot.shutdown() for slot in self.idle))
        self.idle.clear()


class InProcessExecutor:
    """Runs games with the referee library in this process (see the module docstring); its bots
    are started by ``launcher`` (default: the sandbox with its default settings)."""

    def __init__(self, logs_dir: Path, launcher: Launcher | None = None) -> None:
        self.logs_dir = logs_dir
        self.launcher = launcher or default_launcher()
        # bot names have at most 64 characters; a slot's label adds "-<n>" (arena/config.py)
        self._sockets = socket_root("arena-sock-", label_room(64 + 5))
        self._pools: dict[SeatBot, _BotPool] = {}
        self._turn_ids = itertools.count(1)  # unique across every stream of this process

    def _pool(self, bot: SeatBot) -> _BotPool:
        pool = self._pools.get(bot)
        if pool is None:
            # made with the first bot, not before: a process that plays nothing (a queued ladder's
            # coordinator) writes nothing beside a tournament file that may be read-only
            private_folder(self.logs_dir)
            pool = self._pools[bot] = _BotPool(bot, self.logs_dir, Path(self._sockets.name), self.launcher)
        return pool

    async def play(self, setup: GameSetup, seats: Sequence[SeatBot], observe: Observer | None = None) -> GameReport:
        pools = [self._pool(bot) for bot in seats]
        slots = [pool.acquire() for pool in pools]
        try:
            return await play_game(setup, slots, setup.handshake(), turn_ids=self._turn_ids, observe=observe)
        except BaseException:
            for slot in slots:  # interrupted mid-game: the stream may still owe an answer
                slot.needs_restart = True
            raise
        finally:
            for pool, slot in zip(pools, slots):
                pool.release(slot)

    async def retire(self, keep: Collection[SeatBot]) -> list[str]:
        """Stop the processes of every bot not in ``keep`` (a ladder's removed or re-specified bots);
        the names retired. Call it between games: a slot out playing is not in its pool to stop."""
        retired = [bot for bot in self._pools if bot not in keep]
        for bot in retired:
            await self._pools.pop(bot).close()
        return [bot.name for bot in retired]

    async def close(self) -> None:
        """Stop every bot process this executor started (all of them at once)."""
        await asyncio.gather(*(pool.close() for pool in self._pools.values()))
        self._pools.clear()
        self._sockets.cleanup()
