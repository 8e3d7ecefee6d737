"""Deal, scoring and game-end rules of Royal Casino (rules file /work/shared/rules/royal-casino.md,
rules 3-4 dealing, 12-18 end of deal and game).

Tests are named after the rule they check. Expected values come from the rules file, worked out
by hand in each test, never recomputed with the engine's own helpers.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import random
from pathlib import Path

import pytest

from referee.rules import (
    Condition,
    DecksExhaustedError,
    DeckSource,
    EndReason,
    GameOverError,
    InvalidRecordError,
    RuleOptions,
    apply,
    game_record,
    legal_moves,
    make_position,
    new_game,
    parse_card,
    parse_cards,
    parse_deck,
    parse_move,
    replay_record,
)
from referee.rules.cards import ALL_CARDS, CODE
from referee.rules.play import next_deal_if_over, play
from referee.rules.scoring import condition_certain, continuation_after, score_deal
from referee.rules.state import deal_new

RANKS = "A 2 3 4 5 6 7 8 9 10 J Q K".split()
ROUNDS = {2: 6, 3: 4, 4: 3}  # rule 4


# --------------------------------------------------------------------------- helpers


def cards(text: str) -> tuple[int, ...]:
    """Card ints from space-separated codes."""
    return tuple(parse_cards(text))


def suit(s: str, ranks: str | None = None) -> tuple[int, ...]:
    """The cards of one suit (optionally only the given ranks)."""
    wanted = ranks.split() if ranks else RANKS
    return tuple(parse_card(r + s) for r in wanted)


def rest_of_deck(*taken: tuple[int, ...]) -> tuple[int, ...]:
    """Every card not in any of ``taken``, in canonical order."""
    used = {c for group in taken for c in group}
    return tuple(c for c in ALL_CARDS if c not in used)


def check_partition(piles) -> None:  # type: ignore[no-untyped-def]
    """Guard for hand-made piles: together they are the 52 cards exactly once."""
    flat = [c for p in piles for c in p]
    assert sorted(flat) == list(ALL_CARDS), "test setup: piles must hold each card once"


def shuffled_deck(seed: int) -> tuple[int, ...]:
    deck = list(ALL_CARDS)
    random.Random(seed).shuffle(deck)
    return tuple(deck)


def first_legal(state):  # type: ignore[no-untyped-def]
    return legal_moves(state)[0]


def play_deal(state, choose=first_legal):  # type: ignore[no-untyped-def]
    """Play one whole deal with ``play`` (the next deal is not dealt).

    Returns (states at the start of each round, state before the last play, last move, settled state).
    """
    starts = [state]
    while True:
        move = choose(state)
        after = play(state, move)
        if after.deal_over:
            return starts, state, move, after
        if after.round != state.round:
            starts.append(after)
        state = after


def play_game(state, choose=first_legal, limit: int = 5000):  # type: ignore[no-untyped-def]
    """Play a game to its end with ``apply``."""
    for _ in range(limit):
        if state.is_over:
            return state
        state = apply(state, choose(state))
    raise AssertionError("game did not end")


def end_of_deal(
    options: RuleOptions,
    *,
    to_move: int,
    dealer: int,
    hands: dict[int, str],
    loose: str,
    piles: list[tuple[int, ...]],
    scores=None,  # type: ignore[no-untyped-def]
    sweeps=None,  # type: ignore[no-untyped-def]
    last_capturer: int | None = None,
    plays: int = 40,
    certain_at=None,  # type: ignore[no-untyped-def]
):
    """A position in the last round of a deal (empty stock), every other card already in a pile."""
    st = make_position(options, to_move=to_move, dealer=dealer, hands=hands, loose=loose, scores=scores)
    in_play = [c for h in st.hands for c in h] + list(st.loose)
    check_partition([tuple(in_play), *piles])
    sides = options.sides
    return dataclasses.replace(
        st,
        stock=(),
        piles=tuple(tuple(p) for p in piles),
        sweeps=tuple(sweeps) if sweeps is not None else (0,) * sides,
        last_capturer=last_capturer,
        plays=plays,
        certain_at=tuple(certain_at) if certain_at is not None else (None,) * sides,
    )


def score(options, piles, *, sweeps=None, scores=None, restricted=None, certain_at=None, deal=0):  # type: ignore[no-untyped-def]
    """score_deal with defaults: no sweeps, everybody on 0, nobody restricted."""
    n = len(piles)
    return score_deal(
        options,
        deal,
        options.players - 1,
        piles,
        sweeps if sweeps is not None else (0,) * n,
        scores if scores is not None else (0,) * n,
        restricted if restricted is not None else (None,) * n,
        certain_at if certain_at is not None else (None,) * n,
    )


TWO = RuleOptions(players=2)
THREE = RuleOptions(players=3)
FOUR = RuleOptions(players=4)


# --------------------------------------------------------------------------- rules 3-4: dealing


@pytest.mark.parametrize("players", [2, 3, 4])
def test_r03_first_dealer_is_last_seat_and_seat_zero_leads(players):
    """Rule 3: the first dealer is seat n-1, so seat 0 leads and is first to play."""
    st = new_game(RuleOptions(players=players), seed=11)
    assert st.deal == 0
    assert st.dealer == players - 1
    assert st.leader == 0
    assert st.to_move == 0
    assert st.round == 1


@pytest.mark.parametrize("players", [2, 3, 4])
def test_r04_deal_four_table_cards_then_blocks_of_four_leader_first(players):
    """Rule 4: 4 table cards from the front, then a block of 4 to each player, leader first."""
    deck = shuffled_deck(100 + players)
    st = new_game(RuleOptions(players=players), decks=[deck])
    assert st.table_dealt == deck[:4]
    assert sorted(st.loose) == sorted(deck[:4])
    assert st.builds == ()
    for i in range(players):  # leader is seat 0 in the first deal
        assert sorted(st.hands[i]) == sorted(deck[4 + 4 * i : 8 + 4 * i]), f"seat {i}"
    assert tuple(st.stock) == deck[4 + 4 * players :]


def test_r04_sorted_deck_gives_known_hands():
    """Rule 4: with the canonical deck the table is the Aces and seat 0 gets the 2s, seat 1 the 3s."""
    deck = parse_deck((Path(__file__).resolve().parents[1] / "data" / "decks" / "sorted.txt").read_text())
    st = new_game(TWO, decks=[deck])
    assert st.loose == cards("AC AD AH AS")
    assert st.hands[0] == cards("2C 2D 2H 2S")
    assert st.hands[1] == cards("3C 3D 3H 3S")
    assert st.stock[:4] == cards("4C 4D 4H 4S")


@pytest.mark.parametrize("players,rounds", sorted(ROUNDS.items()))
def test_r04_rounds_per_deal_and_table_never_dealt_again(players, rounds):
    """Rule 4: 6/4/3 rounds for 2/3/4 players; each round deals 4 to each hand from the front, none to the table."""
    deck = shuffled_deck(200 + players)
    st = new_game(RuleOptions(players=players), decks=[deck])
    starts, _, _, settled = play_deal(st)
    assert len(starts) == rounds
    assert settled.plays == 48
    for r, s in enumerate(starts, start=1):
        assert s.round == r
        base = 4 + 4 * players * (r - 1)
        for i in range(players):
            seat = (s.leader + i) % players
            assert sorted(s.hands[seat]) == sorted(deck[base + 4 * i : base + 4 * i + 4]), f"round {r} seat {seat}"
        # the stock shrinks by exactly the hands: nothing was dealt to the table
        assert tuple(s.stock) == deck[base + 4 * players :]
        table = list(s.loose) + [c for b in s.builds for c in b.cards]
        in_piles = [c for p in s.piles for c in p]
        in_hands = [c for h in s.hands for c in h]
        assert sorted(table + in_piles + in_hands + list(s.stock)) == list(ALL_CARDS)


@pytest.mark.parametrize("players", [2, 3, 4])
def test_r03_every_round_led_by_leader_dealer_plays_last(players):
    """Rule 3: the seat after the dealer leads every round and the dealer plays last."""
    st = new_game(RuleOptions(players=players), seed=5 + players)
    starts, _, _, settled = play_deal(st)
    for s in starts:
        assert s.to_move == s.leader == (s.dealer + 1) % players
    seats = [e.seat for e in settled.history()]
    assert seats == [(settled.leader + i) % players for i in range(48)]
    # each round's last play is the dealer's
    per_round = 48 // ROUNDS[players]
    assert all(seats[k * per_round + per_round - 1] == settled.dealer for k in range(ROUNDS[players]))


@pytest.mark.parametrize("players", [2, 3, 4])
def test_r03_next_deal_dealt_by_next_seat_led_by_seat_after(players):
    """Rule 3: deal 2 is dealt by seat 0 and led by seat 1; deal 3 by seat 1, led by seat 2 (mod n)."""
    d0, d1 = shuffled_deck(300 + players), shuffled_deck(400 + players)
    st = new_game(RuleOptions(players=players), seed=9, decks=[d0, d1])
    while st.deal == 0:
        st = apply(st, first_legal(st))
    assert not st.is_over
    assert st.deal == 1
    assert st.dealer == 0
    assert st.leader == 1 % players
    assert st.to_move == 1 % players
    assert st.round == 1
    assert st.table_dealt == d1[:4]
    for i in range(players):
        seat = (1 + i) % players
        assert sorted(st.hands[seat]) == sorted(d1[4 + 4 * i : 8 + 4 * i]), f"seat {seat}"
    starts, _, _, settled = play_deal(st)
    assert all(s.to_move == 1 % players for s in starts)
    assert len(starts) == ROUNDS[players]
    third = next_deal_if_over(settled)
    assert not third.is_over
    assert third.deal == 2
    assert third.dealer == 1
    assert third.to_move == third.leader == 2 % players


# --------------------------------------------------------------------------- rule 12: residue, sweeps


def test_r12_residue_goes_to_last_capturer_not_a_sweep():
    """Rule 12: after a last-card trail the table goes to the last capturer's side, no sweep counted."""
    p0 = suit("C") + suit("D")
    p1 = rest_of_deck(p0, cards("5H 9H KH"))
    st = end_of_deal(TWO, to_move=1, dealer=1, hands={1: "5H"}, loose="9H KH", piles=[p0, p1],
                     last_capturer=0, sweeps=(1, 2))
    done = play(st, parse_move("5H trail"))
    assert done.deal_over
    assert sorted(done.piles[0]) == sorted(p0 + cards("5H 9H KH"))
    assert done.piles[1] == p1
    assert done.sweeps == (1, 2)
    assert done.loose == () and done.builds == ()
    sheet = done.sheets[-1]
    assert [s.cards for s in sheet.sides] == [29, 23]
    assert [s.net_sweeps for s in sheet.sides] == [0, 1]


