"""The match runner: plays games between bot endpoints over gRPC and reports what happened.

A match is one or more games between the same bots. Each bot gets one process (for command
endpoints) and one protocol stream for the whole match; a crashed or disconnected bot is
restarted (or reconnected) before the next game. Every move is checked against the rules engine
and timed on the monotonic clock; every failure is recorded with what the bot sent and why it
was rejected, and becomes a forfeit or a random substitute move by the match's policy.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import tempfile
import uuid
from pathlib import Path

from casino.v1 import referee_pb2

from ..bots.launcher import Launcher
from ..bots.slot import BotSlot
from ..clock import MONOTONIC, Clock
from ..sandbox import default_launcher
from .game import Emit, discard_event, play_game
from .report import MatchReport
from .spec import MatchSpec


async def run_match(spec: MatchSpec, emit: Emit | None = None, clock: Clock = MONOTONIC,
                    launcher: Launcher | None = None) -> MatchReport:
    """Play every game of ``spec``; bots are stopped on every path, errors and cancellation included.
    ``clock`` times every start-up and answer (tests drive a ManualClock); ``launcher`` starts the
    bots' processes (default: the sandbox with its default settings, referee/sandbox/)."""
    emit = emit or discard_event
    launcher = launcher or default_launcher()
    match_id = spec.match_id or uuid.uuid4().hex[:12]
    logs_dir = spec.logs_dir / match_id if spec.logs_dir else Path(tempfile.mkdtemp(prefix=f"casino-{match_id}-"))
    logs_dir.mkdir(parents=True, exist_ok=True)
    if spec.records_dir:
        spec.records_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="casino-sock-") as socket_dir:
        slots = [BotSlot(i, ep, logs_dir, Path(socket_dir), clock=clock, launcher=launcher)
                 for i, ep in enumerate(spec.bots)]
        try:
            handshake = spec.game(match_id, 1).handshake(spec.games)
            await asyncio.gather(*(slot.ensure_ready(handshake, spec.time_control) for slot in slots))
            emit(referee_pb2.RunMatchResponse(match_started=referee_pb2.MatchStarted(
                match_id=match_id, bot_names=[s.name for s in slots])))
            reports = []
            turn_ids = itertools.count(1)  # unique across the match, so a late answer never matches a later turn
            for number in range(1, spec.games + 1):
                setup = spec.game(match_id, number)
                report = await play_game(setup, [slots[b] for b in setup.seat_bots], handshake, emit, turn_ids)
                reports.append(report)
                if spec.records_dir:
                    path = spec.records_dir / f"{report.game_id}.json"
                    path.write_text(json.dumps(report.record, indent=1) + "\n", encoding="utf-8")
            match = MatchReport(match_id, [s.name for s in slots], reports, logs_dir)
            emit(referee_pb2.RunMatchResponse(match_result=match.tally()))
            return match
        finally:
            await asyncio.gather(*(slot.shutdown() for slot in slots), return_exceptions=True)
