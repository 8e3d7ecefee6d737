"""Measure what duplicate pairs and the unit of `arena compare` buy, with the sample bots' real code.

Usage: python bench/bench_duplicate.py [--matchups greedy-random,lookahead-greedy] [--deal-pairs N]
       [--game-pairs N] [--lookahead-deal-pairs N] [--lookahead-game-pairs N] [--samples K]
       [--runs R] [--cap PAIRS] [--seed S] [--jobs J] [--json FILE]

For each match-up (candidate first), unit (``deals``: one-deal games, ``games``: games to 21) and
pairing (``duplicate``: the pair's two games share their decks; ``independent``: each game its own
decks; seats swapped in both), P pairs are played in-process exactly as bench/eval_bots.py plays a
game (same Turn messages, the lookahead bot on a fixed sample budget), with the deck seeds
`arena compare` uses. Per pair it keeps the pair statistic (mean point margin for deals, pair
score 0..2 for games), the candidate's score in each game and the deals dealt in each game.

It reports the effect (points per deal; Elo of the mean per-game score), the variance of the pair
statistic for both pairings and their ratio, the information per card dealt
((effect / sd)^2 / cards per pair, effect measured from the null value: margin 0, pair score 1),
and, by bootstrapping the sequential tests of arena/stats.py on the measured pairs, the cards
dealt to a decision. The SPRT bounds are H0: effect <= 0, H1: effect >= half the effect measured
for that match-up in that unit, so every unit answers the same relative question.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import multiprocessing
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from eval_bots import make_bot, run_game  # noqa: E402  (also puts sample_bots/python on the path)

from arena.play.compare import CARDS_PER_DEAL, PAIRINGS  # noqa: E402
from arena.rating.stats import (
    DEFAULT_MIN_PAIRS,
    UNITS,
    MarginSprt,
    PentanomialSprt,
    SprtBounds,
    expected_units,
    score_to_elo,
)
from arena.schedule.pairings import deck_seed  # noqa: E402
from referee.rules import RuleOptions  # noqa: E402

MATCHUPS = {"greedy-random": ("greedy", "random"), "lookahead-greedy": ("lookahead", "greedy")}
ALPHA = BETA = 0.05
INDEPENDENT_OFFSET = 1 << 40  # arena compare's deck-seed offset for independent pairs


@dataclass(frozen=True)
class GameTask:
    """One game to play: who, which unit's rules, which decks, which side the candidate holds."""

    candidate: str
    baseline: str
    unit: str
    deck_seed: int
    candidate_side: int
    samples: int
    bot_seed: int
    game_id: str  # the random bot seeds itself from it (and its own seed) at every game start


@dataclass(frozen=True)
class GameRecord:
    """One finished game from the candidate's side: points, score (1, 1/2, 0), deals dealt."""

    candidate_points: int
    baseline_points: int
    score: float
    deals: int


@dataclass(frozen=True)
class PairSample:
    """One measured pair: the pair statistic, the candidate's score and the deals of each game."""

    value: float
    scores: tuple[float, float]
    deals: tuple[int, int]

    @property
    def cards(self) -> int:
        """Cards dealt over the pair's two games (every deal deals the whole deck)."""
        return CARDS_PER_DEAL * sum(self.deals)


@dataclass(frozen=True)
class BootstrapTask:
    """Resample ``pairs`` into ``runs`` complete sequential tests with ``bounds`` (seeded)."""

    key: tuple[str, str, str]  # match-up, unit, pairing
    pairs: tuple[PairSample, ...]
    bounds: SprtBounds
    runs: int
    cap: int
    seed: int


def rule_options(unit: str) -> RuleOptions:
    """The rules of one game of the unit, as arena compare sets them for 2 players."""
    return RuleOptions(players=2, max_deals=1) if unit == "deals" else RuleOptions(players=2)


