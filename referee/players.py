"""Built-in in-process players used by demos, benchmarks and tests."""

from __future__ import annotations

import random

from .rules import GameState, Move, legal_moves


class RandomPlayer:
    """Plays a uniformly random legal move, from its own seeded generator."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def choose(self, state: GameState) -> Move:
        return self._rng.choice(legal_moves(state))
