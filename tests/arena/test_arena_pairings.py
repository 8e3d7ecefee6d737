"""Tournament pairings and game order (arena.pairings).

* pairings(): C(n,2) / C(n,3) combinations, 3 * C(n,4) team splits; rotations keep teams.
* round_robin()/schedule(): every pairing plays its games; seats balanced overall and per
  pairing; duplicate sets give every bot of a pairing every seat of each deck seed; the r-th
  set of every pairing shares a deck seed; numbering; the prefix-balance bound of the order;
  determinism, seed sensitivity, offsets, and the ValueError cases.
* ladder_pairings(): an uncertain newcomer's pairings come first, every bot gets its quota,
  and a three-bot case worked out by hand from the TrueSkill quality formula.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from itertools import groupby

import pytest
import trueskill

from arena.schedule.pairings import (
    ScheduledGame,
    deck_seed,
    ladder_pairings,
    pairings,
    rotations,
    round_robin,
    schedule,
    set_size,
)

# (players, n_bots): the minimum, a few more, and 6 for every seat count.
CONFIGS = [(2, 2), (2, 3), (2, 5), (2, 6), (3, 3), (3, 4), (3, 6), (4, 4), (4, 5), (4, 6)]
SEED = 20240601


def expected_pairings(n: int, players: int) -> int:
    return 3 * math.comb(n, 4) if players == 4 else math.comb(n, players)


def games_per_pairing_for(players: int) -> int:
    """Two full rotations: a multiple of the set size with or without duplicate deals."""
    return 2 * players


def per_bot_counts(games: list[ScheduledGame]) -> Counter[int]:
    return Counter(bot for game in games for bot in game.seat_bots)


@pytest.mark.parametrize("players,n", CONFIGS + [(2, 1), (3, 2), (4, 3)])
def test_number_of_pairings(players: int, n: int) -> None:
    groups = pairings(n, players)
    assert len(groups) == expected_pairings(n, players)
    assert len(set(groups)) == len(groups)
    for group in groups:
        assert len(group) == players and len(set(group)) == players
        assert all(0 <= bot < n for bot in group)


@pytest.mark.parametrize("n", [4, 5, 6])
def test_four_player_pairings_are_the_three_splits_of_each_combination(n: int) -> None:
    splits = defaultdict(set)
    for a, b, c, d in pairings(n, 4):
        teams = frozenset({frozenset({a, c}), frozenset({b, d})})
        splits[frozenset({a, b, c, d})].add(teams)
    assert len(splits) == math.comb(n, 4)
    assert all(len(teams) == 3 for teams in splits.values())
    assert pairings(4, 4) == [(0, 2, 1, 3), (0, 1, 2, 3), (0, 1, 3, 2)]


@pytest.mark.parametrize("pairing", [(3, 7), (1, 4, 2), (0, 1, 2, 3), (5, 2, 9, 4)])
def test_rotations_seat_every_bot_everywhere_and_keep_teams(pairing: tuple[int, ...]) -> None:
    arrangements = rotations(pairing)
    assert arrangements[0] == pairing and len(arrangements) == len(pairing)
    for seat in range(len(pairing)):
        assert sorted(arr[seat] for arr in arrangements) == sorted(pairing)
    if len(pairing) == 4:
        teams = {frozenset({pairing[0], pairing[2]}), frozenset({pairing[1], pairing[3]})}
        for arr in arrangements:
            assert {frozenset({arr[0], arr[2]}), frozenset({arr[1], arr[3]})} == teams


@pytest.mark.parametrize("duplicate", [False, True])
@pytest.mark.parametrize("players,n", CONFIGS)
def test_every_pairing_plays_its_games_with_balanced_seats(players: int, n: int, duplicate: bool) -> None:
    gpp = games_per_pairing_for(players)
    games = round_robin(n, players, gpp, duplicate, SEED)
    groups = pairings(n, players)
    assert len(games) == len(groups) * gpp
    by_pairing: dict[tuple[int, ...], list[ScheduledGame]] = defaultdict(list)
    for game in games:
        assert sorted(game.seat_bots) == sorted(game.pairing)
        by_pairing[game.pairing].append(game)
    assert set(by_pairing) == set(groups)
    assert all(len(pairing_games) == gpp for pairing_games in by_pairing.values())
    # Within each pairing every bot sits in every seat gpp / players times ...
    for pairing, pairing_games in by_pairing.items():
        seat_counts = Counter((game.seat_bots[seat], seat) for game in pairing_games for seat in range(players))
        assert seat_counts == {(bot, seat): gpp // players for bot in pairing for seat in range(players)}
        if players == 4:
            for game in pairing_games:
                assert {game.seat_bots[0], game.seat_bots[2]} in ({pairing[0], pairing[2]}, {pairing[1], pairing[3]})
    # ... so overall every bot sits in every seat equally often.
    overall = Counter((game.seat_bots[seat], seat) for game in games for seat in range(players))
    assert len(set(overall.values())) == 1 and len(overall) == n * players


@pytest.mark.parametrize("players,n", CONFIGS)
def test_duplicate_sets_give_every_bot_every_hand(players: int, n: int) -> None:
    gpp = 2 * players
    games = round_robin(n, players, gpp, True, SEED)
    by_deck: dict[tuple[tuple[int, ...], int], list[tuple[int, ...]]] = defaultdict(list)
    for game in games:
        by_deck[(game.pairing, game.deck_seed)].append(game.seat_bots)
    assert len(by_deck) == len(pairings(n, players)) * 2
    for (pairing, _), arrangements in by_deck.items():
        assert sorted(arrangements) == sorted(rotations(pairing))
    # The r-th set of every pairing uses the same deck: every pairing sees the same hands.
    for pairing in pairings(n, players):
        seeds = [game.deck_seed for game in games if game.pairing == pairing]
        assert sorted(set(seeds)) == sorted({deck_seed(SEED, 0), deck_seed(SEED, 1)})
        first_set = min(game.set_number for game in games if game.pairing == pairing)
        assert all(game.deck_seed == deck_seed(SEED, 0) for game in games if game.set_number == first_set)


@pytest.mark.parametrize("players,n", CONFIGS)
def test_without_duplicate_kth_game_of_every_pairing_shares_a_deck_and_rotates(players: int, n: int) -> None:
    gpp = players + 1
    games = round_robin(n, players, gpp, False, SEED)
    for pairing in pairings(n, players):
        own = sorted((game for game in games if game.pairing == pairing), key=lambda g: g.set_number)
        assert [g.deck_seed for g in own] == [deck_seed(SEED, k) for k in range(gpp)]
        assert [g.seat_bots for g in own] == [rotations(pairing)[k % players] for k in range(gpp)]
        assert own == sorted(own, key=lambda g: g.number)


@pytest.mark.parametrize("duplicate", [False, True])
@pytest.mark.parametrize("players,n", CONFIGS)
def test_numbers_are_consecutive_and_sets_are_consecutive_blocks(players: int, n: int, duplicate: bool) -> None:
    games = round_robin(n, players, games_per_pairing_for(players), duplicate, SEED)
    assert [game.number for game in games] == list(range(1, len(games) + 1))
    blocks = [list(block) for _, block in groupby(games, key=lambda g: g.set_number)]
    assert [block[0].set_number for block in blocks] == list(range(1, len(blocks) + 1))
    for block in blocks:
        assert len(block) == set_size(players, duplicate)
        assert len({(g.pairing, g.deck_seed) for g in block}) == 1


@pytest.mark.parametrize("games_per_set", [1, 2, 3])
@pytest.mark.parametrize("duplicate", [False, True])
@pytest.mark.parametrize("players,n", [(p, n) for p in (2, 3, 4) for n in range(p, 9)])
def test_every_prefix_keeps_bots_within_two_sets_of_each_other(players: int, n: int, duplicate: bool,
                                                                games_per_set: int) -> None:
    size = set_size(players, duplicate)
    games = round_robin(n, players, games_per_set * size, duplicate, SEED)
    counts = dict.fromkeys(range(n), 0)
    worst = 0
    for game in games:
        for bot in game.seat_bots:
            counts[bot] += 1
        worst = max(worst, max(counts.values()) - min(counts.values()))
    assert worst <= 2 * size
    assert len(set(counts.values())) == 1  # and the full schedule is even


def test_prefix_balance_is_tight_where_sets_can_cover_everyone() -> None:
    """All bots in every pairing: never apart. Two disjoint 4-player tables: one set apart at most."""
    games = round_robin(4, 4, 8, True, SEED)
    counts = Counter[int]()
    for game in games:
        counts.update(game.seat_bots)
        assert len(set(counts.values())) == 1
    games = round_robin(8, 4, 4, True, SEED)
    counts = Counter(dict.fromkeys(range(8), 0))
    for game in games:
        counts.update(game.seat_bots)
        assert max(counts.values()) - min(counts.values()) <= 4


@pytest.mark.parametrize("players,n", [(2, 5), (3, 6), (4, 6)])
def test_deterministic_and_seed_sensitive(players: int, n: int) -> None:
    gpp = games_per_pairing_for(players)
    first = round_robin(n, players, gpp, True, SEED)
    assert round_robin(n, players, gpp, True, SEED) == first
    other = round_robin(n, players, gpp, True, SEED + 1)
    assert [g.deck_seed for g in other] != [g.deck_seed for g in first]
    # The seed picks the decks only; who plays when does not depend on it.
    assert [(g.seat_bots, g.set_number) for g in other] == [(g.seat_bots, g.set_number) for g in first]


def plain_greedy_order(groups: list[tuple[int, ...]], sets: int) -> list[tuple[tuple[int, ...], int]]:
    """The documented order, computed the slow obvious way: each step scans every pending
    (pairing, set round) for the smallest (sum of its bots' counts, max count, round, index)."""
    played: Counter[int] = Counter()
    next_round = [0] * len(groups)
    order = []
    while any(r < sets for r in next_round):
        _, _, r, p = min((sum(played[b] for b in g), max(played[b] for b in g), next_round[i], i)
                         for i, g in enumerate(groups) if next_round[i] < sets)
        order.append((groups[p], r))
        next_round[p] += 1
        for bot in groups[p]:
            played[bot] += 1
    return order


@pytest.mark.parametrize("players,n,sets", [(2, 7, 3), (3, 6, 2), (4, 6, 2), (4, 7, 1)])
def test_order_is_the_documented_greedy(players: int, n: int, sets: int) -> None:
    """The heap in schedule() (one entry per set of bots) gives exactly the plain greedy's order,
    including ties between the three team splits of one 4-combination."""
    groups = pairings(n, players)
    games = round_robin(n, players, sets * players, duplicate=True, seed=3)
    got = [(g.pairing, g.deck_seed) for g in games[::players]]  # one entry per duplicate set
    want = [(pairing, deck_seed(3, r)) for pairing, r in plain_greedy_order(groups, sets)]
    assert got == want


def test_deck_seed_is_stable_in_range_and_mixed() -> None:
    seeds = [deck_seed(SEED, index) for index in range(2000)]
    assert all(0 <= s < 2**63 for s in seeds)
    assert len(set(seeds)) == len(seeds)
    assert deck_seed(SEED, 5) == deck_seed(SEED, 5) != deck_seed(SEED + 1, 5)
    assert max(seeds) > 2**62  # uses the whole range, not small consecutive numbers


def test_schedule_offsets_continue_an_earlier_schedule() -> None:
    groups = [(0, 1, 2, 3), (4, 5, 6, 7)]
    games = schedule(groups, 4, 8, True, SEED, first_number=11, first_set=5, first_deck_index=3)
    assert [g.number for g in games] == list(range(11, 27))
    assert sorted({g.set_number for g in games}) == [5, 6, 7, 8]
    assert {g.deck_seed for g in games} == {deck_seed(SEED, 3), deck_seed(SEED, 4)}
    # Disjoint tables alternate: neither table gets two sets ahead.
    assert [g.pairing for g in games[::4]] == [groups[0], groups[1], groups[0], groups[1]]


def test_schedule_of_chosen_groups_only_counts_their_bots() -> None:
    groups = [(2, 5), (5, 9), (2, 9)]
    games = schedule(groups, 2, 2, True, SEED)
    assert Counter(g.pairing for g in games) == {group: 2 for group in groups}
    assert per_bot_counts(games) == {2: 4, 5: 4, 9: 4}
    assert schedule([], 3, 3, True, SEED) == []


@pytest.mark.parametrize("kwargs,message", [
    (dict(groups=[(0, 1)], players=2, games_per_pairing=3, duplicate=True), "multiple of 2"),
    (dict(groups=[(0, 1, 2)], players=3, games_per_pairing=4, duplicate=True), "multiple of 3"),
    (dict(groups=[(0, 1, 2, 3, 4)], players=5, games_per_pairing=5, duplicate=False), "players"),
    (dict(groups=[(0,)], players=1, games_per_pairing=1, duplicate=False), "players"),
    (dict(groups=[(0, 1, 2)], players=2, games_per_pairing=2, duplicate=False), "has 3 bots"),
    (dict(groups=[(0, 1), (1,)], players=2, games_per_pairing=2, duplicate=False), "has 1 bots"),
    (dict(groups=[(0, 1, 1)], players=3, games_per_pairing=3, duplicate=True), "repeats"),
    (dict(groups=[(0, -1)], players=2, games_per_pairing=2, duplicate=True), "non-negative"),
    (dict(groups=[(0, 1)], players=2, games_per_pairing=0, duplicate=False), ">= 1"),
])
def test_schedule_rejects_bad_input(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        schedule(seed=SEED, **kwargs)


def test_other_bad_input_and_set_size() -> None:
    assert len(schedule([(0, 1, 2)], 3, 4, False, SEED)) == 4
    with pytest.raises(ValueError):
        round_robin(4, 4, 6, True, SEED)
    with pytest.raises(ValueError):
        pairings(5, 5)
    with pytest.raises(ValueError):
        set_size(1, True)
    assert set_size(4, True) == 4 and set_size(4, False) == 1 and set_size(3, True) == 3


@pytest.mark.parametrize("players,n,per_bot", [(2, 6, 2), (3, 6, 2), (4, 6, 1), (4, 7, 3)])
def test_ladder_newcomer_first_and_everyone_gets_their_pairings(players: int, n: int, per_bot: int) -> None:
    newcomer = n // 2
    ratings = [(20.0 + 2 * i, 1.0) for i in range(n)]
    ratings[newcomer] = (25.0, 25.0 / 3)
    chosen = ladder_pairings(ratings, players, per_bot)
    assert all(newcomer in group for group in chosen[:per_bot])
    assert len(set(chosen)) == len(chosen)
    assert set(chosen) <= set(pairings(n, players))
    counts = Counter(bot for group in chosen for bot in group)
    assert all(counts[bot] >= per_bot for bot in range(n))
    assert ladder_pairings(ratings, players, per_bot) == chosen


def test_ladder_prefers_close_uncertain_matches_by_hand() -> None:
    """Three bots, one pairing each. Two-player quality with beta = 25/6:
    q = sqrt(2b^2 / c^2) * exp(-(mu_a - mu_b)^2 / (2 c^2)), c^2 = 2b^2 + sigma_a^2 + sigma_b^2.

    bot 0 (25, 8.333) goes first: (0,1) q=0.5746 * 9.333 = 5.363 beats (0,2) q=0.5102 * 9.333
    = 4.762. bot 1 is then served; bot 2 (30, 1): (0,2) 4.762 beats (1,2) q=0.6918 * 2 = 1.384:
    the close pair of settled bots is less informative than the uncertain newcomer.
    """
    env = trueskill.TrueSkill()
    ratings = [(25.0, 8.333), (25.0, 1.0), (30.0, 1.0)]

    def q(a: int, b: int) -> float:
        (mu_a, s_a), (mu_b, s_b) = ratings[a], ratings[b]
        c2 = 2 * env.beta ** 2 + s_a ** 2 + s_b ** 2
        return math.sqrt(2 * env.beta ** 2 / c2) * math.exp(-(mu_a - mu_b) ** 2 / (2 * c2))

    rated = [env.create_rating(mu, sigma) for mu, sigma in ratings]
    for a, b, by_hand in [(0, 1, 0.5746), (0, 2, 0.5102), (1, 2, 0.6918)]:
        assert env.quality([(rated[a],), (rated[b],)]) == pytest.approx(q(a, b))
        assert q(a, b) == pytest.approx(by_hand, abs=1e-4)
    assert ladder_pairings(ratings, 2, 1) == [(0, 1), (0, 2)]
    assert ladder_pairings(ratings, 2, 1, env) == [(0, 1), (0, 2)]
    # Quota 2: bot 0 takes both of its pairings, bot 1 then still needs (1, 2).
    assert ladder_pairings(ratings, 2, 2) == [(0, 1), (0, 2), (1, 2)]


def test_ladder_four_players_scores_teams() -> None:
    """Four bots: the newcomer's single pairing is the split whose teams are most even."""
    ratings = [(30.0, 8.0), (30.0, 1.0), (20.0, 1.0), (20.0, 1.0)]
    # Team (0, 1) = 60 against (2, 3) = 40 is lopsided; (0, 2) vs (1, 3) and (0, 3) vs (1, 2)
    # are even, and of those the earlier split in pairings() order wins the tie.
    assert ladder_pairings(ratings, 4, 1) == [(0, 1, 2, 3)]


def test_ladder_with_too_few_bots_or_no_quota() -> None:
    assert ladder_pairings([(25.0, 8.3), (25.0, 8.3)], 3, 2) == []
    assert ladder_pairings([], 2, 1) == []
    assert ladder_pairings([(25.0, 1.0)] * 5, 2, 0) == []
    # Two bots, quota 3: only one pairing exists, and it is chosen once.
    assert ladder_pairings([(25.0, 2.0), (25.0, 1.0)], 2, 3) == [(0, 1)]
