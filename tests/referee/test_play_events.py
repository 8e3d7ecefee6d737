"""PlayMade events are opt-in (Hello.play_events): a bot that asks gets one per play, by anyone;
a bot that does not ask gets none."""

from __future__ import annotations

import asyncio
import re
import shlex
import sys
from pathlib import Path

from referee.bots.endpoint import BotEndpoint
from referee.clock import TimeControl
from referee.match.run import run_match
from referee.match.spec import MatchSpec
from referee.rules import RuleOptions
from tests.conftest import SCRIPTED_BOT


def _scripted(*flags: str) -> BotEndpoint:
    return BotEndpoint.parse(shlex.join([sys.executable, str(SCRIPTED_BOT), "normal", *flags]))


def test_play_events_reach_only_the_bots_that_ask(tmp_path: Path) -> None:
    spec = MatchSpec(bots=[_scripted("--play-events"), _scripted()], options=RuleOptions(players=2), games=2,
                     seed=4, time_control=TimeControl(move_time_ms=2000), logs_dir=tmp_path)
    report = asyncio.run(asyncio.wait_for(run_match(spec), 120))
    plays = [len(game.record["timings_us"]) for game in report.games]
    logs = tmp_path / report.match_id
    asking = [int(n) for n in re.findall(r"play events: (\d+)", (logs / "bot0.log").read_text())]
    silent = [int(n) for n in re.findall(r"play events: (\d+)", (logs / "bot1.log").read_text())]
    assert asking == plays  # every play of each game, its own included
    assert silent == [0, 0]


def test_turn_bytes_built_from_kept_plays_equal_the_engine_turn() -> None:
    """The referee keeps each deal's plays as encoded bytes and sends each Turn as joined wire
    bytes; parsed, every one must be exactly the Turn built from the engine's full observation
    of that seat (``turn_to_pb``), for every table size."""
    import random

    from casino.v1 import bot_pb2
    from referee.rules import apply, legal_moves, new_game
    from referee.rules.observation import observation
    from referee.wire.convert import public_play_field, turn_request_bytes, turn_to_pb

    for players in (2, 3, 4):
        rng = random.Random(players)
        state = new_game(RuleOptions(players=players), seed=players)
        kept = b""
        turn_id = 0
        while not state.is_over:
            seat, moves, turn_id = state.to_move, legal_moves(state), turn_id + 1
            sent = bot_pb2.PlayRequest.FromString(
                turn_request_bytes("g", turn_id, state, seat, moves, 1000, 250, kept))
            expected = bot_pb2.PlayRequest(turn=turn_to_pb("g", turn_id, observation(state, seat), moves, 1000, 250))
            assert sent == expected
            move = rng.choice(moves)
            deal = state.deal
            state = apply(state, move)
            kept = b"" if state.deal != deal else kept + public_play_field(seat, str(move))