def test_r12_last_card_capture_that_clears_table_is_a_sweep():
    """Rule 12/11: a last card that really captures everything on the table is a sweep."""
    p0 = suit("C") + suit("D")
    p1 = rest_of_deck(p0, cards("9S 9H"))
    st = end_of_deal(TWO, to_move=1, dealer=1, hands={1: "9S"}, loose="9H", piles=[p0, p1], last_capturer=0)
    done = play(st, parse_move("9S capture 9H"))
    assert done.deal_over
    assert done.sweeps == (0, 1)
    assert done.sheets[-1].sides[1].net_sweeps == 1
    assert sorted(done.piles[1]) == sorted(p1 + cards("9S 9H"))


def test_r12_last_card_capture_leaving_cards_takes_residue_without_sweep():
    """Rule 12: a last capture that leaves cards takes them as residue, and is not a sweep."""
    p0 = suit("C") + suit("D")
    p1 = rest_of_deck(p0, cards("9S 9H 3H"))
    st = end_of_deal(TWO, to_move=1, dealer=1, hands={1: "9S"}, loose="3H 9H", piles=[p0, p1], last_capturer=0)
    done = play(st, parse_move("9S capture 9H"))
    assert done.sweeps == (0, 0)
    assert sorted(done.piles[1]) == sorted(p1 + cards("9S 9H 3H"))
    assert done.piles[0] == p0


def test_r12_residue_goes_to_capturers_partnership_side():
    """Rule 12/2: with partners, the residue goes to the last capturer's team (seat 2 -> side 0)."""
    p0 = suit("C") + suit("D")
    p1 = rest_of_deck(p0, cards("4H 7H JH"))
    st = end_of_deal(FOUR, to_move=3, dealer=3, hands={3: "4H"}, loose="7H JH", piles=[p0, p1], last_capturer=2)
    done = play(st, parse_move("4H trail"))
    assert len(done.piles) == 2
    assert sorted(done.piles[0]) == sorted(p0 + cards("4H 7H JH"))
    assert done.sweeps == (0, 0)


def test_r12_residue_goes_to_last_capturer_with_three_players():
    """Rule 12: with 3 players the residue goes to the seat that captured last, not to the last player."""
    p0 = suit("C")
    p1 = suit("D")
    p2 = rest_of_deck(p0, p1, cards("4H 7H JH"))
    st = end_of_deal(THREE, to_move=2, dealer=2, hands={2: "4H"}, loose="7H JH", piles=[p0, p1, p2], last_capturer=1)
    done = play(st, parse_move("4H trail"))
    assert sorted(done.piles[1]) == sorted(p1 + cards("4H 7H JH"))
    assert done.piles[0] == p0 and done.piles[2] == p2
    assert done.sweeps == (0, 0, 0)


