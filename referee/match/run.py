"""The match runner: plays games between bot endpoints over gRPC and reports what happened.

A match is one or more games between the same bots. Each bot gets one process (for command
endpoints) and one protocol stream for the whole match; a crashed or disconnected bot is
restarted (or reconnected) before the next game. Every move is checked against the rules engine
and timed on the monotonic clock; every failure is recorded with what the bot sent and why it
was rejected, and becomes a forfeit or a random substitute move by the match's policy. What the
platform fails (its logs, records, sandbox, memory, descriptors) ends the match with PlatformFault
(exit 4 from the commands), never as a bot's failure, with every bot stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from casino.v1 import referee_pb2

from ..bots.launcher import Launcher
from ..bots.logcap import private_folder
from ..bots.inprocess import new_slot
from ..bots.sockets import label_room, socket_root
from ..clock import MONOTONIC, Clock
from ..errors import platform_fault
from ..sandbox import default_launcher
from .game import Emit, discard_event, play_game
from .report import GameReport, MatchReport
from .spec import MatchSpec

KeepRecord = Callable[[GameReport], None]


def record_json(record: dict[str, Any]) -> str:
    """A game record as its file holds it (docs/protocol.md, "Game records")."""
    return json.dumps(record, indent=1) + "\n"


def match_log_folder(root: Path, match_id: str) -> Path:
    """A new folder for a match's bot logs under ``root``: ``<match_id>``, or ``<match_id>-2``, ``-3``
    ... when a match of that id (the same seeded match run again) left its logs there, so each run's
    logs start empty, with the whole log cap (made with mkdir, never shared by two runs at once)."""
    root.mkdir(parents=True, exist_ok=True)
    for n in itertools.count(1):
        folder = root / (match_id if n == 1 else f"{match_id}-{n}")
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue
        return folder
    raise AssertionError("unreachable")


def write_record(folder: Path, report: GameReport) -> None:
    """Keep a finished game's record as ``<folder>/<game_id>.json``; PlatformFault when it cannot
    be written (a full disk: the game is not kept, and no bot is to blame). A record cut short is
    removed, never left as if it were the game's."""
    path = folder / f"{report.game_id}.json"
    try:
        path.write_text(record_json(report.record), encoding="utf-8")
    except OSError as exc:
        with contextlib.suppress(OSError):
            path.unlink()
        raise platform_fault(exc, f"cannot write the game record {path}") from exc


def _private_folders(spec: MatchSpec, match_id: str) -> Path:
    """The match's log folder (made) and its records folder; PlatformFault when they cannot be made."""
    try:
        logs_dir = (match_log_folder(spec.logs_dir, match_id) if spec.logs_dir
                    else Path(tempfile.mkdtemp(prefix=f"casino-{match_id}-")))
        private_folder(logs_dir)
        if spec.records_dir:
            spec.records_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise platform_fault(exc, f"cannot make the match's folders ({exc.filename or spec.logs_dir})") from exc
    return logs_dir


async def _start_all(slots: list[BotSlot], handshake: Any, spec: MatchSpec) -> None:
    """Start every bot at once; when one start raises (a PlatformFault), the others are cancelled
    and awaited before it is raised, so none is still starting while the match stops them all."""
    tasks = [asyncio.ensure_future(slot.ensure_ready(handshake, spec.time_control)) for slot in slots]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def run_match(spec: MatchSpec, emit: Emit | None = None, clock: Clock = MONOTONIC,
                    launcher: Launcher | None = None, keep_record: KeepRecord | None = None) -> MatchReport:
    """Play every game of ``spec``; bots are stopped on every path, errors and cancellation included.
    ``clock`` times every start-up and answer (tests drive a ManualClock); ``launcher`` starts the
    bots' processes (default: the sandbox with its default settings, referee/sandbox/). Each
    finished game's record goes to ``keep_record`` (the Referee service keeps records under its
    quota this way; an error it raises ends the match), else to ``spec.records_dir`` when it is set."""
    emit = emit or discard_event
    launcher = launcher or default_launcher()
    if keep_record is None and spec.records_dir:
        keep_record = functools.partial(write_record, spec.records_dir)
    # a caller's id (the command line's follows the seed: MatchSpec.seeded_match_id), else a random
    # one: the Referee service's matches, several clients' at once, each with its records and logs
    match_id = spec.match_id or uuid.uuid4().hex[:12]
    logs_dir = _private_folders(spec, match_id)
    with socket_root("casino-sock-", label_room(len(f"bot{len(spec.bots)}"))) as socket_dir:
        slots = [new_slot(i, ep, logs_dir, Path(socket_dir), clock=clock, launcher=launcher)
                 for i, ep in enumerate(spec.bots)]
        try:
            handshake = spec.game(match_id, 1).handshake(spec.games)
            await _start_all(slots, handshake, spec)
            emit(referee_pb2.RunMatchResponse(match_started=referee_pb2.MatchStarted(
                match_id=match_id, bot_names=[s.name for s in slots])))
            reports = []
            turn_ids = itertools.count(1)  # unique across the match, so a late answer never matches a later turn
            for number in range(1, spec.games + 1):
                setup = spec.game(match_id, number)
                report = await play_game(setup, [slots[b] for b in setup.seat_bots], handshake, emit, turn_ids)
                reports.append(report)
                if keep_record is not None:
                    keep_record(report)
            match = MatchReport(match_id, [s.name for s in slots], reports, logs_dir)
            emit(referee_pb2.RunMatchResponse(match_result=match.tally()))
            return match
        finally:
            # the bots are stopped even when this task is cancelled again meanwhile (a server's
            # stop after its client left): a bounded wait, after which the cancellation goes on
            await _to_the_end(asyncio.gather(*(slot.shutdown() for slot in slots), return_exceptions=True))


async def _to_the_end(awaitable: Awaitable[Any]) -> None:
    """Await ``awaitable`` to its end even if this task is cancelled meanwhile; a cancellation
    that came is raised once it is done."""
    task = asyncio.ensure_future(awaitable)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
