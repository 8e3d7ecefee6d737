"""Who plays whom, in which seats, with which deck, in which order: pure functions, no I/O.

A *pairing* is one group of bots that meets: for 2 or 3 players a combination of distinct bots,
for 4 players one split of a 4-combination into two partnerships, written in seat order (seats
0+2 against seats 1+3). Its seat arrangements are its rotations. A *duplicate set* is one deck
seed played once in every rotation of a pairing, so every bot of the pairing gets every hand.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import trueskill

PLAYER_COUNTS = (2, 3, 4)


@dataclass(frozen=True, slots=True)
class ScheduledGame:
    """One game of a schedule: who sits where, with which deck seed, and where it belongs.

    ``number`` is 1-based and games are played and rated in that order; ``seat_bots`` are
    indices into the tournament's bot list, per seat; ``set_number`` is the 1-based duplicate
    set id, unique in the schedule (every game is its own set when duplicate deals are off).
    """

    number: int
    seat_bots: tuple[int, ...]
    deck_seed: int
    pairing: tuple[int, ...]
    set_number: int


def _check_players(players: int) -> None:
    if players not in PLAYER_COUNTS:
        raise ValueError(f"players must be one of {PLAYER_COUNTS}, got {players!r}")


def _splits(combo: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The three team splits of a 4-combination (a, b, c, d), in seat order: ab|cd, ac|bd, ad|bc."""
    a, b, c, d = combo
    return [(a, c, b, d), (a, b, c, d), (a, b, d, c)]


def pairings(n_bots: int, players: int) -> list[tuple[int, ...]]:
    """Every pairing of ``n_bots`` bots for ``players``-seat games, in a fixed order.

    C(n, players) combinations for 2 or 3 players, 3 * C(n, 4) splits for 4; [] when there
    are fewer bots than seats.
    """
    _check_players(players)
    if n_bots < 0:
        raise ValueError(f"n_bots must be >= 0, got {n_bots}")
    combos = itertools.combinations(range(n_bots), players)
    if players == 4:
        return [split for combo in combos for split in _splits(combo)]
    return list(combos)


