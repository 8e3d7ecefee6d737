"""The life of one claimed game, wherever it is played: by the runner of `arena run`, `arena demo`
and `arena serve` (runner.py), or by an `arena worker` for a queue job (worker.py).

A game is claimed by its caller (pending -> running, attempt + 1: ``Store.claim``/``claim_game``),
then ``play_claimed`` plays it within its time bound (``GameSetup.time_bound_s``, from the rules'
longest game and the clock), writing its plays to the live table meanwhile, and settles it:

- played: stored with its result and record, only if this attempt still owns the game;
  otherwise the result is dropped ("no longer ours": another attempt owns it now), a WARNING
  unless the caller's ``not_ours`` says whose doing it was and at what level (a queue worker
  too late for its job, which another worker ended: once, at INFO, by the job's end);
- cancelled (a stop that cut it off): put back to pending, to be played again from the start;
- the referee's own failure (or a game past its time bound): back to pending while the game has
  attempts left (``MAX_ATTEMPTS``, not counting the platform's), else failed with the reason;
- a platform fault (``referee.errors.PlatformFault``: a full disk, no descriptors, a sandbox that
  would not start): nothing of the game is stored and nothing is a bot's failure; it goes back to
  pending to be played again (elsewhere, under a queue) until it has ``MAX_PLATFORM_FAULTS`` of
  them (counted in the store), then it is failed for the operator, never rated. The caller stops
  taking games until the condition clears (the runner ends the run, exit 4; a worker pauses).

Each of these is written only if this attempt still owns the game. A late attempt (its worker
frozen past the stall threshold while another attempt took the game over) stores nothing and
puts nothing back: its result, its failure (a game past its time bound, counted while it was
frozen) and its platform fault (a timeout that ran out while it was frozen) are all dropped, in
the one "no longer ours" line (``NotOurs``), and its caller neither retries nor pauses.

The caller decides what comes next from the ``Outcome`` (rate, report, retry the job).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from referee.errors import PlatformFault
from referee.match.game import Observer
from referee.match.report import GameReport
from referee.match.spec import GameSetup

from ..store.outage import unreachable
from ..store.store import GameTask, Store, first_line
from .live import LiveWriter

MAX_ATTEMPTS = 3  # a game the referee itself fails to play this often is marked failed
MAX_PLATFORM_FAULTS = 5  # a game the platform fails to play this often is failed for the operator
HUNG = "the game took longer than its time control allows (hung)"

DbCall = Callable[..., Awaitable[Any]]  # runs a store call off the event loop: (fn, *args) -> its result
Play = Callable[[GameSetup, Observer | None], Awaitable[GameReport]]  # plays the game, reports it
Then = Callable[[Connection], None]  # runs in the transaction that settles the game (the queue's rating pass)
NotOursLevel = Callable[[], Awaitable[int]]  # the level of a dropped result's line (the caller knows why it was)


@dataclass(frozen=True, slots=True)
class Played:
    """Stored: the game's result and record are in the database."""

    report: GameReport


@dataclass(frozen=True, slots=True)
class NotOurs:
    """Another attempt owns the game now: nothing of this one was stored (its report when it was
    played to its end; None when it failed or met a platform fault)."""

    report: GameReport | None


@dataclass(frozen=True, slots=True)
class Failed:
    """The referee could not play it: back to pending (``final`` False) or failed for good."""

    error: str
    final: bool
    cause: Exception


@dataclass(frozen=True, slots=True)
class Faulted:
    """The platform could not play it: back to pending, or (``final``) failed for the operator."""

    fault: PlatformFault
    final: bool


Outcome = Played | NotOurs | Failed | Faulted


