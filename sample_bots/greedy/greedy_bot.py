"""Greedy bot: the play with the best immediate value (the SDK's greedy policy, casino_bot/greedy.py:
captures by what the cards score, builds it can take next, trails the least valuable card).
Run it as a package (``referee check sample_bots/greedy``) or as a command
(``python sample_bots/greedy/greedy_bot.py``).
"""

from __future__ import annotations

from casino_bot import CasinoBot, legal_moves, run, table_from_turn
from casino_bot.greedy import greedy_index, move_value  # noqa: F401  (move_value: found here by tests and benches)


class GreedyBot(CasinoBot):
    name = "greedy-bot"
    threaded = False  # choose() takes microseconds: no thread hand-off
    version = "0.1.0"

    def choose(self, turn):  # type: ignore[no-untyped-def]
        loose, builds = table_from_turn(turn)
        return greedy_index(legal_moves(turn), loose, builds)


if __name__ == "__main__":
    run(GreedyBot())