def _find_seeded_ending(want):  # type: ignore[no-untyped-def]
    """First seed in a fixed range whose first 2-player deal (first legal moves) ends as ``want`` says."""
    for seed in range(60):
        _, before, move, done = play_deal(new_game(TWO, seed=seed))
        if want(before, move, done):
            return before, move, done
    raise AssertionError("no seed in range(60) gives the wanted ending")


def test_r12_seeded_game_residue_after_last_trail():
    """Rule 12: in a played deal ending with a trail, the table goes to the last capturer, no sweep."""
    before, move, done = _find_seeded_ending(lambda b, m, d: m.kind.name == "TRAIL" and b.loose)
    side = TWO.side_of(before.last_capturer)
    residue = list(before.loose) + [c for b in before.builds for c in b.cards] + [move.card]
    assert sorted(done.piles[side]) == sorted(before.piles[side] + tuple(residue))
    assert done.piles[1 - side] == before.piles[1 - side]
    assert done.sweeps == before.sweeps
    assert sum(len(p) for p in done.piles) == 52


def test_r12_seeded_game_last_card_sweep_counts():
    """Rule 12: in a played deal whose last card captures the whole table, that is a sweep."""
    def clears(b, m, d):  # type: ignore[no-untyped-def]
        table = len(b.loose) + len(b.builds)
        return m.kind.name == "CAPTURE" and len(m.loose) + len(m.builds) == table

    before, move, done = _find_seeded_ending(clears)
    side = TWO.side_of(before.to_move)
    expected = list(before.sweeps)
    expected[side] += 1
    assert done.sweeps == tuple(expected)
    assert sum(len(p) for p in done.piles) == 52


# --------------------------------------------------------------------------- rule 13: score items


def test_r13_items_most_cards_spades_casinos_aces():
    """Rule 13: most cards 3, most spades 1, 10D 2, 2S 1, each Ace 1."""
    p0 = suit("C") + suit("D") + cards("AS 2S")  # 28 cards, 2 spades, 10D, 2S, 3 Aces
    p1 = rest_of_deck(p0)  # 24 cards, 11 spades, AH
    check_partition([p0, p1])
    sheet, result = score(TWO, [p0, p1])
    s0, s1 = sheet.sides
    assert (s0.cards, s1.cards) == (28, 24)
    assert (s0.spades, s1.spades) == (2, 11)
    assert s0.most_cards and not s1.most_cards
    assert s1.most_spades and not s0.most_spades
    assert s0.big_casino and s0.little_casino and not s1.big_casino and not s1.little_casino
    assert (s0.aces, s1.aces) == (3, 1)
    assert (s0.points, s1.points) == (3 + 2 + 1 + 3, 1 + 1)
    assert sheet.tied == ()
    assert sheet.scores_after == (9, 2)
    assert result is None


def test_r13_tie_for_cards_scores_nobody_two_sides():
    """Rule 13: 26-26 cards: nobody scores the 3 for cards; the deal is worth 8."""
    p0 = suit("C") + suit("D")
    p1 = suit("H") + suit("S")
    sheet, _ = score(TWO, [p0, p1])
    assert sheet.tied == ("cards",)
    assert not any(s.most_cards for s in sheet.sides)
    assert [s.points for s in sheet.sides] == [2 + 2, 1 + 1 + 2]
    assert sum(s.points for s in sheet.sides) == 11 - 3


def test_r13_ties_for_cards_and_spades_three_sides_and_net_sweeps():
    """Rule 13: 18/18/16 cards and 5/5/3 spades score nobody; sweeps 3,1,2 give net 2,0,1."""
    p0 = cards("AS 2S 3S 4S 5S") + suit("C")
    p1 = cards("6S 7S 8S 9S 10S") + suit("D")
    p2 = cards("JS QS KS") + suit("H")
    check_partition([p0, p1, p2])
    sheet, _ = score(THREE, [p0, p1, p2], sweeps=(3, 1, 2))
    assert [s.cards for s in sheet.sides] == [18, 18, 16]
    assert [s.spades for s in sheet.sides] == [5, 5, 3]
    assert set(sheet.tied) == {"cards", "spades"}
    assert not any(s.most_cards or s.most_spades for s in sheet.sides)
    assert [s.net_sweeps for s in sheet.sides] == [2, 0, 1]
    # side 0: 2S + AS + AC + 2 sweeps; side 1: 10D + AD; side 2: AH + 1 sweep
    assert [s.points for s in sheet.sides] == [1 + 2 + 2, 2 + 1, 1 + 1]
    assert sum(s.points for s in sheet.sides) == 11 + 3 - 3 - 1


def test_r13_three_sides_clear_leaders_score_cards_and_spades():
    """Rule 13: with 3 sides a strict leader for cards (3) and for spades (1) scores them."""
    p0 = suit("C") + suit("D", "2 3 4 5 6 7")  # 19 cards, no spades
    p1 = suit("S") + cards("8D 9D 10D")  # 16 cards, 13 spades
    p2 = rest_of_deck(p0, p1)  # 17 cards
    check_partition([p0, p1, p2])
    assert (len(p0), len(p1), len(p2)) == (19, 16, 17)
    sheet, _ = score(THREE, [p0, p1, p2])
    assert [s.most_cards for s in sheet.sides] == [True, False, False]
    assert [s.most_spades for s in sheet.sides] == [False, True, False]
    assert sheet.tied == ()


def test_r13_net_sweeps_two_sides():
    """Rule 13: net sweeps = own minus the fewest: sweeps 3,1 -> 2,0; equal sweeps cancel."""
    p0 = suit("C") + suit("D")
    p1 = suit("H") + suit("S")
    sheet, _ = score(TWO, [p0, p1], sweeps=(3, 1))
    assert [s.net_sweeps for s in sheet.sides] == [2, 0]
    assert [s.sweeps for s in sheet.sides] == [3, 1]
    assert [s.points for s in sheet.sides] == [4 + 2, 4]
    sheet, _ = score(TWO, [p0, p1], sweeps=(2, 2))
    assert [s.net_sweeps for s in sheet.sides] == [0, 0]