@dataclass(frozen=True)
class ClaimedGames:
    """How one process settles the games it claims: its store, how a store call leaves the loop
    (``db``), its live writer, the logger its lines go to (the caller's: operators filter on it),
    the log fields of all its games, the error an interrupted game is put back with, and the
    level of a dropped result's line (``not_ours``; WARNING without it: nothing should have taken
    the game from this attempt)."""

    store: Store
    db: DbCall
    log: logging.Logger
    live: LiveWriter | None = None
    interrupted: str = "interrupted; to be replayed"
    not_ours: NotOursLevel | None = None

    async def play(self, task: GameTask, setup_of: Callable[[], GameSetup], play: Play,
                   fields: dict[str, object] | None = None, then: Then | None = None) -> Outcome:
        """Play ``task``'s game (``setup_of`` makes its setup, ``play`` plays it) and settle it (module
        docstring); ``then`` runs in the transaction that stores it or fails it for good."""
        store, live = self.store, self.live
        setup: GameSetup | None = None
        try:
            setup = setup_of()
            observe = live.observer(task) if live is not None else None
            report = await _bounded(setup, play, observe)
        except asyncio.CancelledError:
            if live is not None:
                live.forget(task)
            # shielded, off the loop: written even if this task is cancelled again on its way out
            await asyncio.shield(asyncio.to_thread(store.fail, task, self.interrupted, True))
            raise
        except PlatformFault as fault:  # the platform's, not a bot's nor the game's: no traceback, no result
            error = f"platform fault {task.faults + 1}/{MAX_PLATFORM_FAULTS} ({fault.condition}): {fault}"
            fault_line = ("game %d (attempt %d) could not be played: %s", task.number, task.attempt, error)
            if live is not None:
                await live.done(task)
            with self._said_if_raised(logging.WARNING, fault_line, task, setup, fields, error):
                failed = await self.db(store.fault, task, error, MAX_PLATFORM_FAULTS, then)
            if failed is None:  # a late attempt's (its worker was frozen): the game is another's now
                return await self._dropped(task, setup, fields, f"its platform fault ({fault.condition})", None)
            self.log.warning(*fault_line, extra=self._fields(task, setup, fields, error))
            return Faulted(fault, failed)
        except Exception as exc:  # the referee's own failure, not a bot's: retry, then give up
            error = HUNG if isinstance(exc, _Hung) else f"{type(exc).__name__}: {exc}"
            # the database gone (an outage, said once by the process: store/outage.py): no traceback per game
            outage = unreachable(exc)
            level = logging.WARNING if outage else logging.ERROR
            failure_line = ("game %d (attempt %d) could not be played%s", task.number, task.attempt,
                            f": {first_line(exc)}" if outage else "")
            if live is not None:
                await live.done(task)
            final = task.attempt - task.faults >= MAX_ATTEMPTS  # the platform's attempts are not the referee's
            with self._said_if_raised(level, failure_line, task, setup, fields, error, None if outage else exc):
                owned = await self.db(store.fail, task, error, not final, then if final else None)
            if not owned:  # a late attempt's (a game past its time bound while its worker was frozen, say)
                return await self._dropped(task, setup, fields, "its failure", None)
            self.log.log(level, *failure_line, exc_info=None if outage else exc,
                         extra=self._fields(task, setup, fields, error))
            return Failed(error, final, exc)
        if live is not None:
            await live.done(task)  # no write of its row after the one that deletes it
        if not await self.db(store.finish, task, report.result, report.record, then):
            return await self._dropped(task, setup, fields, "result", report)
        self.log.info("game %d stored (attempt %d): %s", task.number, task.attempt, report.result.reason,
                      extra=self._fields(task, setup, fields, report.result.reason))
        return Played(report)

    async def _dropped(self, task: GameTask, setup: GameSetup | None, fields: dict[str, object] | None, what: str,
                       report: GameReport | None) -> NotOurs:
        """Another attempt owns the game now: what this one ended with (its result, its failure, its
        platform fault) is dropped, in one line at the caller's ``not_ours`` level (a WARNING
        without it: nothing should have taken the game from this attempt)."""
        level = await self.not_ours() if self.not_ours is not None else logging.WARNING
        self.log.log(level, "game %d attempt %d was no longer ours; %s dropped", task.number, task.attempt, what,
                     extra=self._fields(task, setup, fields, "no longer ours"))
        return NotOurs(report)

    @contextlib.contextmanager
    def _said_if_raised(self, level: int, line: tuple[object, ...], task: GameTask, setup: GameSetup | None,
                        fields: dict[str, object] | None, reason: str,
                        exc_info: BaseException | None = None) -> Iterator[None]:
        """A failed game's line is said once its store call says whether the attempt still owned the
        game (a late one's is dropped quietly); when that call raises (the database gone), it is said
        before the error goes on."""
        try:
            yield
        except BaseException:
            self.log.log(level, *line, exc_info=exc_info, extra=self._fields(task, setup, fields, reason))
            raise

    @staticmethod
    def _fields(task: GameTask, setup: GameSetup | None, fields: dict[str, object] | None,
                reason: str) -> dict[str, object]:
        """A game's log fields (docs/operations.md, "Logs"): the caller's (tournament, job), the
        game's number, attempt and id (unless its setup is what failed), and why it ended or failed."""
        out: dict[str, object] = {**(fields or {}), "game": task.number, "attempt": task.attempt, "reason": reason}
        if setup is not None:
            out["game_id"] = setup.game_id
        return out


async def _bounded(setup: GameSetup, play: Play, observe: Observer | None) -> GameReport:
    """``play`` within the game's time bound; past it, ``_Hung``."""
    bound = asyncio.timeout(setup.time_bound_s())
    try:
        async with bound:
            return await play(setup, observe)
    except TimeoutError as exc:
        if bound.expired():
            raise _Hung() from exc
        raise


class _Hung(Exception):
    """The game outlived its time bound (raised in place of the bound's TimeoutError)."""


__all__ = ["HUNG", "MAX_ATTEMPTS", "MAX_PLATFORM_FAULTS", "ClaimedGames", "Failed", "Faulted", "NotOurs", "Outcome",
           "Played"]
