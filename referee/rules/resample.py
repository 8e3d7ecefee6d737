"""Resampling what a seat cannot see (OpenSpiel's ``resample_from_infostate``): a full state of the
current deal that agrees with the seat's observation, its hidden cards drawn at random, for search.

The deal is rebuilt from a deck whose dealing order reproduces the public history: the four table
cards, then each round's hands (the cards each seat played in that round and, in the current
round, its hand now), then the stock. Hidden hands respect what the history proves (rule 10): a
seat that still owned a build after one of this round's plays holds a card of its value unless it
played one later. The deal's plays are replayed with ``apply`` and the result checked against the
observation. The state knows only this deal's deck and no earlier sheets: search it with ``play``,
which stops at the deal's end (``deal_over``, ``sheets[-1]`` this deal's sheet); ``apply`` on the last
card raises DecksExhaustedError, as there is no next deck to deal.
"""

from __future__ import annotations

import random

from .cards import ACE, ACE_HIGH, ALL_CARDS, RANK, Card
from .errors import InvalidObservationError, RulesError
from .moves import Move, MoveKind
from .observation import Observation, observation
from .play import apply
from .state import CARDS_PER_HAND, TABLE_CARDS, DeckSource, GameState, deal_new

REJECTION_ATTEMPTS = 200  # hidden deals drawn before the needed cards are placed first


def resample(obs: Observation, rng: random.Random) -> GameState:
    """A state of ``obs``'s deal with the others' hands and the stock drawn by ``rng``, such that
    ``observation(state, obs.seat) == obs``; InvalidObservationError when no state fits."""
    options = obs.options
    n = options.players
    seat = obs.seat
    _check_shape(obs)
    per_round = CARDS_PER_HAND * n
    start = (obs.round - 1) * per_round  # index of the current round's first play
    played: list[list[list[Card]]] = [[[] for _ in range(n)] for _ in range(obs.round)]
    for i, (s, m) in enumerate(obs.plays):
        played[i // per_round][s].append(m.card)
    seen = set(obs.table_dealt) | set(obs.hand) | {m.card for _, m in obs.plays}
    unseen = [c for c in ALL_CARDS if c not in seen]
    others = [s for s in range(n) if s != seat]
    if len(unseen) != sum(obs.hand_sizes[s] for s in others) + obs.stock_size:
        raise InvalidObservationError("the observation's cards do not add up to a deck")
    hands = _deal_hidden(unseen, {s: obs.hand_sizes[s] for s in others}, _required_ranks(obs.plays, start, n), rng)
    hands[seat] = list(obs.hand)
    leader = (obs.dealer + 1) % n
    deck = list(obs.table_dealt)
    for r in range(obs.round):
        for i in range(n):
            s = (leader + i) % n
            deck += played[r][s] + (hands[s] if r == obs.round - 1 else [])
    deck += unseen  # the stock: what is left
    try:
        state = deal_new(
            options=options, decks=DeckSource(None, [deck] * (obs.deal + 1)), deal=obs.deal, scores=obs.scores,
            continuation=obs.continuation, sheets=(), log=None,
        )
        for _, m in obs.plays:
            state = apply(state, m)
    except RulesError as exc:
        raise InvalidObservationError(f"the deal's plays do not replay: {exc}") from None
    if observation(state, seat) != obs:
        raise InvalidObservationError("the replayed deal does not match the observation")
    return state


def _check_shape(obs: Observation) -> None:
    """Seats, rounds and per-seat and per-side lengths that fit the table, before anything is indexed."""
    options = obs.options
    n = options.players
    if not 0 <= obs.seat < n or len(obs.hand_sizes) != n or len(obs.scores) != options.sides:
        raise InvalidObservationError(f"the observation does not fit a {n}-player table")
    if obs.deal < 0 or obs.round < 1 or len(obs.table_dealt) != TABLE_CARDS:
        raise InvalidObservationError("the observation's deal, round or table cards are out of range")
    if len(obs.plays) > obs.round * CARDS_PER_HAND * n or any(not 0 <= s < n for s, _ in obs.plays):
        raise InvalidObservationError("the observation's plays do not fit its round and table")


def _deal_hidden(
    unseen: list[Card], sizes: dict[int, int], need: list[set[int]], rng: random.Random
) -> dict[int, list[Card]]:
    """Draw the hidden hands from ``unseen`` (left holding the stock, shuffled): uniformly among the
    deals that give each seat the ranks it needs, by rejection; if that keeps failing, needed cards first."""
    for attempt in range(REJECTION_ATTEMPTS + 1):
        rng.shuffle(unseen)
        hands: dict[int, list[Card]] = {}
        pos = 0
        if attempt == REJECTION_ATTEMPTS:  # place a card of each needed rank, then deal the rest
            for s, size in sizes.items():
                hands[s] = []
                for rank in need[s]:
                    card = next((c for c in unseen if RANK[c] == rank), None)
                    if card is None:
                        raise InvalidObservationError("no deal of the unseen cards fits the history")
                    unseen.remove(card)
                    hands[s].append(card)
                if len(hands[s]) > size:
                    raise InvalidObservationError("no deal of the unseen cards fits the history")
        for s, size in sizes.items():
            got = hands.setdefault(s, [])
            take = size - len(got)
            got += unseen[pos : pos + take]
            pos += take
        if all(need[s] <= {RANK[c] for c in hands[s]} for s in sizes):
            del unseen[:pos]
            return hands
    raise InvalidObservationError("no deal of the unseen cards fits the history")


def _required_ranks(plays: tuple[tuple[int, Move], ...], start: int, n: int) -> list[set[int]]:
    """Per seat, the ranks its hidden hand must hold: a build it owned after one of this round's
    plays (``plays[start:]``) needs a card of its value, unless it played one later (builds never outlive a round)."""
    need: list[set[int]] = [set() for _ in range(n)]
    owner: dict[int, tuple[int, int]] = {}  # build id -> (owner seat, value)
    next_id = 1
    for i, (s, m) in enumerate(plays):
        if m.kind == MoveKind.BUILD:
            owner[next_id] = (s, m.value)
            next_id += 1
        elif m.kind in (MoveKind.ADD, MoveKind.RAISE):
            owner[m.builds[0]] = (s, m.value)
        elif m.kind == MoveKind.CAPTURE:
            for b in m.builds:
                owner.pop(b, None)
        if i < start:
            continue
        for o, value in owner.values():
            rank = ACE if value == ACE_HIGH else value
            later = {RANK[m2.card] for s2, m2 in plays[i + 1 :] if s2 == o}
            if rank not in later:
                need[o].add(rank)
    return need