def test_r13_deal_worth_eleven_plus_net_sweeps_less_tied_items():
    """Rule 13: over many random splits, the deal's points = 11 + net sweeps - tied items."""
    rng = random.Random(1313)
    for trial in range(300):
        sides = 2 if trial % 2 else 3
        deck = list(ALL_CARDS)
        rng.shuffle(deck)
        cuts = sorted(rng.sample(range(1, 52), sides - 1))
        bounds = [0, *cuts, 52]
        piles = [tuple(deck[bounds[i] : bounds[i + 1]]) for i in range(sides)]
        sweeps = tuple(rng.randint(0, 4) for _ in range(sides))
        sheet, _ = score(RuleOptions(players=sides), piles, sweeps=sweeps)
        net = sum(s - min(sweeps) for s in sweeps)
        cards_count = [len(p) for p in piles]
        spades = [sum(1 for c in p if CODE[c].endswith("S")) for p in piles]
        tied_loss = 3 * (cards_count.count(max(cards_count)) > 1) + 1 * (spades.count(max(spades)) > 1)
        assert sum(s.points for s in sheet.sides) == 11 + net - tied_loss, (piles, sweeps)


def test_r13_partnership_piles_score_per_side():
    """Rule 13/2: four players in partnerships score as two sides, seats 0+2 and 1+3."""
    p0 = suit("C") + suit("D") + cards("AS 2S")
    p1 = rest_of_deck(p0)
    sheet, _ = score(FOUR, [p0, p1])
    assert len(sheet.sides) == 2
    assert [s.points for s in sheet.sides] == [9, 2]
    assert FOUR.sides == 2 and [FOUR.side_of(s) for s in range(4)] == [0, 1, 0, 1]
    solo = RuleOptions(players=4, partnerships=False)
    assert solo.sides == 4 and [solo.side_of(s) for s in range(4)] == [0, 1, 2, 3]


def test_r13_partners_captures_go_to_one_pile_in_play():
    """Rule 13/2: in a played 4-player deal every capture by seat s lands in pile s % 2."""
    st = new_game(FOUR, seed=21)
    assert len(st.piles) == 2
    captures = 0
    while True:
        move = first_legal(st)
        after = play(st, move)
        if move.kind.name == "CAPTURE":
            captures += 1
            side = st.to_move % 2
            taken = 1 + len(move.loose) + sum(len(b.cards) for b in st.builds if b.id in move.builds)
            if not after.deal_over:  # (at the deal's end the residue is added too, rule 12)
                assert after.piles[side] == st.piles[side] + after.piles[side][len(st.piles[side]):]
                assert len(after.piles[side]) == len(st.piles[side]) + taken
                assert after.piles[1 - side] == st.piles[1 - side]
        if after.deal_over:
            break
        st = after
    assert captures > 0
    assert len(after.sheets[-1].sides) == 2
    assert sum(s.cards for s in after.sheets[-1].sides) == 52


# --------------------------------------------------------------------------- rules 14-15: restricted sides


def test_r15_condition_for_scores_and_on_twenty_option():
    """Rule 15: 18 -> most cards, 19 -> Big Casino, 20 -> Little Casino (option: most spades)."""
    assert [TWO.condition_for(s) for s in (0, 17, 18, 19, 20, 21)] == [
        None, None, Condition.MOST_CARDS, Condition.BIG_CASINO, Condition.LITTLE_CASINO, None]
    pagat = RuleOptions(on_twenty=Condition.MOST_SPADES)
    assert pagat.condition_for(20) == Condition.MOST_SPADES
    assert pagat.condition_for(19) == Condition.BIG_CASINO


def test_r14_sides_start_at_zero_unrestricted():
    """Rule 14: every side starts the game on 0 with no restriction."""
    for n in (2, 3, 4):
        st = new_game(RuleOptions(players=n), seed=3)
        assert st.scores == (0,) * RuleOptions(players=n).sides
        assert all(r is None for r in st.restricted)
        assert st.continuation is False


def test_r15_deal_starting_on_18_19_20_is_restricted():
    """Rule 15: a deal starting with sides on 18/19/20 restricts them accordingly."""
    st = deal_new(options=THREE, decks=DeckSource(seed=4), deal=3, scores=(18, 19, 20),
                  continuation=False, sheets=(), log=None)
    assert st.restricted == (Condition.MOST_CARDS, Condition.BIG_CASINO, Condition.LITTLE_CASINO)
    st = deal_new(options=RuleOptions(on_twenty=Condition.MOST_SPADES), decks=DeckSource(seed=4), deal=2,
                  scores=(20, 17), continuation=False, sheets=(), log=None)
    assert st.restricted == (Condition.MOST_SPADES, None)


def _b_big_pile():  # type: ignore[no-untyped-def]
    """Side 0: 27 cards, no Ace, no casino, 4 spades; side 1: 25 cards with all Aces, 10D, 2S and 9 spades."""
    p1 = suit("S", "A 2 3 4 5 6 7 8 9") + cards("AC AD AH 10D") + suit("H", "2 3 4 5 6 7 8 9 10 J Q K")
    p0 = rest_of_deck(p1)
    check_partition([p0, p1])
    assert (len(p0), len(p1)) == (27, 25)
    return p0, p1


def test_r15_on_18_most_cards_met_wins_even_if_other_passes_21():
    """Rule 15: on 18 taking most cards wins at once, though the other side passes 21 with more points."""
    p0, p1 = _b_big_pile()
    sheet, result = score(TWO, [p0, p1], scores=(18, 17), restricted=(Condition.MOST_CARDS, None),
                          certain_at=(40, None))
    assert sheet.sides[0].condition_met is True
    assert sheet.sides[1].points == 1 + 2 + 1 + 4  # spades, 10D, 2S, four Aces
    assert sheet.scores_after == (21, 25)
    assert sheet.condition_winner == 0
    assert result is not None and result.winner == 0 and result.reason == EndReason.CONDITION_MET
    assert result.deals == 1


def test_r15_on_19_big_casino_met_wins_at_once():
    """Rule 15: on 19 taking Big Casino wins at once, whatever the other side scores."""
    p1 = cards("10D") + suit("C")  # 14 cards, Big Casino
    p0 = rest_of_deck(p1)  # 38 cards: most cards, spades, 2S, 3 Aces: 8 points
    sheet, result = score(TWO, [p1, p0], scores=(19, 16), restricted=(Condition.BIG_CASINO, None),
                          certain_at=(12, None))
    assert sheet.sides[1].points == 8
    assert sheet.scores_after[1] == 24 > sheet.scores_after[0]
    assert result.winner == 0 and result.reason == EndReason.CONDITION_MET


def test_r15_on_20_little_casino_met_wins_at_once():
    """Rule 15: on 20 taking Little Casino (2S) wins at once."""
    p0 = cards("2S 3C")
    p1 = rest_of_deck(p0)
    sheet, result = score(TWO, [p0, p1], scores=(20, 20),
                          restricted=(Condition.LITTLE_CASINO, Condition.LITTLE_CASINO), certain_at=(7, None))
    assert [s.condition_met for s in sheet.sides] == [True, False]
    assert sheet.sides[1].points == 0
    assert result.winner == 0 and result.reason == EndReason.CONDITION_MET


