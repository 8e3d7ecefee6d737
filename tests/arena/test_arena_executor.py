"""InProcessExecutor (arena/play/executor.py) with real bot processes over real gRPC: pools reuse a
bot's process across games, and ``retire`` stops exactly the processes of the bots it is not
told to keep (a ladder's removed bot, or a bot whose command changed under the same name)."""

from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path

from arena.play.executor import InProcessExecutor, SeatBot
from referee.bots.endpoint import BotEndpoint
from referee.clock import TimeControl
from referee.match.spec import GameSettings, GameSetup
from tests.arena_support import (
    MARKER_ENV,
    kill_marked_processes,
    marked_processes,
    new_marker,
    wait_no_marked_processes,
)

RANDOM_BOT = shlex.join([sys.executable, str(Path(__file__).resolve().parents[2] / "sample_bots/random/random_bot.py")])


def random_bot(name: str, seed: int, marker: str) -> SeatBot:
    return SeatBot(name, BotEndpoint.parse(RANDOM_BOT, env={"CASINO_BOT_SEED": str(seed), MARKER_ENV: marker}))


def setup(number: int) -> GameSetup:
    settings = GameSettings(time_control=TimeControl(move_time_ms=2000, startup_time_ms=20000))
    return GameSetup.build(settings, match_id="exec", game_number=number, seat_bots=(0, 1), seed=number)


def test_pools_reuse_processes_and_retire_stops_only_the_bots_not_kept(tmp_path: Path) -> None:
    old_a, b_marker, new_a = new_marker(), new_marker(), new_marker()
    a_before, b, a_after = random_bot("a", 1, old_a), random_bot("b", 2, b_marker), random_bot("a", 3, new_a)

    async def scenario() -> None:
        executor = InProcessExecutor(tmp_path / "logs")
        try:
            for number in (1, 2):  # one at a time: each bot's pool needs a single process
                report = await executor.play(setup(number), [a_before, b])
                assert report.result.reason in ("target_reached", "condition_met", "max_deals"), report.result
                assert not report.result.failures and len(report.result.ranks) == 2
            assert len(marked_processes(old_a)) == 1 and len(marked_processes(b_marker)) == 1

            # "a" now has a new command: its old pool goes, "b" (kept) is untouched
            assert await executor.retire({a_after, b}) == ["a"]
            assert wait_no_marked_processes(old_a) == []
            assert len(marked_processes(b_marker)) == 1
            assert await executor.retire({a_after, b}) == []  # nothing left to retire

            report = await executor.play(setup(3), [a_after, b])
            assert not report.result.failures
            assert len(marked_processes(new_a)) == 1 and len(marked_processes(b_marker)) == 1
        finally:
            await executor.close()
        assert wait_no_marked_processes(new_a) == [] and wait_no_marked_processes(b_marker) == []

    try:
        asyncio.run(scenario())
    finally:
        for marker in (old_a, b_marker, new_a):
            kill_marked_processes(marker)