def rotations(pairing: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The seat arrangements of a pairing: every bot sits in every seat once, and with 4
    players the partnerships (seats 0+2, 1+3) stay together."""
    pairing = tuple(pairing)
    return [pairing[k:] + pairing[:k] for k in range(len(pairing))]


def set_size(players: int, duplicate: bool) -> int:
    """Games in one duplicate set: one per rotation with duplicate deals, else 1."""
    _check_players(players)
    return players if duplicate else 1


def deck_seed(seed: int, index: int) -> int:
    """The referee game seed for deck number ``index`` of a tournament seeded with ``seed``:
    deterministic, well mixed, 0 <= x < 2**63 (fits a signed 64-bit column)."""
    digest = hashlib.blake2b(f"{seed}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def _check_groups(groups: Sequence[tuple[int, ...]], players: int) -> None:
    for group in groups:
        if len(group) != players:
            raise ValueError(f"pairing {tuple(group)} has {len(group)} bots, games have {players} seats")
        if len(set(group)) != len(group):
            raise ValueError(f"pairing {tuple(group)} repeats a bot")
        if any(not isinstance(bot, int) or bot < 0 for bot in group):
            raise ValueError(f"pairing {tuple(group)} has a bot that is not a non-negative index")


def schedule(groups: Sequence[tuple[int, ...]], players: int, games_per_pairing: int, duplicate: bool, seed: int,
             first_number: int = 1, first_set: int = 1, first_deck_index: int = 0) -> list[ScheduledGame]:
    """The games of every pairing in ``groups``, ordered so that bots' game counts stay even.

    Each pairing plays ``games_per_pairing`` games in ``games_per_pairing / set_size`` sets.
    Set r of every pairing uses deck deck_seed(seed, first_deck_index + r) (with duplicate
    deals, once per rotation; without, rotation r mod players), so all pairings see the same
    hands. Order: repeatedly the pending set whose bots have the fewest games so far (sum,
    then max; ties by set round, then pairing index), its games consecutive. For a round robin
    every prefix of the order then keeps max - min of the bots' game counts within
    2 * set_size (measured: 2..16 bots for 2 players, ..12 for 3, ..10 for 4, 1..3 sets per
    pairing): one set moves its bots set_size ahead of the rest at once, and the greedy, which
    does not plan ahead, sometimes has only pending pairings that leave a bot one set behind.
    """
    _check_players(players)
    size = set_size(players, duplicate)
    if games_per_pairing < 1:
        raise ValueError(f"games_per_pairing must be >= 1, got {games_per_pairing}")
    if games_per_pairing % size:
        raise ValueError(f"with duplicate deals games_per_pairing must be a multiple of {size} "
                         f"(one game per seat rotation), got {games_per_pairing}")
    _check_groups(groups, players)
    groups = [tuple(group) for group in groups]
    n_rounds = games_per_pairing // size

    played: dict[int, int] = {bot: 0 for group in groups for bot in group}
    # Pairings of the same bots (a 4-combination's three team splits) always share their counts,
    # so they share one heap entry: the family's key is its counts' (sum, max), then the lowest
    # (round, pairing) still pending in it, which is exactly the order of one entry per pairing.
    families: dict[frozenset[int], list[int]] = {}
    for p, group in enumerate(groups):
        families.setdefault(frozenset(group), []).append(p)
    members = list(families.values())
    bots_of = [groups[family[0]] for family in members]
    next_round = [0] * len(groups)
    first_pending = [(0, family[0]) for family in members]  # each family's lowest (round, pairing)

    def key(f: int) -> tuple[int, int, int, int, int]:
        counts = [played[bot] for bot in bots_of[f]]
        return (sum(counts), max(counts), *first_pending[f], f)

    # Lazy min-heap: a family's key never decreases (counts only grow, rounds only advance), so
    # a popped entry whose key is still current is the true minimum; stale entries are re-pushed.
    heap = [key(f) for f in range(len(members))]
    heapq.heapify(heap)
    games: list[ScheduledGame] = []
    set_number = first_set
    while heap:
        entry = heap[0]
        _, _, r, p, f = entry
        current = key(f)
        if current != entry:
            heapq.heapreplace(heap, current)
            continue
        heapq.heappop(heap)
        pairing = groups[p]
        if duplicate:
            seats = rotations(pairing)
        else:
            seats = [rotations(pairing)[r % players]]
        game_seed = deck_seed(seed, first_deck_index + r)
        for seat_bots in seats:
            games.append(ScheduledGame(first_number + len(games), seat_bots, game_seed, pairing, set_number))
        set_number += 1
        for bot in pairing:
            played[bot] += size
        next_round[p] = r + 1
        pending = [(next_round[q], q) for q in members[f] if next_round[q] < n_rounds]
        if pending:
            first_pending[f] = min(pending)
            heapq.heappush(heap, key(f))
    return games


def round_robin(n_bots: int, players: int, games_per_pairing: int, duplicate: bool, seed: int) -> list[ScheduledGame]:
    """Every pairing of ``n_bots`` bots plays ``games_per_pairing`` games (see schedule)."""
    return schedule(pairings(n_bots, players), players, games_per_pairing, duplicate, seed)


def _rating_groups(group: tuple[int, ...], ratings: Sequence[trueskill.Rating]) -> list[tuple[trueskill.Rating, ...]]:
    """TrueSkill rating groups of a pairing: one per bot, or the two partnerships with 4 players."""
    if len(group) == 4:
        return [(ratings[group[0]], ratings[group[2]]), (ratings[group[1]], ratings[group[3]])]
    return [(ratings[bot],) for bot in group]


def ladder_pairings(ratings: Sequence[tuple[float, float]], players: int, pairings_per_bot: int,
                    env: trueskill.TrueSkill | None = None, wants: Sequence[int] | None = None,
                    first: Sequence[int] = ()) -> list[tuple[int, ...]]:
    """The pairings of one ladder round, chosen to be informative for the most uncertain bots.

    Bots in order of decreasing sigma (ties by index), after the bots ``first`` names in its order
    (a ladder's new bots, ``round_pool``); while a bot has fewer than its pairings this round
    (``wants[bot]``, default ``pairings_per_bot`` for every bot), it gets the not yet chosen
    pairing containing it that maximises env.quality * (sum of the pairing's sigmas), ties to the
    earliest in pairings() order. Returned in the order chosen, so those bots' pairings come first.
    """
    _check_players(players)
    if pairings_per_bot < 0:
        raise ValueError(f"pairings_per_bot must be >= 0, got {pairings_per_bot}")
    n = len(ratings)
    if n < players:
        return []
    env = env if env is not None else trueskill.TrueSkill()
    rated = [env.create_rating(mu, sigma) for mu, sigma in ratings]
    sigmas = [sigma for _, sigma in ratings]
    candidates = pairings(n, players)
    by_bot: dict[int, list[tuple[int, ...]]] = {bot: [] for bot in range(n)}
    for group in candidates:
        for bot in group:
            by_bot[bot].append(group)
    worth: dict[tuple[int, ...], float] = {}

    def value(group: tuple[int, ...]) -> float:
        if group not in worth:
            worth[group] = env.quality(_rating_groups(group, rated)) * sum(sigmas[bot] for bot in group)
        return worth[group]

    target = list(wants) if wants is not None else [pairings_per_bot] * n
    if len(target) != n or any(w < 0 for w in target):
        raise ValueError(f"wants must give each of the {n} bots a count >= 0, got {list(target)}")
    if len(set(first)) != len(first) or any(not 0 <= bot < n for bot in first):
        raise ValueError(f"first must name distinct bots among the {n}, got {list(first)}")
    count = [0] * n
    chosen: list[tuple[int, ...]] = []
    taken: set[tuple[int, ...]] = set()
    firsts = set(first)
    for bot in [*first, *sorted((b for b in range(n) if b not in firsts), key=lambda b: (-sigmas[b], b))]:
        while count[bot] < target[bot]:
            best: tuple[int, ...] | None = None
            for group in by_bot[bot]:
                if group not in taken and (best is None or value(group) > value(best)):
                    best = group
            if best is None:
                break
            chosen.append(best)
            taken.add(best)
            for member in best:
                count[member] += 1
    return chosen


def round_pool(since_entry: Sequence[int], last_game: Sequence[int], bots_per_round: int,
               new_bot_games: int) -> tuple[list[int], list[int]]:
    """Which bots of a ladder's pool the next round pairs (indices, ascending), and which of those
    are *new* (in the order they are served: fewest games first, then index).

    A bot is new while it has played fewer than ``new_bot_games`` games since it entered the pool
    (``since_entry``): added, accepted, or activated again. With ``bots_per_round`` 0 every bot
    plays; else the first ``bots_per_round`` of this order: the new bots, then the others by how
    long they have waited (their newest game, ``last_game``, oldest first; 0 for none), then
    index. So in a pool larger than a round the bots take turns, and a new one does not wait for
    its turn: it is in the very next round.
    """
    if len(since_entry) != len(last_game):
        raise ValueError("since_entry and last_game must have one entry per bot")
    if bots_per_round < 0 or new_bot_games < 0:
        raise ValueError(f"bots_per_round and new_bot_games must be >= 0, got {bots_per_round}, {new_bot_games}")
    n = len(since_entry)
    new = sorted((b for b in range(n) if since_entry[b] < new_bot_games), key=lambda b: (since_entry[b], b))
    rest = sorted((b for b in range(n) if since_entry[b] >= new_bot_games), key=lambda b: (last_game[b], b))
    order = new + rest
    chosen = order if not bots_per_round or n <= bots_per_round else order[:bots_per_round]
    kept = set(chosen)
    return sorted(chosen), [b for b in new if b in kept]