def test_r15_on_20_most_spades_option_met_and_missed():
    """Rule 15 option: on 20 with on_twenty=most_spades, most spades wins; Little Casino alone does not."""
    pagat = RuleOptions(on_twenty=Condition.MOST_SPADES)
    p0 = suit("S", "3 4 5 6 7 8 9")  # 7 spades, no 2S
    p1 = rest_of_deck(p0)  # 6 spades incl. 2S
    sheet, result = score(pagat, [p0, p1], scores=(20, 3), restricted=(Condition.MOST_SPADES, None),
                          certain_at=(30, None))
    assert sheet.sides[0].most_spades and sheet.sides[0].condition_met
    assert result.winner == 0 and result.reason == EndReason.CONDITION_MET
    # swapped piles: the side on 20 takes 2S but not most spades -> missed under the option
    sheet, result = score(pagat, [p1, p0], scores=(20, 3), restricted=(Condition.MOST_SPADES, None))
    assert sheet.sides[0].little_casino and not sheet.sides[0].most_spades
    assert sheet.sides[0].condition_met is False
    assert sheet.sides[0].points == 0
    assert sheet.scores_after[0] == 20
    assert result is None


def test_r15_missed_condition_scores_nothing_but_sweeps_still_cancel():
    """Rule 15: a side on 19 without Big Casino scores 0; its 2 sweeps still cancel 2 of the other's 3."""
    p0 = suit("C") + suit("D", "A 2 3 4 5 6 7 8 9 J Q K") + suit("S", "A")  # 27 cards, no 10D
    p1 = rest_of_deck(p0)
    sheet, result = score(TWO, [p0, p1], sweeps=(2, 3), scores=(19, 5), restricted=(Condition.BIG_CASINO, None))
    s0, s1 = sheet.sides
    assert s0.condition_met is False
    assert s0.raw_points > 0 and s0.points == 0
    assert (s0.net_sweeps, s1.net_sweeps) == (0, 1)
    # side 1: spades 1 + 10D 2 + 2S 1 + AH 1 + one net sweep
    assert s1.points == 6
    assert sheet.scores_after == (19, 11)
    assert result is None


def test_r15_rules_example_a_on_19_b_on_15():
    """Rule 15 example: A on 19 misses Big Casino and stays on 19; B scores 6, reaches 21 and wins."""
    a = cards("AC AD") + suit("C", "2 3 4 5 6 7 8 9 10 J Q K") + suit("D", "2 3 4 5 6 7 8 9 J Q K") + cards("2H 3H")
    b = rest_of_deck(a)
    check_partition([a, b])
    assert (len(a), len(b)) == (27, 25)
    sheet, result = score(TWO, [a, b], sweeps=(2, 0), scores=(19, 15), restricted=(Condition.BIG_CASINO, None))
    sa, sb = sheet.sides
    assert sa.most_cards and sa.aces == 2 and sa.net_sweeps == 2
    assert sa.raw_points == 7 and sa.points == 0 and sa.condition_met is False
    assert sb.most_spades and sb.big_casino and sb.little_casino and sb.aces == 2
    assert sb.points == 6
    assert sheet.scores_after == (19, 21)
    assert result is not None and result.winner == 1 and result.reason == EndReason.TARGET_REACHED


def test_r15_played_big_casino_capture_marks_condition_and_wins():
    """Rule 15: in play, a side on 19 capturing 10D with the deal's last card wins the game."""
    p0 = suit("C")
    p1 = rest_of_deck(p0, cards("10D 10S 4H"))
    st = end_of_deal(TWO, to_move=1, dealer=1, hands={1: "10S"}, loose="4H 10D", piles=[p0, p1], scores=(3, 19),
                     last_capturer=0, plays=47)
    assert st.restricted == (None, Condition.BIG_CASINO)
    done = apply(st, "10S capture 10D")
    assert done.certain_at == (None, 48)
    assert done.is_over
    assert done.result.winner == 1 and done.result.reason == EndReason.CONDITION_MET
    with pytest.raises(GameOverError):
        apply(done, "10S trail")


def test_r15_three_players_most_cards_certain_through_others_capture():
    """Rule 15: side on 18 ending with most cards (25/14/13) has met its condition though a rival's capture made it certain."""
    # Side 0 on 18 holds 25 cards, side 1 14, side 2 1; 12 left. Seat 2 (last to play) captures
    # KD with KS: from then on side 0 is certain of most cards (25 > 14 + 10) and it ends with
    # 25 against 14 and 13 (side 2 takes the 10-card residue).
    p0 = suit("C") + suit("D", "A 2 3 4 5 6 7 8 9 10 J Q")  # 25 cards
    p1 = suit("H", "A 2 3 4 5 6 7 8 9 10 J Q") + cards("KH 2S")  # 14 cards
    p2 = cards("AS")  # 1 card
    loose = "3S 4S 5S 6S 7S 8S 9S 10S JS QS KD"  # 11 loose cards
    st = end_of_deal(THREE, to_move=2, dealer=2, hands={2: "KS"}, loose=loose, piles=[p0, p1, p2],
                     scores=(18, 0, 0), last_capturer=1, plays=47)
    assert st.restricted == (Condition.MOST_CARDS, None, None)
    assert not condition_certain(Condition.MOST_CARDS, 0, st.piles)
    assert parse_move("KS capture KD") in legal_moves(st)
    done = play(st, parse_move("KS capture KD"))
    assert [len(p) for p in done.piles] == [25, 14, 13]
    assert condition_certain(Condition.MOST_CARDS, 0, done.piles)
    sheet = done.sheets[-1]
    assert sheet.sides[0].most_cards
    assert sheet.sides[0].condition_met is True
    assert done.result is not None
    assert done.result.winner == 0 and done.result.reason == EndReason.CONDITION_MET


# --------------------------------------------------------------------------- rule 16: two restricted sides


@pytest.mark.parametrize("first,second,winner", [(10, 20, 0), (20, 10, 1)])
def test_r16_two_conditions_met_first_certain_wins(first, second, winner):
    """Rule 16: both restricted sides meet their conditions; the one certain first (certain_at) wins."""
    p0 = cards("10D 3C")
    p1 = rest_of_deck(p0)  # holds 2S
    sheet, result = score(TWO, [p0, p1], scores=(19, 20), restricted=(Condition.BIG_CASINO, Condition.LITTLE_CASINO),
                          certain_at=(first, second))
    assert [s.condition_met for s in sheet.sides] == [True, True]
    assert sheet.condition_winner == winner
    assert result.winner == winner and result.reason == EndReason.CONDITION_MET


