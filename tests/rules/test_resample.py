"""``resample``: a full state drawn from one seat's observation. Over seeded random games, for
every seat at every turn, the drawn state shows that seat exactly its observation, keeps its hand
and everything public, hides the same cards elsewhere and lets the mover play what it could; the
rng decides the hidden deal; a build's owner is dealt a card to take it (rule 10); and an
observation no state can produce raises InvalidObservationError."""

from __future__ import annotations

import dataclasses
import random

import pytest

from referee.rules import (
    ACE,
    RANK,
    Condition,
    DecksExhaustedError,
    GameState,
    InvalidObservationError,
    MoveKind,
    RuleOptions,
    apply,
    legal_moves,
    new_game,
    observation,
    parse_card,
    parse_cards,
    play,
    resample,
)
from referee.rules.resample import _deal_hidden
from tests.rules.test_properties import CONFIGS, game_states

CASES = {**CONFIGS, "2p-most-spades": RuleOptions(players=2, on_twenty=Condition.MOST_SPADES)}
CONTINUATION = [("2p", 92), ("4p-partners", 7)]  # games that reach rule 17's continuation
GAMES = [(name, seed) for name in CASES for seed in range(3)] + CONTINUATION
PLAYS_PER_DEAL = 48


def hidden(state: GameState, seat: int) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
    """What ``seat`` cannot see: the other hands (its own left empty) and the stock, in order."""
    return tuple(h if s != seat else () for s, h in enumerate(state.hands)), state.stock


def checked(state: GameState) -> bool:
    """The deals resampled in a game: the first two, and any deal with a restricted side or after rule 17."""
    return state.deal < 2 or any(state.restricted) or state.continuation


@pytest.mark.parametrize("name, seed", GAMES)
def test_a_resampled_state_agrees_with_everything_the_seat_sees(name: str, seed: int) -> None:
    options = CASES[name]
    rng = random.Random(seed)
    turns = free = continued = 0
    for state, _ in game_states(options, seed):
        if state.is_over or not checked(state):
            continue
        for seat in range(options.players):
            obs = observation(state, seat)
            got = resample(obs, rng)
            where = f"[{name} seed {seed}] deal {state.deal + 1} play {state.plays + 1} seat {seat}"
            assert observation(got, seat) == obs, where
            assert got.hands[seat] == state.hands[seat], where
            public = ("deal", "dealer", "round", "to_move", "loose", "builds", "piles", "sweeps", "last_capturer",
                      "plays", "table_dealt", "scores", "restricted", "continuation", "certain_at")
            assert [getattr(got, f) for f in public] == [getattr(state, f) for f in public], where
            assert got.deal_history() == state.deal_history(), where
            assert [len(h) for h in got.hands] == [len(h) for h in state.hands], where
            got_hidden, real_hidden = hidden(got, seat), hidden(state, seat)
            assert sorted(sum(got_hidden[0], got_hidden[1])) == sorted(sum(real_hidden[0], real_hidden[1])), where
            if seat == state.to_move:  # the mover's choices depend on its own hand and the table only
                assert legal_moves(got) == legal_moves(state), where
            if obs.stock_size and state.plays % 6 == 0:  # cards left to deal: other draws, other hidden deals
                a, b = resample(obs, random.Random(1)), resample(obs, random.Random(2))
                assert hidden(a, seat) != hidden(b, seat), where
                assert hidden(resample(obs, random.Random(1)), seat) == hidden(a, seat), where
                free += 1
            turns += 1
            continued += state.continuation
    assert turns >= 2 * PLAYS_PER_DEAL * options.players and free > 0, (turns, free)
    assert continued or (name, seed) not in CONTINUATION


def deck_for(table: str, hands: list[str]) -> list[int]:
    """A 2-player deck: ``table`` first, then the hands (leader, seat 0, first), then the other cards."""
    front = parse_cards(table) + [c for h in hands for c in parse_cards(h)]
    return front + [c for c in range(52) if c not in front]


