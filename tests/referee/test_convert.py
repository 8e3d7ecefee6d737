"""``observation_from_pb`` inverts ``observation_to_pb``: every seat's observation of seeded random
games comes back equal through the wire form, and bad wire values raise the engine's typed errors.
The referee's Observation bytes, written straight from the state, parse to that same message."""

from __future__ import annotations

import dataclasses

import pytest

from casino.v1 import game_pb2
from referee.rules.options import Condition
from referee.wire.convert import observation_bytes, observation_from_pb, observation_to_pb
from referee.rules import (
    InvalidCardError,
    InvalidMoveError,
    InvalidObservationError,
    RuleOptions,
    new_game,
    observation,
)
from tests.rules.test_properties import CONFIGS, game_states


@pytest.mark.parametrize("name", list(CONFIGS))
def test_an_observation_survives_the_wire(name: str) -> None:
    options = CONFIGS[name]
    seen = 0
    for state, _ in game_states(options, seed=11):
        for seat in range(options.players):
            obs = observation(state, seat)
            assert observation_from_pb(observation_to_pb(obs), options) == obs
            seen += 1
    assert seen > 100


OPTIONS = {**CONFIGS, "2p-most-spades": RuleOptions(players=2, on_twenty=Condition.MOST_SPADES)}


@pytest.mark.parametrize("name", list(OPTIONS))
def test_the_observation_bytes_written_from_the_state_parse_to_the_engines_observation(name: str) -> None:
    """Every seat of every state of seeded random games (and of each state with its continuation
    flag flipped: continuations are rare), until each kind of value the encoder writes has been
    seen: a restricted side, no last capturer and seat 0 as it, single, multiple and
    seat-0-owned builds."""
    options = OPTIONS[name]
    seen: set[str] = set()
    wanted = {"restricted", "no capturer", "capturer 0", "multiple", "single", "owner 0", "owner 1"}
    for seed in range(40):
        for state, _ in game_states(options, seed=seed):
            for variant in (state, dataclasses.replace(state, continuation=not state.continuation)):
                for seat in range(options.players):
                    expected = observation_to_pb(observation(variant, seat, with_plays=False))
                    assert game_pb2.Observation.FromString(observation_bytes(variant, seat)) == expected, (seed, seat)
            seen.update(
                {"restricted"} if any(state.restricted) else set(),
                {"no capturer" if state.last_capturer is None else f"capturer {state.last_capturer}"},
                {"multiple" if b.multiple else "single" for b in state.builds},
                {f"owner {b.owner}" for b in state.builds},
            )
        if wanted <= seen:
            break
    assert wanted <= seen, wanted - seen


def test_bad_wire_values_raise_typed_errors() -> None:
    state = new_game(RuleOptions(), seed=3)
    pb = observation_to_pb(observation(state, 0))
    bad_card, bad_play, bad_condition = game_pb2.Observation(), game_pb2.Observation(), game_pb2.Observation()
    for message in (bad_card, bad_play, bad_condition):
        message.CopyFrom(pb)
    bad_card.hand[0] = "1X"
    bad_play.plays.add(seat=0, move="KS fly")
    bad_condition.restricted[0] = "most_hearts"
    with pytest.raises(InvalidCardError):
        observation_from_pb(bad_card, RuleOptions())
    with pytest.raises(InvalidMoveError):
        observation_from_pb(bad_play, RuleOptions())
    with pytest.raises(InvalidObservationError):
        observation_from_pb(bad_condition, RuleOptions())
