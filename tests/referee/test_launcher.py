"""The launcher seam: a match starts every command bot through the Launcher it is given (where a
sandbox backend will plug in), and an address bot through none; a launcher that cannot start a
bot makes it a start-up forfeit with the launcher's reason."""

from __future__ import annotations

import asyncio
from pathlib import Path

from casino.v1 import game_pb2
from referee.bots.endpoint import BotEndpoint
from referee.bots.launcher import LOCAL_LAUNCHER, BotProcess
from referee.match.run import run_match
from referee.match.spec import MatchSpec
from tests.conftest import ROOMY_TIME, ROOT, assert_no_bot_processes, builtin_bot_command


class RecordingLauncher:
    """Starts bots as the local launcher does, noting each command it started; ``refuse``: raise
    instead, as a launcher whose sandbox cannot be made would."""

    def __init__(self, refuse: bool = False) -> None:
        self.started: list[str] = []
        self.refuse = refuse

    async def launch(self, endpoint: BotEndpoint, address: str, log_path: Path) -> BotProcess:
        self.started.append(endpoint.spec)
        if self.refuse:
            raise PermissionError(1, "no sandbox for this bot")
        return await LOCAL_LAUNCHER.launch(endpoint, address, log_path)


def test_command_bots_start_through_the_given_launcher(running_builtin_bot: tuple[str, int]) -> None:
    address, pid = running_builtin_bot
    command = builtin_bot_command(1)
    launcher = RecordingLauncher()
    spec = MatchSpec(bots=[BotEndpoint.parse(command, cwd=str(ROOT)), BotEndpoint.parse(address)], games=2,
                     time_control=ROOMY_TIME)
    report = asyncio.run(asyncio.wait_for(run_match(spec, launcher=launcher), 120))
    assert [g.result.termination for g in report.games] == [game_pb2.TERMINATION_NORMAL] * 2
    assert launcher.started == [command], "the command bot once, the address bot never"
    assert_no_bot_processes(exclude={pid})


def test_a_launcher_that_cannot_start_a_bot_is_a_startup_forfeit(running_builtin_bot: tuple[str, int]) -> None:
    address, pid = running_builtin_bot
    launcher = RecordingLauncher(refuse=True)
    spec = MatchSpec(bots=[BotEndpoint.parse(builtin_bot_command(1), cwd=str(ROOT)), BotEndpoint.parse(address)],
                     time_control=ROOMY_TIME)
    report = asyncio.run(asyncio.wait_for(run_match(spec, launcher=launcher), 120))
    (game,) = report.games
    (failure,) = game.result.failures
    assert (failure.seat, failure.kind, failure.forfeit) == (0, game_pb2.FAILURE_KIND_STARTUP, True)
    assert "no sandbox for this bot" in failure.reason, failure.reason
    assert len(launcher.started) == 2, "tried at the match start and again for the game"
    assert_no_bot_processes(exclude={pid})
