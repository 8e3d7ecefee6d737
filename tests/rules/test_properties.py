"""Property tests over random seeded games (2, 3, 4 players in partnerships, 4 individuals).

Every test draws a seed with hypothesis; the seed fixes both the decks (``new_game(seed=...)``)
and the move choices (a ``random.Random`` seeded from it), so each example is one reproducible
game. ``derandomize=True`` makes the examples themselves the same on every run. A failure
message names the configuration and seed; rerun a single game with
``play_game(CONFIGS[...], seed)`` below.

Rules file: /work/shared/rules/royal-casino.md. The second oracle for legal plays is
tests/reference/casino_reference.py, written independently of the engine.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.rules import (
    Condition,
    EndReason,
    GameState,
    IllegalMoveError,
    Move,
    MoveKind,
    RuleOptions,
    apply,
    game_record,
    legal_moves,
    new_game,
    observation,
    parse_move,
    replay_record,
)
from referee.rules.cards import ALL_CARDS, CODE, RANK
from tests.reference.casino_reference import reference_legal_plays

# (players, partnerships): 2 and 3 play for themselves, 4 in partnerships, 4 individuals (option).
CONFIGS = {
    "2p": RuleOptions(players=2),
    "3p": RuleOptions(players=3),
    "4p-partners": RuleOptions(players=4, partnerships=True),
    "4p-individuals": RuleOptions(players=4, partnerships=False),
}
CONFIG_IDS = list(CONFIGS)

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)

# A game has at most max_deals deals of 52 - 4 = 48 plays each: anything longer is a hang.
PLAYS_PER_DEAL = 48


def prop_settings(max_examples: int) -> settings:
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


# --------------------------------------------------------------------------- games


def choose(rng: random.Random, moves: list[Move]) -> Move:
    """A random legal play, biased towards builds (rule 8) so that build, add and raise
    positions and owner obligations (rule 10) come up often, not only trails and captures."""
    roll = rng.random()
    if roll < 0.45:
        building = [m for m in moves if m.kind >= MoveKind.BUILD]
        if building:
            return rng.choice(building)
    elif roll < 0.6:
        trails = [m for m in moves if m.kind == MoveKind.TRAIL]
        if trails:
            return rng.choice(trails)
    return rng.choice(moves)


def game_states(options: RuleOptions, seed: int) -> Iterator[tuple[GameState, Move | None]]:
    """Every state of the game of ``seed``, with the move chosen there (None at the end).

    The loop is bounded: a game that does not finish within max_deals * 48 plays fails.
    """
    rng = random.Random(seed)
    state = new_game(options, seed=seed)
    limit = options.max_deals * PLAYS_PER_DEAL
    for _ in range(limit + 1):
        if state.is_over:
            yield state, None
            return
        move = choose(rng, legal_moves(state))
        yield state, move
        state = apply(state, move)
    raise AssertionError(f"game did not end within {limit} plays ({options}, seed {seed})")


def play_game(options: RuleOptions, seed: int) -> GameState:
    """The final state of the game of ``seed``."""
    state = None
    for state, _ in game_states(options, seed):
        pass
    assert state is not None and state.is_over
    return state


def where(state: GameState, seed: int, name: str) -> str:
    return f"[{name} seed {seed}] deal {state.deal + 1} round {state.round} play {state.plays + 1} seat {state.to_move}"


# --------------------------------------------------------------------------- per-state checks


def check_cards_accounted(state: GameState, ctx: str) -> None:
    """Every one of the 52 cards is in exactly one place: a hand, loose, a build, a pile, the stock."""
    places: list[int] = []
    for hand in state.hands:
        places.extend(hand)
    places.extend(state.loose)
    for build in state.builds:
        places.extend(build.cards)
    for pile in state.piles:
        places.extend(pile)
    places.extend(state.stock)
    assert sorted(places) == list(ALL_CARDS), f"{ctx}: cards not accounted for exactly once"


def check_dealing(state: GameState, ctx: str) -> None:
    """At the start of a deal and of each round, the cards came from the front of the deck:
    4 to the table, then blocks of 4 to each player, leader first (rules 3, 4)."""
    n = state.options.players
    leader = (state.dealer + 1) % n
    assert state.dealer == (n - 1 + state.deal) % n, ctx
    if state.is_over or state.deal_over:
        return
    deck = state.decks.deck(state.deal)
    rounds_dealt = state.round
    if state.plays == 0:
        assert rounds_dealt == 1 and state.to_move == leader, ctx
        assert state.table_dealt == deck[:4] and state.loose == tuple(sorted(deck[:4])), ctx
    if state.plays == (rounds_dealt - 1) * 4 * n:  # a round has just been dealt
        start = 4 + (rounds_dealt - 1) * 4 * n
        assert state.to_move == leader, ctx
        for i in range(n):
            block = deck[start + 4 * i : start + 4 * (i + 1)]
            assert state.hands[(leader + i) % n] == tuple(sorted(block)), f"{ctx}: hand {i} not dealt in order"
        assert state.stock == deck[start + 4 * n :], ctx
    assert state.stock == deck[4 + rounds_dealt * 4 * n :], ctx


def check_legal_list(state: GameState, ctx: str) -> list[Move]:
    moves = legal_moves(state)
    assert moves, f"{ctx}: the player to move has no legal play (rule 10 promises one)"
    assert moves == sorted(moves), f"{ctx}: legal moves are not sorted"
    assert len(set(moves)) == len(moves), f"{ctx}: legal moves repeat"
    hand = state.hands[state.to_move]
    for m in moves:
        assert m.card in hand, f"{ctx}: {m} plays a card not in hand"
        assert parse_move(str(m)) == m, f"{ctx}: {m} does not round-trip through its notation"
    return moves


def snapshot(state: GameState) -> dict:
    """Every field of a state except the legal-move memo (a cache, filled on demand)."""
    snap = {f.name: getattr(state, f.name) for f in dataclasses.fields(state) if f.name not in ("_legal", "decks")}
    snap["decks"] = (state.decks.seed, state.decks.explicit, [state.decks.deck(d) for d in range(state.deal + 1)])
    return snap


def check_every_legal_move_applies(state: GameState, moves: list[Move], ctx: str) -> None:
    """Each listed play applies (as a Move and as notation) and leaves the input state as it was."""
    before = snapshot(state)
    for m in moves:
        after = apply(state, m)
        assert after is not state
        assert apply(state, str(m)).to_move == after.to_move
        assert snapshot(state) == before, f"{ctx}: apply({m}) changed its input state"


def plausible_moves(state: GameState) -> Iterator[Move]:
    """Plays shaped like real ones, built from the position: every trail, captures of each loose
    card, pair of loose cards and build, new builds with one or two loose cards, adds and raises
    of each build, and a few plays of cards the mover does not hold."""
    hand = state.hands[state.to_move]
    loose = state.loose
    builds = state.builds
    for c in hand:
        r = RANK[c]
        yield Move(c, MoveKind.TRAIL)
        for i, x in enumerate(loose):
            yield Move(c, MoveKind.CAPTURE, 0, (), (x,))
            for y in loose[i + 1 :]:
                yield Move(c, MoveKind.CAPTURE, 0, (), (x, y))
                if 2 <= r + RANK[x] + RANK[y] <= 14:
                    yield Move(c, MoveKind.BUILD, r + RANK[x] + RANK[y], (), (x, y))
            for v in {r + RANK[x], 14, RANK[x]}:
                if 2 <= v <= 14:
                    yield Move(c, MoveKind.BUILD, v, (), (x,))
        if loose:
            yield Move(c, MoveKind.CAPTURE, 0, (), loose)
        for b in builds:
            yield Move(c, MoveKind.CAPTURE, 0, (b.id,), ())
            yield Move(c, MoveKind.ADD, b.value, (b.id,), ())
            if b.value + r <= 14:
                yield Move(c, MoveKind.RAISE, b.value + r, (b.id,), ())
            for x in loose:
                yield Move(c, MoveKind.CAPTURE, 0, (b.id,), (x,))
                yield Move(c, MoveKind.ADD, b.value, (b.id,), (x,))
        yield Move(c, MoveKind.CAPTURE, 0, (99,), ())  # no such build
    others = [c for seat, h in enumerate(state.hands) if seat != state.to_move for c in h]
    for c in others[:2] + list(state.stock[:1]):
        yield Move(c, MoveKind.TRAIL)  # not the mover's card
    if state.stock and hand:
        yield Move(hand[0], MoveKind.CAPTURE, 0, (), (state.stock[0],))  # not a table card


def check_illegal_moves_raise(state: GameState, moves: list[Move], ctx: str) -> int:
    """Every plausible play not in the legal list raises IllegalMoveError with a reason; returns
    how many were tried."""
    legal = set(moves)
    before = snapshot(state)
    tried = 0
    for m in set(plausible_moves(state)):
        if m in legal:
            continue
        tried += 1
        with pytest.raises(IllegalMoveError) as info:
            apply(state, m)
        assert info.value.reason, f"{ctx}: {m} rejected without a reason"
    assert snapshot(state) == before, f"{ctx}: a rejected play changed the state"
    return tried


def json_card_codes(value) -> set[str]:  # type: ignore[no-untyped-def]
    """Every card code appearing anywhere in a JSON value (as a whole string or a word of one)."""
    codes = set(CODE)
    found: set[str] = set()

    def walk(v) -> None:  # type: ignore[no-untyped-def]
        if isinstance(v, str):
            found.update(w for w in v.split() if w in codes)
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(k)
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(value)
    return found


def check_observations(state: GameState, ctx: str) -> None:
    """A seat sees its own hand and public information, never another hand or the stock."""
    n = state.options.players
    stock = {CODE[c] for c in state.stock}
    public = {CODE[c] for c in state.loose + state.table_dealt}
    for b in state.builds:
        public.update(CODE[c] for c in b.cards)
    public.update(json_card_codes([str(e.move) for e in state.history() if e.deal == state.deal]))
    for seat in range(n):
        obs = observation(state, seat)
        assert obs.seat == seat and obs.hand == state.hands[seat], f"{ctx}: seat {seat} does not see its hand"
        assert obs.hand_sizes == tuple(len(h) for h in state.hands)
        assert obs.stock_size == len(state.stock)
        hidden = set(stock)
        for other in range(n):
            if other != seat:
                hidden.update(CODE[c] for c in state.hands[other])
        assert not hidden & public, f"{ctx}: a hidden card is also public?"
        data = json.loads(json.dumps(obs.to_dict()))
        assert data["hand"] == [CODE[c] for c in state.hands[seat]]
        seen = json_card_codes(data)
        leaked = seen & (hidden - public)
        assert not leaked, f"{ctx}: seat {seat}'s observation shows hidden cards {sorted(leaked)}"
        own = {CODE[c] for c in state.hands[seat]}
        assert own <= seen


def sheet_conditions(state: GameState, name: str, seed: int) -> None:
    """Score sheets of every finished deal (rules 13, 15, 17)."""
    achieved_attr = {
        Condition.MOST_CARDS: "most_cards",
        Condition.BIG_CASINO: "big_casino",
        Condition.LITTLE_CASINO: "little_casino",
        Condition.MOST_SPADES: "most_spades",
    }
    options = state.options
    scores = (0,) * options.sides
    continuation = False
    for sheet in state.sheets:
        ctx = f"[{name} seed {seed}] deal {sheet.deal + 1}"
        sides = sheet.sides
        assert sheet.dealer == (options.players - 1 + sheet.deal) % options.players, ctx  # rule 3
        for s, before in zip(sides, scores):  # rule 15; rule 17: no restrictions once tied at 21+
            assert s.restricted == (None if continuation else options.condition_for(before)), ctx
        raw = sum(s.raw_points for s in sides)
        expected = 11 + sum(s.net_sweeps for s in sides) - 3 * ("cards" in sheet.tied) - 1 * ("spades" in sheet.tied)
        assert raw == expected, f"{ctx}: raw points {raw} != 11 + net sweeps - tied items = {expected}"
        assert sum(s.cards for s in sides) == 52, ctx
        assert sum(s.spades for s in sides) == 13, ctx
        assert min(s.net_sweeps for s in sides) == 0, ctx
        for s in sides:
            if s.restricted is None:
                assert s.condition_met is None and s.points == s.raw_points, ctx
            else:
                achieved = getattr(s, achieved_attr[s.restricted])
                assert s.condition_met == achieved, (
                    f"{ctx}: side {s.side} restricted to {s.restricted.value}: took it = {achieved}, "
                    f"condition_met = {s.condition_met}"
                )
                assert s.points == (s.raw_points if achieved else 0), ctx
        assert sheet.scores_after == tuple(a + s.points for a, s in zip(scores, sides)), ctx
        scores = sheet.scores_after
        top = max(scores)
        if sheet is not state.sheets[-1]:  # the game went on: nobody had won (rules 15, 17)
            assert sheet.condition_winner is None, ctx
            assert top < 21 or scores.count(top) > 1, f"{ctx}: {scores} should have ended the game"
        continuation = continuation or (top >= 21 and scores.count(top) > 1)
    result = state.result
    assert result is not None and result.scores == scores
    assert result.deals == len(state.sheets)
    last = state.sheets[-1]
    if result.reason is EndReason.CONDITION_MET:
        assert result.winner == last.condition_winner is not None
    elif result.reason is EndReason.TARGET_REACHED:
        assert last.condition_winner is None
        assert scores[result.winner] >= 21 and all(v < scores[result.winner] for i, v in enumerate(scores) if i != result.winner)
    else:
        assert result.deals == state.options.max_deals


# --------------------------------------------------------------------------- properties


@pytest.mark.parametrize("name", CONFIG_IDS)
@prop_settings(max_examples=60)
@given(seed=SEEDS)
def test_whole_game_invariants(name: str, seed: int) -> None:
    """At every state: 52 cards each once, dealt from the front of the deck (rules 3, 4), a legal
    play exists, the list is sorted and unique. The game ends; every deal's sheet adds up
    (rule 13), restricted sides are credited exactly when they took what they needed (rule 15)
    and the game ends exactly when a side has won (rules 15-17)."""
    options = CONFIGS[name]
    final = None
    for state, _ in game_states(options, seed):
        ctx = where(state, seed, name)
        check_cards_accounted(state, ctx)
        check_dealing(state, ctx)
        if not state.is_over:
            check_legal_list(state, ctx)
        final = state
    assert final is not None
    sheet_conditions(final, name, seed)


@pytest.mark.parametrize("name", CONFIG_IDS)
@prop_settings(max_examples=12)
@given(seed=SEEDS)
def test_every_legal_move_applies_and_others_are_illegal(name: str, seed: int) -> None:
    """Every listed play applies without changing the input state; plausible plays that are
    not listed raise IllegalMoveError."""
    options = CONFIGS[name]
    tried = 0
    for state, _ in game_states(options, seed):
        if state.is_over:
            break
        ctx = where(state, seed, name)
        moves = check_legal_list(state, ctx)
        check_every_legal_move_applies(state, moves, ctx)
        tried += check_illegal_moves_raise(state, moves, ctx)
    assert tried > 0


@pytest.mark.parametrize("name", CONFIG_IDS)
@prop_settings(max_examples=10)
@given(seed=SEEDS)
def test_observations_hide_other_hands_and_the_stock(name: str, seed: int) -> None:
    options = CONFIGS[name]
    for state, _ in game_states(options, seed):
        check_observations(state, where(state, seed, name))


@pytest.mark.parametrize("name", CONFIG_IDS)
@prop_settings(max_examples=25)
@given(seed=SEEDS)
def test_same_seed_same_game_and_record_replays(name: str, seed: int) -> None:
    options = CONFIGS[name]
    first = play_game(options, seed)
    second = play_game(options, seed)
    record = game_record(first)
    assert record == game_record(second), f"[{name} seed {seed}] the same seed gave different games"
    record = json.loads(json.dumps(record))  # records are JSON documents
    replayed = replay_record(record)
    assert replayed.result == first.result
    assert replayed.sheets == first.sheets
    assert [(e.deal, e.seat, e.move) for e in replayed.history()] == [(e.deal, e.seat, e.move) for e in first.history()]
    assert game_record(replayed) == game_record(first)


def reference_position(state: GameState) -> dict:
    """The position in the reference generator's input format."""
    return {
        "players": state.options.players,
        "partnerships": state.options.teams,
        "to_move": state.to_move,
        "hand": [CODE[c] for c in state.hands[state.to_move]],
        "loose": [CODE[c] for c in state.loose],
        "builds": [
            {"id": b.id, "value": b.value, "cards": [CODE[c] for c in b.cards], "owner": b.owner, "multiple": b.multiple}
            for b in state.builds
        ],
    }


@pytest.mark.parametrize("name", CONFIG_IDS)
@prop_settings(max_examples=25)
@given(seed=SEEDS)
def test_legal_moves_agree_with_the_reference(name: str, seed: int) -> None:
    """Engine and independent reference list the same plays at every position of a game."""
    options = CONFIGS[name]
    for state, _ in game_states(options, seed):
        if state.is_over:
            break
        engine = {str(m) for m in legal_moves(state)}
        reference = reference_legal_plays(reference_position(state))
        assert engine == reference, (
            f"{where(state, seed, name)}: position {reference_position(state)}\n"
            f"  only in engine:    {sorted(engine - reference)}\n"
            f"  only in reference: {sorted(reference - engine)}"
        )
