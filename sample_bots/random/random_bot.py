"""Random bot: a uniformly random legal move, from a generator seeded by $CASINO_BOT_SEED (default 0)
and the game id at the start of every game, so a game's moves do not depend on which process of
a pool plays it or on the games it played before (tournaments replay the same way).

Run: ``CASINO_BOT_ADDRESS=unix:/tmp/random.sock python sample_bots/random/random_bot.py``
"""

from __future__ import annotations

import os
import random
import sys

from casino_bot import CasinoBot, run


class RandomBot(CasinoBot):
    name = "random-bot"
    threaded = False  # choose() takes microseconds: no thread hand-off
    version = "0.1.0"

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.seed = seed
        self.rng = random.Random(seed)

    def on_game_start(self, start):  # type: ignore[no-untyped-def]
        self.rng = random.Random(f"{self.seed}:{start.game_id}:{start.seat}")

    def choose(self, turn):  # type: ignore[no-untyped-def]
        return self.rng.randrange(len(turn.legal_moves))


if __name__ == "__main__":
    seed = os.environ.get("CASINO_BOT_SEED", "0")
    if not seed.lstrip("-").isdigit():
        print(f"error: CASINO_BOT_SEED must be a whole number, not {seed!r}", file=sys.stderr)
        raise SystemExit(2)
    run(RandomBot(int(seed)))