@pytest.mark.parametrize("order", ["side0_first", "side1_first"])
def test_r16_played_two_conditions_met_in_playing_order(order):
    """Rule 16: in play, side on 19 takes 10D and side on 20 takes 2S; whoever captured first wins."""
    p0 = suit("C", "A 3 4 5 6 7 8 9 10 J Q K")
    p1 = rest_of_deck(p0, cards("10S 10D 2C 2S"))
    if order == "side0_first":
        to_move, dealer, moves, winner = 0, 1, ["10S capture 10D", "2C capture 2S"], 0
    else:
        to_move, dealer, moves, winner = 1, 0, ["2C capture 2S", "10S capture 10D"], 1
    st = end_of_deal(TWO, to_move=to_move, dealer=dealer, hands={0: "10S", 1: "2C"}, loose="2S 10D",
                     piles=[p0, p1], scores=(19, 20), plays=46)
    assert st.restricted == (Condition.BIG_CASINO, Condition.LITTLE_CASINO)
    for m in moves:
        st = apply(st, m)
    assert st.is_over
    first_side = winner
    assert st.certain_at[first_side] == 47 and st.certain_at[1 - first_side] == 48
    assert st.result.winner == winner and st.result.reason == EndReason.CONDITION_MET
    # the last card cleared the table: a real sweep for the side that played it
    assert st.sweeps[1 - first_side] == 1


def test_r16_three_players_most_cards_certain_first_beats_later_big_casino():
    """Rule 16: side on 18 certain of most cards (via a rival's capture) before side on 19 takes 10D wins."""
    # 25 / 14 / 1 cards, 12 left; order seat 2, 0, 1 (dealer 1). Seat 2's KS takes 4S+9S (play 46):
    # side 0 is now certain of most cards (25 > 14 + 9). Seat 0 trails, seat 1 takes 10D (play 48)
    # and the residue. Final 25 / 23 / 4: both conditions met, side 0's became certain first.
    p0 = suit("C") + suit("D", "A 2 3 4 5 6 7 8 9 J Q K")  # 25 cards
    p1 = suit("H") + cards("AS")  # 14 cards
    p2 = cards("2S")  # 1 card
    st = end_of_deal(THREE, to_move=2, dealer=1, hands={2: "KS", 0: "3S", 1: "10S"},
                     loose="4S 5S 6S 7S 8S 9S JS QS 10D", piles=[p0, p1, p2], scores=(18, 19, 0),
                     last_capturer=0, plays=45)
    assert st.restricted == (Condition.MOST_CARDS, Condition.BIG_CASINO, None)
    for text in ("KS capture 4S 9S", "3S trail"):
        assert parse_move(text) in legal_moves(st)
        st = play(st, parse_move(text))
    assert condition_certain(Condition.MOST_CARDS, 0, st.piles)
    assert parse_move("10S capture 10D") in legal_moves(st)
    done = play(st, parse_move("10S capture 10D"))
    assert done.deal_over
    assert [len(p) for p in done.piles] == [25, 23, 4]
    assert done.certain_at[1] == 48
    sheet = done.sheets[-1]
    assert sheet.sides[0].most_cards and sheet.sides[1].big_casino
    assert sheet.sides[0].condition_met is True
    assert sheet.condition_winner == 0
    assert done.result is not None and done.result.winner == 0
    assert done.result.reason == EndReason.CONDITION_MET


def test_r16_condition_certain_most_cards_two_sides():
    """Rule 16: most cards is certain for 2 sides only when the other cannot catch up even with every card left."""
    mc = Condition.MOST_CARDS
    deck = list(ALL_CARDS)
    assert condition_certain(mc, 0, [deck[:27], []])  # 27 > 0 + 25
    assert not condition_certain(mc, 0, [deck[:26], []])  # 26 left could tie
    assert not condition_certain(mc, 0, [deck[:20], deck[20:26]])  # 20 <= 6 + 26
    assert condition_certain(mc, 0, [deck[:27], deck[27:52]])
    assert not condition_certain(mc, 1, [deck[:27], deck[27:52]])
    assert not condition_certain(mc, 0, [deck[:26], deck[26:52]])  # a 26-26 tie is not "most"


def test_r16_condition_certain_most_cards_three_sides():
    """Rule 16: with 3 sides, most cards is certain only when no other side could still catch up."""
    mc = Condition.MOST_CARDS
    deck = list(ALL_CARDS)
    a, b, c = deck[:25], deck[25:39], deck[39:40]  # 25 / 14 / 1, 12 left
    assert not condition_certain(mc, 0, [a, b, c])  # side 1 could reach 26
    c2 = deck[39:42]  # side 2 captured 2 more: 25 / 14 / 3, 10 left
    assert condition_certain(mc, 0, [a, b, c2])
    assert not condition_certain(mc, 0, [deck[:20], deck[20:21], deck[21:22]])  # 20 <= 1 + 30
    assert condition_certain(mc, 0, [deck[:18], deck[18:35], deck[35:52]])  # nothing left, 18 > 17
    assert not condition_certain(mc, 0, [deck[:18], deck[18:36], deck[36:52]])  # 18-18 tie


def test_r16_condition_certain_spades_and_casinos():
    """Rule 16: most spades certain when no rival can catch up; a casino is certain once captured."""
    spades = list(suit("S"))
    assert condition_certain(Condition.MOST_SPADES, 0, [spades[:7], []])
    assert not condition_certain(Condition.MOST_SPADES, 0, [spades[:6], []])
    assert condition_certain(Condition.BIG_CASINO, 1, [[], cards("10D")])
    assert not condition_certain(Condition.BIG_CASINO, 0, [[], cards("10D")])
    assert condition_certain(Condition.LITTLE_CASINO, 0, [cards("2S"), []])


# --------------------------------------------------------------------------- rule 17: reaching 21


def test_r17_one_side_alone_on_top_at_21_wins():
    """Rule 17: one side alone at the top at 21 or more wins, even if another side also passed 21."""
    p0 = suit("C") + suit("D") + cards("AS 2S")  # 9 points
    p1 = rest_of_deck(p0)  # 2 points
    sheet, result = score(TWO, [p0, p1], scores=(14, 20), restricted=(None, None))
    assert sheet.scores_after == (23, 22)
    assert result.winner == 0 and result.reason == EndReason.TARGET_REACHED
    sheet, result = score(TWO, [p0, p1], scores=(10, 10))
    assert sheet.scores_after == (19, 12) and result is None


