"""How a bot's TrueSkill σ falls with its games here: the figures behind the [standings]
defaults (provisional_games, provisional_sigma; docs/tournaments.md, "When a bot is provisional").

Usage: python bench/provisional_sigma.py [--seeds N] [--rounds R] [--sigma S]

Each pool of 2-player bots plays R double round robins (each pairing twice, seats swapped, as a
duplicate set does), rated by the arena's own code (arena.rating.ratings.RatingBook: the trueskill
package's defaults, σ0 = 25/3). A game's winner is drawn from TrueSkill's own model: each bot's
performance is its true skill plus noise of deviation β = 25/6, the higher wins. Pools: equal bots
(every game a coin toss), bots one β apart (the stronger wins 76% of games), bots three β apart
(nearly certain results), and eight bots half a β apart. Prints, by the games a bot has played, the
median and 90th percentile of σ over every bot of every seed, and the share with σ above --sigma;
then the games after which the median σ is at most --sigma. Pure computation, about a second.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena.rating.ratings import RatingBook, make_env  # noqa: E402
from arena.rating.results import GameOutcome  # noqa: E402

BETA = 25 / 6
MARKS = (1, 2, 4, 6, 8, 10, 12, 16, 20, 24, 30, 40, 60, 80)
POOLS = {
    "4 equal bots": [25.0] * 4,
    "4 bots 1 β apart": [25 + BETA * (k - 1.5) for k in range(4)],
    "4 bots 3 β apart": [25 + 3 * BETA * (k - 1.5) for k in range(4)],
    "8 bots ½ β apart": [25 + BETA / 2 * (k - 3.5) for k in range(8)],
}


def sigmas_by_games(skills: list[float], rounds: int, seed: int) -> dict[int, list[float]]:
    """Each bot's σ after its n-th game, by n, over ``rounds`` double round robins."""
    rng = random.Random(seed)
    names = [f"bot{i}" for i in range(len(skills))]
    book = RatingBook(make_env())
    played = dict.fromkeys(names, 0)
    found: dict[int, list[float]] = {}
    number = 0
    for _ in range(rounds):
        for i, a in enumerate(names):
            for j, b in enumerate(names):
                if i == j:
                    continue
                number += 1
                a_wins = skills[i] + rng.gauss(0, BETA) > skills[j] + rng.gauss(0, BETA)
                ranks = (1, 2) if a_wins else (2, 1)
                outcome = GameOutcome(number, (a, b), (0, 1), ranks, (21, 9) if a_wins else (9, 21), 0 if a_wins else 1)
                for name, rating in book.update(outcome).items():
                    played[name] += 1
                    found.setdefault(played[name], []).append(rating.sigma)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20, help="pools played per kind (default 20)")
    parser.add_argument("--rounds", type=int, default=14, help="double round robins per pool (default 14)")
    parser.add_argument("--sigma", type=float, default=2.5, help="the σ threshold to report on (default 2.5)")
    args = parser.parse_args()
    for label, skills in POOLS.items():
        by_games: dict[int, list[float]] = {}
        for seed in range(args.seeds):
            for n, values in sigmas_by_games(skills, args.rounds, seed).items():
                by_games.setdefault(n, []).extend(values)
        marks = [n for n in MARKS if n in by_games]
        print(f"{label} ({args.seeds} pools, {args.rounds} double round robins each)")
        print("  games      " + " ".join(f"{n:>5}" for n in marks))
        print("  median σ   " + " ".join(f"{statistics.median(by_games[n]):5.2f}" for n in marks))
        print("  90th pct σ " + " ".join(f"{statistics.quantiles(by_games[n], n=10)[-1]:5.2f}" for n in marks))
        print(f"  σ > {args.sigma:<5g}  " + " ".join(
            f"{sum(s > args.sigma for s in by_games[n]) / len(by_games[n]):5.0%}" for n in marks))
        under = next((n for n in sorted(by_games) if statistics.median(by_games[n]) <= args.sigma), None)
        print(f"  median σ ≤ {args.sigma:g} after {under if under is not None else 'more than ' + str(max(by_games))} "
              "games\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
