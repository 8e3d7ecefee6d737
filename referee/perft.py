"""Perft: the number of distinct play sequences from a position, the move generator's golden check.

Counts stay within one deal: a sequence that reaches the deal's end before the depth counts as
one leaf; a re-deal of hands between rounds is not a play.
"""

from __future__ import annotations

from .rules import GameState, Move, legal_moves, play


def perft(state: GameState, depth: int) -> int:
    """Distinct play sequences of length ``depth`` (shorter where the deal ends first)."""
    if depth == 0 or state.deal_over or state.result is not None:
        return 1
    moves = legal_moves(state)
    if depth == 1:
        return len(moves)
    return sum(perft(play(state, m), depth - 1) for m in moves)


def perft_divide(state: GameState, depth: int) -> list[tuple[Move, int]]:
    """Each first play with the perft count below it (``depth`` >= 1)."""
    return [(m, perft(play(state, m), depth - 1)) for m in legal_moves(state)]