def test_r17_three_sides_single_top_scorer_at_21_wins():
    """Rule 17: with 3 sides the single highest score at 21 or more wins."""
    p0 = cards("AS 2S 3S 4S 5S") + suit("C")  # 5 points with sweeps (3,1,2)
    p1 = cards("6S 7S 8S 9S 10S") + suit("D")  # 3 points
    p2 = cards("JS QS KS") + suit("H")  # 2 points
    sheet, result = score(THREE, [p0, p1, p2], sweeps=(3, 1, 2), scores=(12, 17, 19), restricted=(None, None, None))
    assert sheet.scores_after == (17, 20, 21)
    assert result.winner == 2 and result.reason == EndReason.TARGET_REACHED


def test_r17_tie_at_top_at_21_continues_without_restrictions():
    """Rule 17: two sides tied at the top at 21 or more play on; continuation_after says so."""
    assert continuation_after((21, 21))
    assert continuation_after((23, 23, 10))
    assert continuation_after((25, 25, 22))
    assert not continuation_after((22, 21))
    assert not continuation_after((20, 20))
    assert not continuation_after((21, 21, 25))
    assert not continuation_after((0, 0))
    p0 = suit("C") + suit("D")
    p1 = suit("H") + suit("S")
    sheet, result = score(TWO, [p0, p1], scores=(17, 17))
    assert sheet.scores_after == (21, 21)
    assert result is None


def test_r17_played_tie_at_21_next_deal_unrestricted_continuation():
    """Rule 17: a played deal ending 21-21 deals on with continuation set and no restrictions."""
    p0 = suit("C") + suit("D")
    p1 = rest_of_deck(p0, cards("9S 9H 3H"))
    st = end_of_deal(TWO, to_move=1, dealer=1, hands={1: "9S"}, loose="3H 9H", piles=[p0, p1], scores=(17, 17),
                     last_capturer=0)
    nxt = apply(st, "9S capture 9H")
    assert not nxt.is_over
    assert nxt.sheets[-1].scores_after == (21, 21)
    assert nxt.deal == 1
    assert nxt.scores == (21, 21)
    assert nxt.continuation is True
    assert nxt.restricted == (None, None)


def test_r17_continuation_stays_unrestricted_until_one_side_ahead():
    """Rule 17: once in continuation, deals stay unrestricted even on 18-20, and a side ahead at 21+ wins."""
    st = deal_new(options=THREE, decks=DeckSource(seed=8), deal=5, scores=(22, 22, 20), continuation=True,
                  sheets=(), log=None)
    assert st.restricted == (None, None, None)
    p0 = suit("C") + suit("D") + cards("AS 2S")
    p1 = suit("H")
    p2 = rest_of_deck(p0, p1)
    sheet, result = score(THREE, [p0, p1, p2], scores=(22, 22, 20), restricted=(None, None, None))
    assert result.winner == 0 and result.reason == EndReason.TARGET_REACHED


# --------------------------------------------------------------------------- rule 18: maximum deals


def test_r18_max_deals_one_ends_game_after_one_deal():
    """Rule 18: with max_deals=1 a seeded game ends after its first deal; highest score wins."""
    st = new_game(RuleOptions(max_deals=1), seed=17)
    st = play_game(st)
    assert st.deal == 0
    assert len(st.sheets) == 1
    assert st.result.reason == EndReason.MAX_DEALS
    assert st.result.deals == 1
    a, b = st.result.scores
    assert st.result.scores == st.sheets[0].scores_after
    assert st.result.winner == (None if a == b else (0 if a > b else 1))
    with pytest.raises(GameOverError):
        apply(st, "AC trail")


def test_r18_max_deals_tie_is_a_draw():
    """Rule 18: at the maximum deals a tie at the top is a draw (winner None)."""
    p0 = suit("C") + suit("D")
    p1 = suit("H") + suit("S")
    sheet, result = score(RuleOptions(max_deals=3), [p0, p1], scores=(5, 5), deal=2)
    assert sheet.scores_after == (9, 9)
    assert result is not None and result.winner is None and result.is_draw
    assert result.reason == EndReason.MAX_DEALS and result.deals == 3
    # a tie at 21+ on the last deal is also a draw, not a continuation
    sheet, result = score(RuleOptions(max_deals=3), [p0, p1], scores=(17, 17), deal=2)
    assert result.winner is None and result.reason == EndReason.MAX_DEALS


def test_r18_max_deals_highest_wins_and_not_before_the_limit():
    """Rule 18: at the limit the highest score wins; before it the game goes on."""
    p0 = suit("C") + suit("D") + cards("AS 2S")
    p1 = rest_of_deck(p0)
    _, result = score(RuleOptions(max_deals=3), [p0, p1], scores=(0, 10), deal=2)
    assert result.winner == 1 and result.reason == EndReason.MAX_DEALS  # 9 vs 12
    _, result = score(RuleOptions(max_deals=3), [p0, p1], scores=(0, 10), deal=1)
    assert result is None
    # reaching 21 alone on the last deal is an ordinary target win
    _, result = score(RuleOptions(max_deals=3), [p0, p1], scores=(15, 0), deal=2)
    assert result.winner == 0 and result.reason == EndReason.TARGET_REACHED


def test_r18_default_max_deals_is_30():
    """Rule 18: the default maximum is 30 deals."""
    assert RuleOptions().max_deals == 30


# --------------------------------------------------------------------------- determinism, deck sources


def test_r04_same_seed_same_decks_and_same_game():
    """Rules 3-4: the same seed deals the same decks and, with the same plays, the same game."""
    a, b = DeckSource(seed=42), DeckSource(seed=42)
    assert [a.deck(k) for k in range(5)] == [b.deck(k) for k in range(5)]
    assert a.deck(0) != a.deck(1)
    assert DeckSource(seed=43).deck(0) != a.deck(0)
    assert sorted(a.deck(3)) == list(ALL_CARDS)
    g1 = play_game(new_game(THREE, seed=42))
    g2 = play_game(new_game(THREE, seed=42))
    assert [str(e.move) for e in g1.history()] == [str(e.move) for e in g2.history()]
    assert [s.to_dict() for s in g1.sheets] == [s.to_dict() for s in g2.sheets]
    assert g1.result == g2.result


def test_r04_deck_source_explicit_first_then_seed():
    """Rules 3-4: explicit decks are used first, then the seed's shuffles in order."""
    d0 = shuffled_deck(1)
    mixed = DeckSource(seed=7, decks=[d0])
    plain = DeckSource(seed=7)
    assert mixed.deck(0) == d0
    assert mixed.deck(1) == plain.deck(0)
    assert mixed.deck(2) == plain.deck(1)
    st = new_game(TWO, seed=7, decks=[d0])
    assert st.table_dealt == d0[:4]


