"""PlayMade events are opt-in (Hello.play_events): a bot that asks gets one per play, by anyone;
a bot that does not ask gets none."""

from __future__ import annotations

import asyncio
import re
import shlex
import sys
from pathlib import Path

from referee.clock import TimeControl
from referee.endpoints import BotEndpoint
from referee.match import MatchSpec, run_match
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


def test_turns_built_from_kept_plays_equal_the_engine_observation() -> None:
    """The referee keeps each deal's converted plays instead of converting the history every
    turn; the Observation it sends must be exactly the engine's observation of that seat."""
    import random

    from casino.v1 import game_pb2
    from referee.convert import observation_to_pb
    from referee.rules import apply, legal_moves, new_game
    from referee.rules.observation import observation

    for players in (2, 3, 4):
        rng = random.Random(players)
        state = new_game(RuleOptions(players=players), seed=players)
        kept: list[game_pb2.PublicPlay] = []
        while not state.is_over:
            seat = state.to_move
            assert observation_to_pb(observation(state, seat, with_plays=False), kept) == observation_to_pb(observation(state, seat))
            move = rng.choice(legal_moves(state))
            deal = state.deal
            state = apply(state, move)
            kept = [] if state.deal != deal else [*kept, game_pb2.PublicPlay(seat=seat, move=str(move))]