@pytest.mark.parametrize("value, table, build_card, keep", [
    (9, "5H 3S 8D 9H", "4C", "9D"),    # 4C on the loose 5H: a build of 9, taken with the 9D seat 1 keeps
    (14, "5H 3S 8D AH", "9C", "AS"),   # 9C on the loose 5H: a build of 14, taken with an Ace (rule 1)
])
def test_a_builds_owner_is_dealt_a_card_to_take_it(value: int, table: str, build_card: str, keep: str) -> None:
    deck = deck_for(table, ["2C 6H 7S KD", f"{build_card} {keep} JH JS"])
    state = apply(new_game(RuleOptions(players=2), decks=[deck]), "7S trail")
    state = apply(state, next(m for m in legal_moves(state)
                              if m.kind == MoveKind.BUILD and m.value == value and m.card == parse_card(build_card)))
    obs = observation(state, 0)  # seat 0 saw seat 1 build: seat 1 holds a card of the build's rank
    rank = ACE if value == 14 else value
    draws = [resample(obs, random.Random(seed)).hands[1] for seed in range(60)]
    assert all(any(RANK[c] == rank for c in hand) for hand in draws)
    assert len(set(draws)) > 30, "the rest of seat 1's hand is still drawn at random"
    # with every card of the rank off the table in seat 0's own hand, no hidden deal fits the history
    off_table = tuple(c for c in range(52) if RANK[c] == rank and c not in obs.table_dealt)
    assert len(off_table) == 3 == len(obs.hand)
    with pytest.raises(InvalidObservationError, match="no deal of the unseen cards fits the history"):
        resample(dataclasses.replace(obs, hand=off_table), random.Random(0))


def test_needed_cards_are_placed_when_random_deals_keep_missing_them() -> None:
    # three one-card hands that each need the only card of its rank among 40: rejection gives up
    kings, queens, jacks = parse_card("KS"), parse_card("QS"), parse_card("JS")
    unseen = [*range(40), kings, queens, jacks]
    need = [set(), {13}, {12}, {11}]
    hands = _deal_hidden(unseen, {1: 1, 2: 1, 3: 1}, need, random.Random(0))
    assert hands == {1: [kings], 2: [queens], 3: [jacks]}
    assert sorted(unseen) == list(range(40)), "what is left is the stock"
    with pytest.raises(InvalidObservationError):
        _deal_hidden(list(range(40)), {1: 1}, [set(), {13}], random.Random(0))


def test_an_observation_no_state_produces_is_refused() -> None:
    state = new_game(RuleOptions(players=3), seed=5)
    for _ in range(7):
        state = apply(state, legal_moves(state)[0])
    obs = observation(state, 1)
    resample(obs, random.Random(0))
    bad = {
        "cards that do not add up": dataclasses.replace(obs, stock_size=obs.stock_size + 1),
        "a seat off the table": dataclasses.replace(obs, seat=3),
        "plays that do not replay": dataclasses.replace(obs, plays=obs.plays[1:]),
        "a play by another seat": dataclasses.replace(obs, plays=((2,) + obs.plays[0][1:],) + obs.plays[1:]),
        "a wrong pile size": dataclasses.replace(obs, pile_sizes=(9,) * len(obs.pile_sizes)),
        "a round that is not the plays'": dataclasses.replace(obs, round=3),
    }
    accepted = []
    for why, wrong in bad.items():
        try:
            resample(wrong, random.Random(0))
        except InvalidObservationError:
            continue
        accepted.append(why)
    assert accepted == []


def test_a_resampled_state_ends_with_its_deal() -> None:
    state = new_game(RuleOptions(), seed=1)
    for _ in range(47):
        state = apply(state, legal_moves(state)[0])
    got = resample(observation(state, state.to_move), random.Random(0))
    last = play(got, legal_moves(got)[0])  # the deal's last card: scored, not dealt on
    assert last.deal_over and len(last.sheets) == 1 and last.sheets[0].sides
    with pytest.raises(DecksExhaustedError):
        apply(got, legal_moves(got)[0])