def play_game(task: GameTask) -> GameRecord:
    """Play one game in-process as bench/eval_bots.py does (its run_game), with the unit's rule
    options (which the bots also get, as the SDK's handshake would give them)."""
    options = rule_options(task.unit)
    side = task.candidate_side
    bots = {side: make_bot(task.candidate, 2 * task.bot_seed + 1, task.samples),
            1 - side: make_bot(task.baseline, 2 * task.bot_seed + 2, task.samples)}
    seat_bot = [bots[options.side_of(s)] for s in range(options.players)]
    names = [task.candidate if options.side_of(s) == side else task.baseline for s in range(options.players)]
    state, _, _ = run_game(seat_bot, options, task.deck_seed, task.game_id, names, tell_options=True)
    result = state.result
    assert result is not None
    score = 0.5 if result.winner is None else float(result.winner == side)
    return GameRecord(result.scores[side], result.scores[1 - side], score, result.deals)


def pair_tasks(candidate: str, baseline: str, unit: str, pairing: str, pairs: int, seed: int,
               samples: int) -> list[GameTask]:
    """The 2 * ``pairs`` games of one sample, candidate on side 0 then 1, decks as arena compare
    chooses them; the random bot's seed is the game's own."""
    tasks: list[GameTask] = []
    for index in range(pairs):
        for game in (0, 1):
            if pairing == "duplicate":
                deck = deck_seed(seed, index)
            else:
                deck = deck_seed(seed, 2 * index + game + INDEPENDENT_OFFSET)
            tasks.append(GameTask(candidate, baseline, unit, deck, game, samples, 2 * index + game,
                                  f"{unit}-{pairing}-p{index + 1}-{'ab'[game]}"))
    return tasks


def to_pairs(unit: str, games: Sequence[GameRecord]) -> list[PairSample]:
    """Group consecutive games two by two into pairs with the unit's statistic."""
    pairs: list[PairSample] = []
    for first, second in zip(games[0::2], games[1::2]):
        if unit == "deals":
            value = ((first.candidate_points - first.baseline_points)
                     + (second.candidate_points - second.baseline_points)) / 2
        else:
            value = first.score + second.score
        pairs.append(PairSample(value, (first.score, second.score), (first.deals, second.deals)))
    return pairs


def null_value(unit: str) -> float:
    """The pair statistic of two equal bots: margin 0, or pair score 1 (one game each)."""
    return 0.0 if unit == "deals" else 1.0


def effect_of(unit: str, values: Sequence[float]) -> float:
    """The effect in the unit's SPRT scale: points per deal, or the Elo of the mean per-game score."""
    mean = statistics.fmean(values)
    return mean if unit == "deals" else score_to_elo(min(1.0, max(0.0, mean / 2.0)))


