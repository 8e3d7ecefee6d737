"""The sample lookahead bot keeps its own time: when it stops thinking (a share of the move time,
never closer than a safety margin to what the Turn allows), that the clock is checked inside a
rollout, and that with a fixed number of samples the work, not the clock, decides its move.

The deadlines here are in the past or far away, so no verdict depends on the machine's speed;
how close the bot comes to the limit on a busy machine is a benchmark
(bench/bench_lookahead_clock.py, docs/benchmarks.md)."""

from __future__ import annotations

import os
import random
import sys
import time

import pytest

from referee.rules import RuleOptions, apply, legal_moves, new_game, observation
from referee.wire.convert import turn_to_pb
from tests.conftest import ROOT

sys.path[:0] = [str(ROOT / "sample_bots" / name) for name in ("random", "greedy", "lookahead")]
_verbosity = os.environ.get("GRPC_VERBOSITY")  # the SDK quiets gRPC for its process; not for this one's children
from casino_bot import legal_moves as sdk_legal_moves  # noqa: E402
from casino_bot import state_from_turn, table_from_turn
from greedy_bot import greedy_index  # noqa: E402
from lookahead_bot import LookaheadBot, OutOfTime, lookahead_index, rollout, think_deadline  # noqa: E402

if _verbosity is None:
    os.environ.pop("GRPC_VERBOSITY", None)


@pytest.mark.parametrize("move_ms, bank_ms, fraction, expected_ms", [
    (100, 0, 0.4, 40.0),       # the share of the move time
    (100, 0, 0.9, 70.0),       # capped: 30% of the limit is kept as a margin
    (40, 0, 0.4, 15.0),        # capped by the 25 ms floor of the margin
    (100, 1000, 0.9, 90.0),    # a bank raises the cap, not the share
    (10, 0, 0.4, 0.0),         # a limit below the margin: answer at once
])
def test_think_deadline(move_ms: int, bank_ms: int, fraction: float, expected_ms: float) -> None:
    assert think_deadline(1000.0, move_ms, bank_ms, fraction) == pytest.approx(1000.0 + expected_ms / 1000)


def a_turn(seed: int = 3, plays: int = 5):  # type: ignore[no-untyped-def]
    """The Turn the referee would send after ``plays`` first-legal-move plays of a seeded game."""
    state = new_game(RuleOptions(players=2), seed=seed)
    for _ in range(plays):
        state = apply(state, legal_moves(state)[0])
    moves = legal_moves(state)
    assert len(moves) > 1
    return turn_to_pb("g", 1, observation(state, state.to_move), moves, 100, 0)


def test_a_rollout_stops_when_the_deadline_passes() -> None:
    turn = a_turn()
    state = state_from_turn(turn, random.Random(1))
    with pytest.raises(OutOfTime):
        rollout(state, turn.observation.side, deadline=time.monotonic() - 1)
    assert isinstance(rollout(state, turn.observation.side, deadline=None), float)


def test_past_its_deadline_it_answers_greedy_without_sampling() -> None:
    turn = a_turn()
    loose, builds = table_from_turn(turn)
    expected = greedy_index(sdk_legal_moves(turn), loose, builds)
    got = lookahead_index(turn, random.Random(1), deadline=time.monotonic() - 1)
    assert got == expected


def test_fixed_samples_decide_the_move_whatever_the_clock() -> None:
    turn = a_turn(seed=8, plays=7)
    first = LookaheadBot(5, samples=3, time_fraction=None)
    second = LookaheadBot(5, samples=3, time_fraction=None)
    second.turn_started = time.monotonic() - 3600  # a turn that "arrived" an hour ago: the clock is ignored
    assert first.choose(turn) == second.choose(turn)


def test_it_needs_samples_or_a_time_fraction() -> None:
    with pytest.raises(ValueError):
        LookaheadBot(0, samples=None, time_fraction=None)


def test_a_rollout_and_the_search_stop_at_a_cpu_deadline() -> None:
    """Under a CPU-time limit the bot also stops on its CPU clock (``time.process_time``): a CPU
    deadline in the past stops a rollout and leaves the greedy move, whatever the wall clock."""
    turn = a_turn()
    state = state_from_turn(turn, random.Random(1))
    with pytest.raises(OutOfTime):
        rollout(state, turn.observation.side, deadline=time.monotonic() + 3600, cpu_deadline=time.process_time() - 1)
    loose, builds = table_from_turn(turn)
    expected = greedy_index(sdk_legal_moves(turn), loose, builds)
    assert lookahead_index(turn, random.Random(1), cpu_deadline=time.process_time() - 1) == expected


def test_under_a_cpu_limit_the_bot_budgets_cpu_time() -> None:
    """With the handshake's ``cpu_time_ms`` set and a wall clock that allows an hour, a turn whose
    CPU budget is spent (it "arrived" an hour of CPU ago) is answered greedy, without sampling."""
    from casino.v1 import game_pb2

    turn = a_turn(seed=8, plays=7)
    bot = LookaheadBot(5)
    bot.time_control = game_pb2.TimeControl(move_time_ms=3_600_000, cpu_time_ms=100)
    bot.turn_started = time.monotonic()
    bot.turn_started_cpu = time.process_time() - 3600
    loose, builds = table_from_turn(turn)
    assert bot.choose(turn) == greedy_index(sdk_legal_moves(turn), loose, builds)