def test_r04_explicit_decks_exhausted_without_seed_raises():
    """Rules 3-4: a game from explicit decks and no seed cannot deal past its last deck."""
    d0 = shuffled_deck(2)
    src = DeckSource(decks=[d0])
    assert src.deck(0) == d0
    with pytest.raises(DecksExhaustedError):
        src.deck(1)
    st = new_game(TWO, decks=[d0])
    _, before, move, _ = play_deal(st)
    with pytest.raises(DecksExhaustedError):
        apply(before, move)


# --------------------------------------------------------------------------- game records


@pytest.fixture(scope="module")
def finished_game():  # type: ignore[no-untyped-def]
    return play_game(new_game(TWO, seed=2024))


def test_record_game_record_json_round_trip_replays_identically(finished_game):
    """Rules 12-18: a finished game's record survives JSON and replays to the same sheets and result."""
    record = game_record(finished_game)
    text = json.dumps(record)
    loaded = json.loads(text)
    assert loaded == record
    replayed = replay_record(loaded)
    assert replayed.result == finished_game.result
    assert [s.to_dict() for s in replayed.sheets] == [s.to_dict() for s in finished_game.sheets]
    assert [str(e.move) for e in replayed.history()] == [str(e.move) for e in finished_game.history()]
    assert game_record(replayed) == record
    assert len(record["deals"]) == finished_game.result.deals
    assert [d["dealer"] for d in record["deals"]] == [(1 + k) % 2 for k in range(len(record["deals"]))]


def test_record_game_record_unfinished_and_explicit_decks_round_trip():
    """Rules 3-4: records of explicit-deck games and unfinished games replay to the same state."""
    decks = [shuffled_deck(500 + k) for k in range(12)]
    st = new_game(THREE, decks=decks)
    for _ in range(70):  # into the second deal
        st = apply(st, first_legal(st))
    record = json.loads(json.dumps(game_record(st)))
    assert record["seed"] is None and record["result"] is None
    replayed = replay_record(record)
    assert replayed.deal == st.deal and replayed.plays == st.plays
    assert replayed.hands == st.hands and replayed.loose == st.loose and replayed.scores == st.scores
    done = play_game(new_game(THREE, decks=decks))
    assert replay_record(json.loads(json.dumps(game_record(done)))).result == done.result


def _tampered(record, change):  # type: ignore[no-untyped-def]
    rec = copy.deepcopy(record)
    change(rec)
    return rec


def test_record_tampered_record_changed_move_rejected(finished_game):
    """Records: replacing a move with another legal play makes the replay fail."""
    record = game_record(finished_game)
    st = new_game(TWO, seed=2024)
    original = parse_move(record["deals"][0]["moves"][0])
    other = next(m for m in legal_moves(st) if m.card != original.card)
    bad = _tampered(record, lambda r: r["deals"][0]["moves"].__setitem__(0, str(other)))
    with pytest.raises(InvalidRecordError):
        replay_record(bad)
    bad = _tampered(record, lambda r: r["deals"][0]["moves"].__setitem__(0, "XX trail"))
    with pytest.raises(InvalidRecordError):
        replay_record(bad)


def test_record_tampered_record_changed_sheet_rejected(finished_game):
    """Records: a score sheet that does not match the replay is rejected."""
    record = game_record(finished_game)

    def change(r):  # type: ignore[no-untyped-def]
        r["deals"][0]["sheet"]["scores_after"][0] += 1

    with pytest.raises(InvalidRecordError):
        replay_record(_tampered(record, change))

    def change_aces(r):  # type: ignore[no-untyped-def]
        r["deals"][0]["sheet"]["sides"][1]["aces"] += 1

    with pytest.raises(InvalidRecordError):
        replay_record(_tampered(record, change_aces))


def test_record_tampered_record_changed_result_rejected(finished_game):
    """Records: a result that does not match the replay is rejected."""
    record = game_record(finished_game)

    def change(r):  # type: ignore[no-untyped-def]
        r["result"]["winner"] = 1 - r["result"]["winner"]

    with pytest.raises(InvalidRecordError):
        replay_record(_tampered(record, change))

    def change_reason(r):  # type: ignore[no-untyped-def]
        r["result"]["reason"] = "max_deals"

    with pytest.raises(InvalidRecordError):
        replay_record(_tampered(record, change_reason))


def test_record_tampered_record_changed_deck_rejected(finished_game):
    """Records: a deck that is not the seed's (or does not fit the moves) is rejected."""
    record = game_record(finished_game)

    def swap(r):  # type: ignore[no-untyped-def]
        codes = r["deals"][0]["deck"].split()
        codes[0], codes[-1] = codes[-1], codes[0]
        r["deals"][0]["deck"] = " ".join(codes)

    with pytest.raises(InvalidRecordError):
        replay_record(_tampered(record, swap))
    # explicit-deck game: a swapped deck no longer fits the recorded moves
    decks = [shuffled_deck(600 + k) for k in range(12)]
    done = play_game(new_game(TWO, decks=decks))
    rec = game_record(done)
    with pytest.raises(InvalidRecordError):
        replay_record(_tampered(rec, swap))
    with pytest.raises(InvalidRecordError):
        replay_record(_tampered(rec, lambda r: r["deals"][0].__setitem__("deck", "AC AD")))
    with pytest.raises(InvalidRecordError):
        replay_record(_tampered(rec, lambda r: r.pop("deals")))


def test_r16_one_play_makes_two_conditions_certain_the_player_who_made_it_wins():
    """Rule 16 (interpretation): when one play makes two conditions certain at once, the side
    that made the play wins, then playing order. Seat 1 takes 10D (its own condition) and the
    residue, which also leaves too few cards for side 2 to catch side 0's most cards."""
    in_play = cards("10S") + cards("10D 4C 6C 2H 3H 5H 7H 8H 9H JH QH KH AH")
    rest = [c for c in ALL_CARDS if c not in in_play]
    p0, p1, p2 = tuple(rest[:23]), tuple(rest[23:27]), tuple(rest[27:])
    st = end_of_deal(THREE, to_move=1, dealer=2, hands={1: "10S"},
                     loose="10D 4C 6C 2H 3H 5H 7H 8H 9H JH QH KH AH", piles=[p0, p1, p2],
                     scores=(18, 19, 0), last_capturer=2, plays=47)
    assert not condition_certain(Condition.MOST_CARDS, 0, st.piles)  # 23 is not > 11 + 14
    move = parse_move("10S capture 10D 4C 6C")
    assert move in legal_moves(st)
    done = play(st, move)
    assert done.certain_at == (48, 48, None)
    sheet = done.sheets[-1]
    assert sheet.sides[0].condition_met and sheet.sides[1].condition_met
    assert sheet.condition_winner == 1
    assert done.result is not None and done.result.winner == 1