def mean_interval(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% interval (normal approximation, n is in the hundreds)."""
    return statistics.fmean(values), 1.96 * statistics.stdev(values) / math.sqrt(len(values))


def run_sequential(task: BootstrapTask) -> dict[str, Any]:
    """Bootstrap the sequential test: per run, draw pairs with replacement until a decision or the cap."""
    unit = task.key[1]
    rng = random.Random(f"{task.seed}:{':'.join(task.key)}")
    pairs: list[int] = []
    games: list[int] = []
    deals: list[int] = []
    decisions: list[str] = []
    for _ in range(task.runs):
        test: MarginSprt | PentanomialSprt = (MarginSprt(task.bounds) if unit == "deals"
                                              else PentanomialSprt(task.bounds))
        dealt = 0
        decision: str | None = None
        while decision is None and test.pairs < task.cap:
            pair = task.pairs[rng.randrange(len(task.pairs))]
            if isinstance(test, MarginSprt):
                test.add(pair.value)
            else:
                test.add_games(*pair.scores)
            dealt += sum(pair.deals)
            decision = test.decision()
        pairs.append(test.pairs)
        games.append(2 * test.pairs)
        deals.append(dealt)
        decisions.append(decision or "cap")
    cards = [CARDS_PER_DEAL * d for d in deals]
    return {
        "runs": task.runs, "cap_pairs": task.cap,
        "mean_pairs": statistics.fmean(pairs), "median_pairs": statistics.median(pairs),
        "mean_games": statistics.fmean(games), "mean_deals": statistics.fmean(deals),
        "median_deals": statistics.median(deals),
        "mean_cards": statistics.fmean(cards), "median_cards": statistics.median(cards),
        "share_h1": decisions.count("H1") / task.runs, "share_h0": decisions.count("H0") / task.runs,
        "share_capped": decisions.count("cap") / task.runs,
    }


def describe_sample(unit: str, pairs: Sequence[PairSample], pooled_effect_stat: float) -> dict[str, Any]:
    """Mean, variance and information per card of one sample; the effect is the pooled one."""
    values = [p.value for p in pairs]
    variance = statistics.variance(values)
    cards = statistics.fmean(p.cards for p in pairs)
    per_pair = (pooled_effect_stat / math.sqrt(variance)) ** 2 if variance > 0 else math.inf
    return {
        "pairs": len(pairs), "mean": statistics.fmean(values), "variance": variance, "sd": math.sqrt(variance),
        "effect": effect_of(unit, values),
        "deals_per_pair": statistics.fmean(sum(p.deals) for p in pairs), "cards_per_pair": cards,
        "information_per_pair": per_pair, "information_per_card": per_pair / cards,
        "pentanomial": [sum(round(2 * sum(p.scores)) == k for p in pairs) for k in range(5)],
    }


def analyse_unit(unit: str, samples: dict[str, list[PairSample]]) -> dict[str, Any]:
    """Effect (pooled over both pairings, both unbiased), per-pairing variances, their ratios, bounds."""
    pooled = [p.value for pairing in PAIRINGS for p in samples[pairing]]
    mean, half = mean_interval(pooled)
    effect = effect_of(unit, pooled)
    low, high = effect_of(unit, [mean - half]), effect_of(unit, [mean + half])
    stat_effect = mean - null_value(unit)
    described = {pairing: describe_sample(unit, samples[pairing], stat_effect) for pairing in PAIRINGS}
    dup, ind = described["duplicate"], described["independent"]
    return {
        "unit": unit, "effect": effect, "effect_ci": [low, high],
        "effect_name": "mean margin, points per deal" if unit == "deals" else "Elo of the mean per-game score",
        "pair_statistic_effect": stat_effect,
        "delta": effect / 2 if effect > 0 else None,
        "pairings": described,
        "variance_ratio": ind["variance"] / dup["variance"] if dup["variance"] > 0 else None,
        "information_ratio": (dup["information_per_card"] / ind["information_per_card"]
                              if ind["information_per_card"] not in (0, math.inf) else None),
    }


def wald_predictions(unit: str, bounds: SprtBounds, pooled_effect: float, sample: dict[str, Any]) -> dict[str, Any]:
    """Wald's expected pairs (arena.stats.expected_units) with the sample's variance, at the sample's
    own effect (what the bootstrap resamples) and at the pooled one (pairings compared on equal effect)."""
    if not sample["variance"] > 0:
        return {"wald_pairs": None, "wald_pairs_pooled_effect": None, "wald_cards_pooled_effect": None}
    own = expected_units(unit, bounds, sample["effect"], sample["variance"])["pairs"]
    pooled = expected_units(unit, bounds, pooled_effect, sample["variance"])["pairs"]
    return {"wald_pairs": own, "wald_pairs_pooled_effect": pooled,
            "wald_cards_pooled_effect": pooled * sample["cards_per_pair"]}


def bootstrap_pair_ratio(samples: dict[str, list[PairSample]], seed: int, rounds: int = 1000) -> list[float]:
    """95% percentile interval of variance(independent) / variance(duplicate), resampling pairs."""
    rng = random.Random(seed)
    dup = [p.value for p in samples["duplicate"]]
    ind = [p.value for p in samples["independent"]]
    ratios: list[float] = []
    for _ in range(rounds):
        d = statistics.variance(rng.choices(dup, k=len(dup)))
        i = statistics.variance(rng.choices(ind, k=len(ind)))
        if d > 0:
            ratios.append(i / d)
    if len(ratios) < rounds // 2:
        return [math.nan, math.nan]
    ratios.sort()
    return [ratios[int(0.025 * len(ratios))], ratios[int(0.975 * len(ratios)) - 1]]


def play_all(plan: dict[tuple[str, str, str], int], seed: int, samples: int,
             pool: Any) -> dict[tuple[str, str, str], list[PairSample]]:
    """Play every planned sample (match-up, unit, pairing) -> pairs; slow match-ups in small chunks."""
    out: dict[tuple[str, str, str], list[PairSample]] = {}
    for key, count in plan.items():
        matchup, unit, pairing = key
        candidate, baseline = MATCHUPS[matchup]
        tasks = pair_tasks(candidate, baseline, unit, pairing, count, seed, samples)
        start = time.perf_counter()
        chunk = 1 if "lookahead" in (candidate, baseline) else 16
        games = pool.map(play_game, tasks, chunksize=chunk) if pool else [play_game(t) for t in tasks]
        out[key] = to_pairs(unit, games)
        print(f"  {matchup:16} {unit:5} {pairing:11} {count:5} pairs  {time.perf_counter() - start:6.1f} s",
              file=sys.stderr, flush=True)
    return out


def analyse(chosen: Sequence[str], samples: dict[tuple[str, str, str], list[PairSample]], seed: int, runs: int,
            cap: int) -> tuple[dict[str, Any], list[BootstrapTask]]:
    """Per match-up and unit: the figures of analyse_unit(), the variance ratio's interval, the SPRT
    bounds and Wald's predictions; and the bootstrap tasks of the sequential tests still to run."""
    matchups: dict[str, Any] = {}
    tasks: list[BootstrapTask] = []
    for m in chosen:
        units = {}
        for u in UNITS:
            by_pairing = {p: samples[(m, u, p)] for p in PAIRINGS}
            analysis = analyse_unit(u, by_pairing)
            analysis["variance_ratio_ci"] = bootstrap_pair_ratio(by_pairing, seed)
            if analysis["delta"] is not None:
                bounds = SprtBounds(0.0, analysis["delta"], ALPHA, BETA)
                analysis["bounds"] = [bounds.lower, bounds.upper]
                for p in PAIRINGS:
                    tasks.append(BootstrapTask((m, u, p), tuple(by_pairing[p]), bounds, runs, cap, seed))
                    analysis["pairings"][p].update(wald_predictions(u, bounds, analysis["effect"],
                                                                    analysis["pairings"][p]))
            units[u] = analysis
        candidate, baseline = MATCHUPS[m]
        matchups[m] = {"candidate": candidate, "baseline": baseline, "units": units}
    return matchups, tasks


def fmt(value: float | None, digits: int = 2) -> str:
    """A figure with thousands separators, or n/a when missing or infinite."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{value:,.{digits}f}"


def print_tables(report: dict[str, Any]) -> None:
    """The figures as four plain-text tables."""
    rows = [(m, u, analysis) for m, matchup in report["matchups"].items() for u, analysis in matchup["units"].items()]
    print("\nEffect (both pairings pooled; the SPRT's H1 bound delta is half of it, H0 bound 0)")
    print(f"{'match-up':17} {'unit':6} {'pairs':>6} {'effect':>9} {'95% interval':>19} {'delta':>8}")
    for m, u, a in rows:
        n = sum(a["pairings"][p]["pairs"] for p in PAIRINGS)
        name = "pts/deal" if u == "deals" else "Elo"
        print(f"{m:17} {u:6} {n:6} {fmt(a['effect']):>9} {fmt(a['effect_ci'][0]):>9}..{fmt(a['effect_ci'][1]):<9}"
              f" {fmt(a['delta']):>8} {name}")
    print("\nVariance of the pair statistic (deals: mean margin of the pair; games: pair score 0..2)")
    print(f"{'match-up':17} {'unit':6} {'duplicate':>10} {'independent':>12} {'ratio ind/dup':>14}"
          f" {'95% (bootstrap)':>16}")
    for m, u, a in rows:
        d, i = a["pairings"]["duplicate"], a["pairings"]["independent"]
        ci = a["variance_ratio_ci"]
        print(f"{m:17} {u:6} {fmt(d['variance'], 3):>10} {fmt(i['variance'], 3):>12} {fmt(a['variance_ratio']):>14}"
              f" {fmt(ci[0]):>7}..{fmt(ci[1]):<7}")
    print("\nInformation per card: (effect / sd of the pair statistic)^2 / cards dealt per pair, x 1000")
    print(f"{'match-up':17} {'unit':6} {'pairing':12} {'(eff/sd)^2':>10} {'cards/pair':>11} {'info/card':>10}")
    for m, u, a in rows:
        for p in PAIRINGS:
            s = a["pairings"][p]
            print(f"{m:17} {u:6} {p:12} {fmt(s['information_per_pair'], 3):>10} {fmt(s['cards_per_pair'], 0):>11}"
                  f" {fmt(1000 * s['information_per_card'], 3):>10}")
    print("\nSequential test to a decision, bootstrapped from the measured pairs (alpha = beta = 0.05)")
    print("(sample effect: the mean of the resampled pairs, per deal or Elo; Wald cards: arena.stats.expected_units")
    print(" at the pooled effect with this pairing's variance and cards per pair, a cross-check on equal effect)")
    print(f"{'match-up':17} {'unit':6} {'pairing':12} {'effect':>7} {'pairs mean':>10} {'median':>7} {'games':>7}"
          f" {'deals':>7} {'cards mean':>11} {'median':>7} {'H1':>6} {'capped':>6} {'Wald cards':>10}")
    for m, u, a in rows:
        for p in PAIRINGS:
            s = a["pairings"][p].get("sequential")
            if s is None:
                print(f"{m:17} {u:6} {p:12} (no positive effect: no test)")
                continue
            sample = a["pairings"][p]
            print(f"{m:17} {u:6} {p:12} {fmt(sample['effect']):>7} {fmt(s['mean_pairs'], 1):>10}"
                  f" {fmt(s['median_pairs'], 0):>7} {fmt(s['mean_games'], 1):>7} {fmt(s['mean_deals'], 1):>7}"
                  f" {fmt(s['mean_cards'], 0):>11} {fmt(s['median_cards'], 0):>7} {s['share_h1']:6.1%}"
                  f" {s['share_capped']:6.1%} {fmt(sample['wald_cards_pooled_effect'], 0):>10}")


def finite_json(value: Any) -> Any:
    """JSON has no infinity or NaN: such floats become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value


def main(argv: list[str] | None = None) -> int:
    """Play, analyse, bootstrap, print the tables and write the JSON; 0 on success."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matchups", default=",".join(MATCHUPS), help=f"comma-separated, of {', '.join(MATCHUPS)}")
    parser.add_argument("--deal-pairs", type=int, default=2000, help="greedy-random pairs per pairing, unit deals")
    parser.add_argument("--game-pairs", type=int, default=400, help="greedy-random pairs per pairing, unit games")
    parser.add_argument("--lookahead-deal-pairs", type=int, default=200, help="lookahead-greedy pairs, unit deals")
    parser.add_argument("--lookahead-game-pairs", type=int, default=100, help="lookahead-greedy pairs, unit games")
    parser.add_argument("--samples", type=int, default=8, help="lookahead determinisations per move (default 8)")
    parser.add_argument("--runs", type=int, default=500, help="bootstrapped sequential tests per combination")
    parser.add_argument("--cap", type=int, default=10_000,
                        help="pairs after which a bootstrapped test gives up (arena compare: 20,000 games)")
    parser.add_argument("--seed", type=int, default=1, help="deck and bootstrap seed (default 1)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPUs)")
    parser.add_argument("--json", type=Path, help="also write the figures (and every pair) to this file")
    args = parser.parse_args(argv)
    chosen = [m.strip() for m in args.matchups.split(",") if m.strip()]
    unknown = [m for m in chosen if m not in MATCHUPS]
    if unknown or not chosen:
        parser.error(f"unknown match-up(s) {unknown}; choose from {', '.join(MATCHUPS)}")
    counts = {"greedy-random": {"deals": args.deal_pairs, "games": args.game_pairs},
              "lookahead-greedy": {"deals": args.lookahead_deal_pairs, "games": args.lookahead_game_pairs}}
    if min(counts[m][u] for m in chosen for u in UNITS) < 2:
        parser.error("every sample needs at least 2 pairs")
    # the slow match-up first, so the fast one's many small games fill in at the end
    chosen.sort(key=lambda m: "lookahead" not in m)
    plan = {(m, u, p): counts[m][u] for m in chosen for u in UNITS for p in PAIRINGS}

    started = time.perf_counter()
    print(f"playing ({args.jobs} job(s)):", file=sys.stderr)
    with multiprocessing.Pool(args.jobs) if args.jobs > 1 else contextlib.nullcontext() as pool:
        samples = play_all(plan, args.seed, args.samples, pool)
        played = time.perf_counter() - started
        matchups, tasks = analyse(chosen, samples, args.seed, args.runs, args.cap)
        print(f"bootstrapping {len(tasks)} sequential tests x {args.runs} runs", file=sys.stderr, flush=True)
        results = pool.map(run_sequential, tasks, chunksize=1) if args.jobs > 1 else [run_sequential(t) for t in tasks]
    for task, result in zip(tasks, results):
        m, u, p = task.key
        matchups[m]["units"][u]["pairings"][p]["sequential"] = result
    elapsed = time.perf_counter() - started
    report = {
        "format": "royal-casino-bench-duplicate", "version": 1,
        "command": " ".join(["python", "bench/bench_duplicate.py", *(argv if argv is not None else sys.argv[1:])]),
        "date": time.strftime("%Y-%m-%d"), "python": platform.python_version(), "cpus": os.cpu_count(),
        "settings": {"seed": args.seed, "samples": args.samples, "jobs": args.jobs, "runs": args.runs,
                     "cap_pairs": args.cap, "alpha": ALPHA, "beta": BETA, "min_pairs": DEFAULT_MIN_PAIRS,
                     "cards_per_deal": CARDS_PER_DEAL, "pairs": {m: counts[m] for m in chosen}},
        "note": ("delta = half the effect measured for the match-up in that unit (H0: effect <= 0, "
                 "H1: effect >= delta), so both units ask the same relative question; the bootstrap "
                 "resamples each pairing's own pairs, whose mean is that sample's effect"),
        "matchups": matchups,
        "seconds": {"playing": round(played, 1), "total": round(elapsed, 1)},
        "pairs": {f"{m}/{u}/{p}": [[s.value, *s.scores, *s.deals] for s in pairs]
                  for (m, u, p), pairs in samples.items()},
    }
    print(f"{report['command']}  ({report['date']}, Python {report['python']}, {report['cpus']} CPUs,"
          f" lookahead {args.samples} samples/move, {args.runs} bootstrap runs, cap {args.cap} pairs)")
    print("H0: effect <= 0, H1: effect >= delta = half the effect measured for that match-up in that unit,")
    print(f"so each unit is asked the same relative question; alpha = beta = {ALPHA}, min {DEFAULT_MIN_PAIRS} pairs.")
    print_tables(report)
    print(f"\nplaying {played:.0f} s, total {elapsed:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(finite_json(report), indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
