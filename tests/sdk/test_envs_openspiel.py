"""The OpenSpiel game python_royal_casino (casino_bot.envs.openspiel) passes OpenSpiel's random
simulation test at every table size, deals each deal as 52 chance nodes (so a duplicate deal is a
replayed chance sequence, and a seed's outcomes deal the referee's game), and agrees with
referee.rules on seeded random games."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("pyspiel", reason="the research extra is not installed: pip install -e '.[research]'")

import pyspiel  # noqa: E402

from casino_bot.envs import tokens_in_state  # noqa: E402
from casino_bot.envs.openspiel import SHORT_NAME, chance_outcomes_for_seed  # noqa: E402
from referee.rules import RuleOptions, apply, legal_moves, new_game, observation  # noqa: E402

TABLES = [{"players": 2}, {"players": 3}, {"players": 4}, {"players": 4, "individuals": True}]


@pytest.mark.parametrize("params", TABLES, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
def test_random_sim_test_passes(params: dict) -> None:
    game = pyspiel.load_game(SHORT_NAME, {**params, "max_deals": 2})
    pyspiel.random_sim_test(game, num_sims=1, serialize=params == {"players": 2}, verbose=False)


def test_the_game_is_registered_with_its_type() -> None:
    game = pyspiel.load_game(SHORT_NAME)
    kind = game.get_type()
    assert kind.dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL
    assert kind.information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
    assert kind.chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
    assert game.num_distinct_actions() == 170 and game.max_chance_outcomes() == 52
    state = game.new_initial_state()
    assert state.is_chance_node() and len(state.chance_outcomes()) == 52


def play_seeded(seed: int, options: RuleOptions, rng: random.Random):
    """A game dealt from ``seed``'s decks, as the referee deals it, with random moves: the OpenSpiel
    state, checked against the engine after every move, and the engine's final state."""
    game = pyspiel.load_game(SHORT_NAME, {"players": options.players, "individuals": not options.partnerships,
                                          "max_deals": options.max_deals})
    outcomes = chance_outcomes_for_seed(seed, options.max_deals, options)
    engine = new_game(options, seed=seed)
    state = game.new_initial_state()
    dealt = 0
    while not state.is_terminal():
        if state.is_chance_node():
            state.apply_action(outcomes[dealt])
            dealt += 1
            continue
        current = state.engine_state
        assert current.hands == engine.hands and current.loose == engine.loose and current.builds == engine.builds
        assert state.current_player() == engine.to_move
        move = rng.choice(legal_moves(engine))
        for token in tokens_in_state(engine, move):
            assert token in state.legal_actions()
            state.apply_action(token)
        engine = apply(engine, move)
        for seat in range(options.players):  # a player's view is the engine's observation of its seat
            assert state.observation_string(seat).startswith(f"seat {seat} ")
        if not engine.is_over and not state.is_chance_node():
            assert state.engine_state.scores == engine.scores
    return state, engine


@pytest.mark.parametrize("options", [RuleOptions(players=2, max_deals=3), RuleOptions(players=3, max_deals=2),
                                     RuleOptions(players=4, max_deals=2)], ids=["2p", "3p", "4p-partners"])
def test_agrees_with_the_engine_on_seeded_random_games(options: RuleOptions) -> None:
    state, engine = play_seeded(17, options, random.Random(options.players))
    assert engine.result is not None and state.engine_state.result == engine.result
    assert state.engine_state.sheets == engine.sheets
    winners = [s for s in range(options.players) if options.side_of(s) == engine.result.winner]
    returns = state.returns()
    assert sum(returns) == pytest.approx(0.0)
    assert all(returns[s] == 1.0 for s in winners) or engine.result.winner is None


def test_a_duplicate_deal_replays_the_same_chance_sequence() -> None:
    game = pyspiel.load_game(SHORT_NAME, {"max_deals": 1})
    rng = random.Random(3)
    first = game.new_initial_state()
    while first.is_chance_node():
        outcomes, probs = zip(*first.chance_outcomes(), strict=True)
        first.apply_action(rng.choice(outcomes))
    chance = list(first.history())
    again = game.new_initial_state()
    for outcome in chance:
        again.apply_action(outcome)
    assert again.engine_state.hands == first.engine_state.hands and again.engine_state.loose == first.engine_state.loose
    assert list(again.decks[0]) == chance
    # the same deck given to the engine deals the same deal
    engine = new_game(RuleOptions(max_deals=1), decks=[tuple(chance)])
    assert engine.hands == first.engine_state.hands
    assert observation(engine, 0) == observation(first.engine_state, 0)


def test_observation_tensors_are_per_player_and_clones_are_independent() -> None:
    game = pyspiel.load_game(SHORT_NAME)
    state = game.new_initial_state()
    for card in chance_outcomes_for_seed(8):
        state.apply_action(card)
    tensors = [list(state.observation_tensor(p)) for p in range(2)]
    assert tensors[0] != tensors[1] and len(tensors[0]) == game.observation_tensor_size()
    clone = state.clone()
    clone.apply_action(clone.legal_actions()[0])
    assert clone.history() != state.history() and list(state.observation_tensor(0)) == tensors[0]
