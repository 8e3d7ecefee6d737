"""``observation_from_pb`` inverts ``observation_to_pb``: every seat's observation of seeded random
games comes back equal through the wire form, and bad wire values raise the engine's typed errors."""

from __future__ import annotations

import pytest

from casino.v1 import game_pb2
from referee.wire.convert import observation_from_pb, observation_to_pb
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
