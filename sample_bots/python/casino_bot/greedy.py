"""A greedy policy on plain engine values: the play with the best immediate value, counting cards
as they score at the deal's end (the greedy sample bot plays it; the lookahead bot's rollouts use
it; a bot of yours may start from it).

A capture is worth what it takes (the played card included): each card toward most cards, each
spade toward most spades, 10D 2 points, 2S 1, each Ace 1, and a sweep 1. A build (new, add or
raise) is worth part of the cards it gathers, since its owner holds the card that takes it next
turn unless someone else does first. A trail gives a card away, so it costs the card's worth: the
least valuable card goes, and 10D, 2S or an Ace only when nothing else is possible.
"""

from __future__ import annotations

from collections.abc import Sequence

from referee.rules import ACE, ALL_CARDS, BIG_CASINO, LITTLE_CASINO, RANK, SPADE, SUIT, Build, Move, MoveKind

CARD = 3 / 27  # a share of the 3 points for most cards
SPADE_BONUS = 1 / 7  # a share of the 1 point for most spades
SWEEP = 1.0
BUILD_SHARE = 0.5  # a build is taken next turn, if the opponents let it be
WORTH = tuple(
    CARD + SPADE_BONUS * (SUIT[c] == SPADE) + 2 * (c == BIG_CASINO) + 1 * (c == LITTLE_CASINO) + 1 * (RANK[c] == ACE)
    for c in ALL_CARDS
)


def move_value(move: Move, loose: Sequence[int], builds: Sequence[Build]) -> float:
    """The immediate value of ``move`` with these loose cards and builds on the table."""
    kind = move.kind
    if kind == MoveKind.TRAIL:
        return -WORTH[move.card] - 0.001 * (14 - RANK[move.card])  # equal worth: give away a high card
    cards = [move.card, *move.loose]
    for b in builds:
        if b.id in move.builds:
            cards.extend(b.cards)
    value = sum(WORTH[c] for c in cards)
    if kind == MoveKind.CAPTURE:
        sweep = len(move.loose) == len(loose) and len(move.builds) == len(builds)
        return value + SWEEP * sweep + 0.001 * len(cards)  # equal worth: take more cards
    return BUILD_SHARE * value


def greedy_index(moves: Sequence[Move], loose: Sequence[int], builds: Sequence[Build]) -> int:
    """Index of the best move by ``move_value`` (the first of equals, in the engine's order)."""
    if len(moves) == 1:
        return 0
    best, best_value = 0, move_value(moves[0], loose, builds)
    for i in range(1, len(moves)):
        value = move_value(moves[i], loose, builds)
        if value > best_value:
            best, best_value = i, value
    return best
