"""The SDK's ``state_from_turn`` is the engine's ``resample`` on the turn's observation, and drawing
moved into the engine changed nothing a bot does: the hidden cards drawn for a seeded rng and the
lookahead bot's moves are the ones the SDK's own copy of the drawing gave (pinned below from it)."""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Iterator

import pytest

from casino.v1 import bot_pb2
from referee.wire.convert import turn_to_pb
from referee.rules import CODE, RuleOptions, apply, legal_moves, new_game, observation, resample
from tests.conftest import ROOT

sys.path[:0] = [str(ROOT / "sample_bots" / name) for name in ("random", "greedy", "lookahead")]
_verbosity = os.environ.get("GRPC_VERBOSITY")  # the SDK quiets gRPC for its process; not for this one's children
from casino_bot import state_from_turn
from lookahead_bot import LookaheadBot

if _verbosity is None:
    os.environ.pop("GRPC_VERBOSITY", None)

GAMES = {"2p": (RuleOptions(players=2), 0), "3p": (RuleOptions(players=3), 2), "4p": (RuleOptions(players=4), 1)}
# (game, play number) -> every hand, then the stock, of the first state drawn by Random(1000 * seed + play),
# under the handshake's options on odd plays and the options guessed from the turn on even ones
DRAWN = {
    ("2p", 14): ["4H", "7H", "KH AH AS 7C 5H 6D 9C 10S 7D KC 10D 3D 7S 3H 5D 4D JS 3C 8H 5S JC JH 6H 8S 2H QH 5C QS 9H 4S 6S 3S"],
    ("2p", 21): ["7C", "3H 6D", "2H 3D 6H JC QH 5D AS 9C 8S 6S AH 3C 7H 5H KH 10D 5C 8H 5S JS KC QS 7D 4D"],
    ("2p", 28): ["AS KH", "8S 9C", "AH QS QH 3C 7D 10D 7H JC 6H 7C 8H 4D KC 5S 5H 5C"],
    ("3p", 14): ["9D QC QD", "5C 5D JH", "AC 3S 4H JD",
                 "3H KD 10S AH 10H 9C 2D 4D AS 7S 2S 6C KC 10D AD 8C JS 7D QS KH 4C 6S 9S 5S"],
    ("3p", 21): ["QD", "KH", "AD", "KC JH 2D 10S 5D 8C AH 5C JS 3S KD 10H QS 6S 9C 10D 3H 9D 7S 5S 9S 7D AS 4D"],
    ("3p", 28): ["3H 5C", "8C 9S KC", "4D 10S QS", "AH JH 10H 10D 5S JS AD KH 2D AS 7D 6S"],
    ("4p", 14): ["", "", "JS", "5C",
                 "9C 10C JH 3C 2H QD 4H 7S 5D AS 4D 8H 7H KC 2C 9D 10S QC 7C 7D 6C 2S 9H 8C 8S JD 5H AD 4C 3H AC KH"],
    ("4p", 21): ["5C 8S", "3H 7D 7H", "AC 8H JH", "AS 2C 7S", "2H JD 7C AD QC 3C 6C QD 8C 9D 4H 4D 10C 2S KC 9C"],
    ("4p", 28): ["9C", "7S", "3C", "2H", "KC QD 8C 8S 2C 7H AD 2S JD JH 4D 5C 4H 7C 8H 10C"],
}
# game -> the lookahead bot's answer (3 samples, seeded by the game's seed) at plays 0, 7, 14, ...
LOOKAHEAD = {
    "2p": [1, 1, 0, 0, 1, 2, 1, 3, 1, 0, 0, 0, 1, 1, 3, 3, 8, 0, 0, 1, 0, 1],
    "3p": [5, 0, 6, 1, 1, 0, 1, 1, 1, 3, 0, 0, 2, 1, 4, 1, 3, 1, 0, 3, 4, 3],
    "4p": [6, 0, 0, 1, 3, 4, 0, 3, 2, 0, 12, 0, 0, 1, 5, 0, 4, 2, 0, 3, 0, 1],
}


def turns(game: str) -> Iterator[tuple[int, bot_pb2.Turn, int]]:
    """(play number, the Turn the referee sends, legal move count) every 7th play of a game of random moves."""
    options, seed = GAMES[game]
    pick = random.Random(seed)
    state = new_game(options, seed=seed)
    for n in range(150):
        if state.is_over:
            return
        moves = legal_moves(state)
        if n % 7 == 0:
            yield n, turn_to_pb("g", n, observation(state, state.to_move), moves, 100, 0), len(moves)
        state = apply(state, moves[pick.randrange(len(moves))])


@pytest.mark.parametrize("game", list(GAMES))
def test_the_hidden_cards_drawn_for_a_seed_are_unchanged(game: str) -> None:
    options, seed = GAMES[game]
    for n, turn, _ in turns(game):
        if (game, n) in DRAWN:
            state = state_from_turn(turn, random.Random(seed * 1000 + n), options if n % 2 else None)
            assert [" ".join(CODE[c] for c in cards) for cards in (*state.hands, state.stock)] == DRAWN[game, n]


@pytest.mark.parametrize("game", list(GAMES))
def test_the_lookahead_bots_moves_are_unchanged(game: str) -> None:
    _, seed = GAMES[game]
    answers = [LookaheadBot(seed, samples=3, time_fraction=None).choose(turn) if count > 1 else 0
               for _, turn, count in turns(game)]
    assert answers == LOOKAHEAD[game]


def test_state_from_turn_is_resample_of_the_turns_observation() -> None:
    options, seed = GAMES["3p"]
    state = new_game(options, seed=seed)
    for _ in range(9):
        state = apply(state, legal_moves(state)[-1])
    turn = turn_to_pb("g", 1, observation(state, state.to_move), legal_moves(state), 100, 0)
    via_sdk = state_from_turn(turn, random.Random(4), options)
    via_engine = resample(observation(state, state.to_move), random.Random(4))
    assert (via_sdk.hands, via_sdk.stock) == (via_engine.hands, via_engine.stock)
    turn.observation.stock_size += 1  # a turn that does not add up to a deck
    with pytest.raises(ValueError, match="do not add up"):
        state_from_turn(turn, random.Random(4), options)
