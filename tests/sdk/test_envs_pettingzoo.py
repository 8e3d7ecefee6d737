"""The PettingZoo environment (casino_bot.envs.pettingzoo) passes PettingZoo's own API and seed
tests at every table size, its masks allow exactly the engine's legal plays, and a seeded game
deals what the engine (and so the referee) deals; plus the action encoding and the policy bot."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("pettingzoo", reason="the research extra is not installed: pip install -e '.[research]'")

import numpy as np  # noqa: E402
from pettingzoo.test import api_test, seed_test  # noqa: E402

from casino_bot.envs import END, NUM_ACTIONS, TurnBuilder, play_in_process, policy_bot, spell, tokens_in_state  # noqa: E402
from casino_bot.envs import pettingzoo as pz  # noqa: E402
from referee.rules import RuleOptions, apply, legal_moves, new_game, parse_move  # noqa: E402

TABLES = [(2, False), (3, False), (4, False), (4, True)]


@pytest.mark.parametrize(("players", "individuals"), TABLES)
def test_api_test_passes(players: int, individuals: bool) -> None:
    api_test(pz.env(players=players, individuals=individuals), num_cycles=200)


def test_seed_test_passes() -> None:
    seed_test(lambda: pz.env(players=3), num_cycles=200)


def test_the_encoding_spells_the_notation() -> None:
    move = parse_move("KS capture b2 5S 8C")
    assert spell(move) == (51, 53, 70, 117 + 19, 117 + 28, END)  # KS = (13 - 1) * 4 + 3; b2 = 68 + 2
    assert len(set(spell(m) for m in legal_moves(new_game(seed=3)))) == len(legal_moves(new_game(seed=3)))


@pytest.mark.parametrize(("players", "individuals"), TABLES)
def test_masks_allow_exactly_the_engine_moves_and_the_game_matches_the_engine(players: int, individuals: bool) -> None:
    rng = random.Random(players)
    env = pz.raw_env(players=players, individuals=individuals, max_deals=2)
    env.reset(seed=11)
    engine = new_game(RuleOptions(players=players, partnerships=not individuals, max_deals=2), seed=11)
    while not env.terminations[env.agent_selection]:
        assert env.agent_selection == f"player_{engine.to_move}"
        move = rng.choice(legal_moves(engine))
        for token in tokens_in_state(engine, move):
            mask = env.observe(env.agent_selection)["action_mask"]
            assert mask.dtype == np.int8 and mask.shape == (NUM_ACTIONS,) and mask[token] == 1
            env.step(token)
        engine = apply(engine, move)
        assert env.state.hands == engine.hands and env.state.loose == engine.loose
        assert env.state.builds == engine.builds and env.state.scores == engine.scores
    assert engine.result is not None and env.state.result == engine.result
    assert sum(env.rewards.values()) == pytest.approx(0.0)


def test_every_legal_move_is_reachable_and_nothing_else() -> None:
    state = new_game(seed=21)
    for _ in range(30):
        moves = set(legal_moves(state))
        reached: set = set()
        frontier = [TurnBuilder.for_state(state)]
        while frontier:
            builder = frontier.pop()
            for token in builder.legal_actions():
                nxt = builder.choose(token)
                (reached.add(nxt) if not isinstance(nxt, TurnBuilder) else frontier.append(nxt))
        assert reached == moves
        state = apply(state, sorted(moves)[len(moves) // 2])


def test_explicit_decks_replay_a_deal_and_views_hide_other_hands() -> None:
    env = pz.raw_env(players=2)
    env.reset(seed=5)
    deck = env.state.decks.deck(0)
    env.reset(seed=99, options={"decks": [list(deck)]})
    assert env.state.decks.deck(0) == deck
    view = env.observe_dict("player_1")
    assert set(view) >= {"hand", "loose", "builds", "chosen"} and "hands" not in view
    assert "hand:" in env.observe_text("player_0")


def test_a_policy_plays_as_a_bot_in_process() -> None:
    rng = np.random.default_rng(0)

    def random_policy(observation: np.ndarray, mask: np.ndarray) -> int:
        assert observation.shape == (pz.TENSOR_SIZE,)
        return int(rng.choice(np.flatnonzero(mask)))

    final = play_in_process([policy_bot(random_policy), policy_bot(random_policy, seed=1)], seed=4)
    assert final.result is not None
