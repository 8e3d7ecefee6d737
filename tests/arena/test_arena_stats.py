"""Sequential statistics for `arena compare` (arena.stats).

* Hand-worked tables: Elo <-> score, Wald's bounds, Student-t quantiles, the margin LLR, mean and
  interval of four pairs, pentanomial counts -> mean, variance, LLR (a two-value case solved by
  hand, a symmetric case that must give 0, and closeness to the normal approximation).
* Input checking and the bookkeeping: pair scores, game scores, wdl, min_pairs, summaries.
* Wald's operating characteristic and expected sample size worked out by hand.
* Simulations of the sequential tests themselves, seeded: with the true effect on a bound the
  wrong decision is taken at most alpha (beta) + 3 standard errors of the time, for both units,
  and expected_units() predicts the mean number of pairs within 15%.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate

import pytest

from arena.rating.stats import (
    DEFAULT_MIN_PAIRS,
    ELO_LIMIT,
    PAIR_SCORES,
    TYPICAL_PENTANOMIAL,
    MarginSprt,
    PentanomialSprt,
    SprtBounds,
    elo_to_score,
    expected_units,
    fixed_length_summary,
    gsprt_llr,
    multinomial_glr,
    pentanomial_variance,
    score_to_elo,
    student_t_quantile,
    tilted_pentanomial,
)

LN19 = math.log(19.0)  # Wald's |A| = |B| for alpha = beta = 0.05
RUNS = 2000
MAX_PAIRS = 20000


# --- Elo, bounds, quantiles -------------------------------------------------------------------------------------


def test_elo_score_known_values_and_round_trip() -> None:
    assert elo_to_score(0) == 0.5
    assert elo_to_score(400) == pytest.approx(10 / 11, abs=1e-15)  # 1 / (1 + 10^-1)
    assert elo_to_score(-400) == pytest.approx(1 / 11, abs=1e-15)
    assert score_to_elo(10 / 11) == pytest.approx(400, abs=1e-9)
    assert score_to_elo(0.5) == 0.0
    for elo in (-700, -120.5, -3, 0.25, 40, 350, 800):
        assert score_to_elo(elo_to_score(elo)) == pytest.approx(elo, abs=1e-9)
    assert elo_to_score(-1e6) == 0.0 and elo_to_score(1e6) == 1.0  # no overflow either way


def test_score_to_elo_clamps_and_rejects_scores_outside_0_1() -> None:
    assert score_to_elo(1.0) == ELO_LIMIT and score_to_elo(0.0) == -ELO_LIMIT
    assert score_to_elo(1 - 1e-12) == ELO_LIMIT
    for bad in (-0.01, 1.01, math.nan):
        with pytest.raises(ValueError):
            score_to_elo(bad)


def test_wald_bounds_for_five_percent_errors() -> None:
    bounds = SprtBounds(0, 5)
    assert bounds.llr_lower == pytest.approx(-2.944439, abs=1e-6)  # ln(0.05 / 0.95) = -ln 19
    assert bounds.llr_upper == pytest.approx(2.944439, abs=1e-6)  # ln(0.95 / 0.05) = ln 19
    asymmetric = SprtBounds(0, 5, alpha=0.01, beta=0.1)
    assert asymmetric.llr_lower == pytest.approx(math.log(0.1 / 0.99))
    assert asymmetric.llr_upper == pytest.approx(math.log(0.9 / 0.01))


@pytest.mark.parametrize("lower,upper,alpha,beta", [(1, 1, 0.05, 0.05), (2, 1, 0.05, 0.05), (0, 1, 0, 0.05),
                                                    (0, 1, 0.05, 1.0), (0, 1, 0.6, 0.5)])
def test_bounds_reject_empty_hypotheses_and_impossible_error_rates(lower: float, upper: float, alpha: float,
                                                                    beta: float) -> None:
    with pytest.raises(ValueError):
        SprtBounds(lower, upper, alpha, beta)


@pytest.mark.parametrize("df,quantile", [(1, 12.706205), (2, 4.302653), (3, 3.182446), (4, 2.776445), (10, 2.228139),
                                         (19, 2.093024), (30, 2.042272), (120, 1.979930), (500, 1.964720),
                                         (10_000, 1.960201)])
def test_student_t_quantiles_match_the_table(df: int, quantile: float) -> None:
    assert student_t_quantile(0.975, df) == pytest.approx(quantile, abs=2e-6)
    assert student_t_quantile(0.025, df) == pytest.approx(-quantile, abs=2e-6)


# --- deals: hand-worked ----------------------------------------------------------------------------------------


def test_margin_llr_mean_and_interval_by_hand() -> None:
    test = MarginSprt(SprtBounds(0.0, 0.5))
    for margin in (1, -0.5, 2, 0.5):
        test.add(margin)
    # mean = 3 / 4 = 0.75; deviations 0.25, -1.25, 1.25, -0.25; squares sum to
    # 0.0625 + 1.5625 + 1.5625 + 0.0625 = 3.25: variance 3.25 / 4 = 0.8125 (LLR), 3.25 / 3 (interval).
    # LLR = N/2 ln((v + (0.75 - 0)^2) / (v + (0.75 - 0.5)^2)) = 2 ln(1.375 / 0.875) = 2 ln(11/7)
    assert test.pairs == 4
    assert test.llr() == pytest.approx(2 * math.log(11 / 7), abs=1e-12)
    # Its first-order expansion, the normal approximation: 4 * 0.5 * (1.5 - 0.5) / (2 * 0.8125) = 16/13
    assert gsprt_llr(4, 0.75, 0.8125, 0.0, 0.5) == pytest.approx(16 / 13, abs=1e-12)
    # 95% interval: 0.75 +- t(0.975, 3) sqrt((3.25 / 3) / 4) = 0.75 +- 3.182446 * 0.520416
    mean, low, high = test.estimate()
    assert mean == 0.75
    assert (low, high) == pytest.approx((0.75 - 1.656203, 0.75 + 1.656203), abs=1e-5)
    summary = test.summary()
    assert summary["variance"] == pytest.approx(3.25 / 3) and summary["ci"] == pytest.approx([low, high])
    assert (summary["unit"], summary["pairs"], summary["units"], summary["games"]) == ("deals", 4, 8, 8)
    assert summary["llr"] == test.llr() and summary["llr_bounds"] == pytest.approx([-LN19, LN19])
    assert summary["decision"] is None  # 4 pairs < min_pairs
    fixed = fixed_length_summary("deals", [1, -0.5, 2, 0.5])  # the same estimates, without the test's keys
    assert "llr" not in fixed and fixed == {key: summary[key] for key in fixed}


def test_identical_margins_give_a_finite_llr_and_wait_for_min_pairs() -> None:
    # Pair margins all 2, bounds [0, 1]: variance 0 is floored at (1/2)^2, so after N pairs
    # LLR = N/2 ln((0.25 + 4) / (0.25 + 1)) = N/2 ln 3.4 = 0.612 N: past ln 19 from N = 5, but no
    # decision before min_pairs.
    test = MarginSprt(SprtBounds(0.0, 1.0), min_pairs=10)
    for n in range(1, 11):
        test.add(2.0)
        expected = 0.0 if n < 2 else n / 2 * math.log(3.4)
        assert test.llr() == pytest.approx(expected)
        assert test.decision() == ("H1" if n >= 10 else None)
    same = MarginSprt(SprtBounds(0.0, 1.0))  # identical bots, deterministic: every pair margin 0
    for _ in range(DEFAULT_MIN_PAIRS):
        same.add(0)
    assert same.llr() == pytest.approx(DEFAULT_MIN_PAIRS / 2 * math.log(0.25 / 1.25))
    assert same.decision() == "H0"


def test_margin_input_checks_and_empty_states() -> None:
    test = MarginSprt(SprtBounds(0, 1))
    with pytest.raises(ValueError):
        test.estimate()
    for bad in (math.nan, math.inf):
        with pytest.raises(ValueError):
            test.add(bad)
    assert test.pairs == 0 and test.llr() == 0.0
    test.add(3)
    assert test.estimate() == (3.0, -math.inf, math.inf)
    summary = test.summary()
    assert summary["ci"] == [None, None] and summary["variance"] is None
    json.dumps(summary, allow_nan=False)
    with pytest.raises(ValueError):
        fixed_length_summary("points", [1])


# --- games: hand-worked ----------------------------------------------------------------------------------------


def test_pentanomial_mean_variance_and_llr_by_hand() -> None:
    bounds = SprtBounds(0, 10)
    test = PentanomialSprt.from_counts(bounds, [2, 3, 10, 4, 1])
    # N = 20 pairs; total score 0*2 + 0.5*3 + 1*10 + 1.5*4 + 2*1 = 19.5: mean 0.975 per pair, 0.4875 per game.
    # Squared deviations: 2*0.975^2 + 3*0.475^2 + 10*0.025^2 + 4*0.525^2 + 1*1.025^2
    #   = 1.90125 + 0.676875 + 0.00625 + 1.1025 + 1.050625 = 4.7375: variance 0.236875 (divisor 20).
    summary = test.summary()
    assert summary["score"] == pytest.approx(0.4875) and summary["variance"] == pytest.approx(4.7375 / 19)
    assert pentanomial_variance(test.counts) == pytest.approx(0.236875)
    # theta0 = 2 s(0) = 1, theta1 = 2 s(10) = 2 / (1 + 10^-0.025) = 1.028774 (per pair).
    theta1 = 2 / (1 + 10 ** -0.025)
    # Normal approximation: 20 (theta1 - 1)(1.95 - 1 - theta1) / (2 * 0.236875) = -0.09569
    approximate = 20 * (theta1 - 1) * (1.95 - 1 - theta1) / (2 * 0.236875)
    assert approximate == pytest.approx(-0.09569, abs=1e-5)
    assert gsprt_llr(20, 0.975, 0.236875, 1.0, theta1) == pytest.approx(approximate)
    # The exact GLR agrees with it to second order in theta1 - theta0: within 2% here.
    assert test.llr() == pytest.approx(approximate, rel=0.02)
    assert test.llr() != pytest.approx(approximate, rel=1e-4)
    # Elo: -400 log10(1 / 0.4875 - 1); interval 0.4875 +- t(0.975, 19) sqrt(4.7375 / 19 / 4 / 20)
    half = 2.093024 * math.sqrt(4.7375 / 19 / 4 / 20)
    elo, low, high = test.estimate()
    assert elo == pytest.approx(-400 * math.log10(1 / 0.4875 - 1))
    assert low == pytest.approx(-400 * math.log10(1 / (0.4875 - half) - 1), abs=1e-3)
    assert high == pytest.approx(-400 * math.log10(1 / (0.4875 + half) - 1), abs=1e-3)


def test_two_valued_sample_has_the_closed_form_glr() -> None:
    # Only pair scores 0 and 2: the distribution with mean theta is forced, P(2) = theta / 2, so
    # LLR = c2 ln(theta1 / theta0) + c0 ln((2 - theta1) / (2 - theta0)).
    theta1 = 2 * elo_to_score(40)
    by_hand = 7 * math.log(theta1 / 1.0) + 3 * math.log((2 - theta1) / 1.0)
    assert multinomial_glr([3, 7], [0.0, 2.0], 1.0, theta1) == pytest.approx(by_hand, abs=1e-12)
    # The test itself counts the three empty cells as 0.001 pairs each, which moves it very little.
    assert PentanomialSprt.from_counts(SprtBounds(0, 40), [3, 0, 0, 0, 7]).llr() == pytest.approx(by_hand, rel=1e-3)


def test_symmetric_counts_and_symmetric_bounds_give_zero_llr() -> None:
    assert PentanomialSprt.from_counts(SprtBounds(-30, 30), [1, 2, 4, 2, 1]).llr() == pytest.approx(0, abs=1e-12)
    assert PentanomialSprt.from_counts(SprtBounds(-30, 30), [1, 2, 4, 2, 2]).llr() > 0
    assert PentanomialSprt.from_counts(SprtBounds(-30, 30), [2, 2, 4, 2, 1]).llr() < 0


def test_pentanomial_counts_wdl_and_input_checks() -> None:
    test = PentanomialSprt(SprtBounds(0, 20))
    test.add_games(1, 0.5)
    test.add_games(0, 1)
    test.add_games(0, 0)
    test.add_games(1, 1.0)
    assert test.counts == (1, 0, 1, 1, 1) and test.wdl == (4, 1, 3) and test.pairs == 4
    for bad in (0.25, 2.5, -0.5, 3):
        with pytest.raises(ValueError):
            test.add(bad)
    with pytest.raises(ValueError):
        test.add_games(1, 0.75)
    assert test.counts == (1, 0, 1, 1, 1)  # a rejected pair changes nothing
    test.add(1.5)
    assert test.counts == (1, 0, 1, 2, 1) and test.wdl is None
    summary = test.summary()
    assert (summary["pairs"], summary["units"], summary["games"], summary["wdl"]) == (5, 10, 10, None)
    json.dumps(summary, allow_nan=False)
    with pytest.raises(ValueError):
        PentanomialSprt.from_counts(SprtBounds(0, 5), [1, 2, 3])
    with pytest.raises(ValueError):
        PentanomialSprt(SprtBounds(0, 5000))
    with pytest.raises(ValueError):
        PentanomialSprt(SprtBounds(0, 5)).estimate()
    assert fixed_length_summary("games", [1.5, 0, 1, 2, 1.5])["counts"] == [1, 0, 1, 2, 1]


def test_all_wins_estimate_is_clamped_and_the_test_waits_for_min_pairs() -> None:
    # All pairs won: the distribution with mean theta closest to that puts theta / 2 on 2 and the
    # rest on 0, so LLR = n ln(theta1 / theta0) = 0.10852 n (up to the empty cells' 0.001 pairs):
    # it passes ln 19 at the 28th pair. No decision before min_pairs in any case.
    test = PentanomialSprt(SprtBounds(0, 40))
    decisions = []
    for n in range(1, 31):
        test.add(2)
        assert test.llr() == pytest.approx(n * math.log(2 * elo_to_score(40)), rel=3e-3)
        decisions.append(test.decision())
    assert decisions.index("H1") + 1 == 28
    quick = PentanomialSprt(SprtBounds(0, 400), min_pairs=5)  # ln(20/11) = 0.598 per pair: past ln 19 at the 5th
    for _ in range(4):
        quick.add(2)
        assert quick.decision() is None
    quick.add(2)
    assert quick.decision() == "H1"
    assert test.estimate() == (ELO_LIMIT, ELO_LIMIT, ELO_LIMIT)


# --- Wald's approximations by hand --------------------------------------------------------------------------------


def test_expected_units_at_the_bounds_and_the_midpoint() -> None:
    bounds = SprtBounds(0.0, 1.0)
    # sigma^2 = 9, delta = 1: Var[LLR per pair] = 1/9; E[LLR per pair] = -1/18 at the lower bound.
    low = expected_units("deals", bounds, 0.0, 9.0)
    assert low["p_h1"] == pytest.approx(0.05) and low["llr_drift"] == pytest.approx(-1 / 18)
    # E[N] = (0.05 ln 19 - 0.95 ln 19) / (-1/18) = 0.9 * 18 ln 19
    assert low["pairs"] == pytest.approx(0.9 * 18 * LN19) and low["units"] == 2 * low["pairs"]
    high = expected_units("deals", bounds, 1.0, 9.0)
    assert high["p_h0"] == pytest.approx(0.05) and high["pairs"] == pytest.approx(low["pairs"])
    # Midpoint: P(H1) = 1/2 and E[N] = -A B / Var[LLR per pair] = 9 ln^2 19, also as the limit.
    middle = expected_units("deals", bounds, 0.5, 9.0)
    assert middle["p_h1"] == pytest.approx(0.5) and middle["pairs"] == pytest.approx(9 * LN19**2)
    near = expected_units("deals", bounds, 0.5 + 1e-6, 9.0)
    assert near["pairs"] == pytest.approx(middle["pairs"], rel=1e-6) and near["p_h1"] > 0.5
    assert expected_units("deals", bounds, 3.0, 9.0)["p_h1"] > 0.9999
    games = expected_units("games", SprtBounds(0, 40), 0, 0.25)
    assert games["p_h1"] == pytest.approx(0.05) and games["units"] == games["games"] == 2 * games["pairs"]
    default = expected_units("games", SprtBounds(0, 40), 0)
    assert default["variance"] == pytest.approx(pentanomial_variance(TYPICAL_PENTANOMIAL))
    for bad in (("deals", None), ("deals", 0.0), ("points", 1.0)):
        with pytest.raises(ValueError):
            expected_units(bad[0], bounds, 0.0, bad[1])


def test_tilted_pentanomial_has_the_target_mean() -> None:
    for elo in (-40, 0, 7.5, 40):
        probabilities = tilted_pentanomial(TYPICAL_PENTANOMIAL, 2 * elo_to_score(elo))
        assert sum(probabilities) == pytest.approx(1, abs=1e-12)
        assert sum(p * a for p, a in zip(probabilities, PAIR_SCORES)) == pytest.approx(2 * elo_to_score(elo),
                                                                                        abs=1e-12)
    assert tilted_pentanomial(TYPICAL_PENTANOMIAL, 1.0) == pytest.approx(TYPICAL_PENTANOMIAL, abs=1e-12)


# --- simulations of the sequential tests ------------------------------------------------------------------------


@dataclass(frozen=True)
class Tally:
    """Outcomes of many simulated sequential tests."""

    h1: int
    h0: int
    inconclusive: int
    mean_pairs: float

    @property
    def runs(self) -> int:
        return self.h1 + self.h0 + self.inconclusive


def simulate(make_test: Callable[[], MarginSprt | PentanomialSprt], values: Sequence[float],
             weights: Sequence[float], runs: int, seed: int) -> Tally:
    """Run the sequential test ``runs`` times on pairs drawn from (values, weights), each until it
    decides or reaches MAX_PAIRS (inconclusive)."""
    rng = random.Random(seed)
    cumulative = list(accumulate(weights))
    decided = {"H1": 0, "H0": 0, None: 0}
    total = 0
    for _ in range(runs):
        test = make_test()
        decision = None
        while decision is None and test.pairs < MAX_PAIRS:
            for value in rng.choices(values, cum_weights=cumulative, k=32):
                test.add(value)
                decision = test.decision()
                if decision is not None:
                    break
        decided[decision] += 1
        total += test.pairs
    return Tally(decided["H1"], decided["H0"], decided[None], total / runs)


def margin_distribution(shift: float) -> tuple[list[float], list[float], float]:
    """Pair margins: 20% exactly 0 (mirrored deals), 80% a normal of sd 4 rounded to halves and cut at
    +-11; symmetric, so its mean is exactly ``shift`` once shifted. Returns values, weights, variance."""
    grid = [k / 2 for k in range(-22, 23)]
    bell = [math.exp(-((x / 4) ** 2) / 2) for x in grid]
    weights = [0.8 * b / sum(bell) + (0.2 if x == 0 else 0.0) for x, b in zip(grid, bell)]
    variance = sum(w * x * x for w, x in zip(weights, grid))
    return [x + shift for x in grid], weights, variance


def error_limit(rate: float, runs: int) -> float:
    return rate + 3 * math.sqrt(rate * (1 - rate) / runs)


def test_margin_distribution_is_realistic() -> None:
    values, weights, variance = margin_distribution(0.25)
    assert 3 <= math.sqrt(variance) <= 4
    assert sum(w * v for w, v in zip(weights, values)) == pytest.approx(0.25, abs=1e-12)


@pytest.mark.parametrize("true_mean,wrong", [(0.0, "h1"), (0.5, "h0")])
def test_margin_sprt_error_rates_and_expected_pairs(true_mean: float, wrong: str) -> None:
    bounds = SprtBounds(0.0, 0.5)
    values, weights, variance = margin_distribution(true_mean)
    tally = simulate(lambda: MarginSprt(bounds), values, weights, RUNS, seed=11 if wrong == "h1" else 12)
    assert tally.runs == RUNS and tally.inconclusive == 0
    rate = getattr(tally, wrong) / RUNS
    assert 0.5 * bounds.alpha <= rate <= error_limit(bounds.alpha, RUNS)
    predicted = expected_units("deals", bounds, true_mean, variance)
    assert tally.mean_pairs == pytest.approx(predicted["pairs"], rel=0.15)


@pytest.mark.parametrize("true_elo,wrong", [(0.0, "h1"), (40.0, "h0")])
def test_pentanomial_sprt_error_rates_and_expected_pairs(true_elo: float, wrong: str) -> None:
    bounds = SprtBounds(0.0, 40.0)
    probabilities = tilted_pentanomial(TYPICAL_PENTANOMIAL, 2 * elo_to_score(true_elo))
    tally = simulate(lambda: PentanomialSprt(bounds), PAIR_SCORES, probabilities, RUNS,
                     seed=21 if wrong == "h1" else 22)
    assert tally.runs == RUNS and tally.inconclusive == 0
    rate = getattr(tally, wrong) / RUNS
    assert 0.5 * bounds.alpha <= rate <= error_limit(bounds.alpha, RUNS)
    predicted = expected_units("games", bounds, true_elo, pentanomial_variance(probabilities))
    assert tally.mean_pairs == pytest.approx(predicted["pairs"], rel=0.15)


def test_midpoint_is_a_coin_toss_and_takes_walds_limit_of_pairs() -> None:
    runs = 1000
    bounds = SprtBounds(0.0, 0.5)
    values, weights, variance = margin_distribution(0.25)
    deals = simulate(lambda: MarginSprt(bounds), values, weights, runs, seed=31)
    predicted = expected_units("deals", bounds, 0.25, variance)
    assert deals.h1 / runs == pytest.approx(0.5, abs=3 * math.sqrt(0.25 / runs))
    assert deals.mean_pairs == pytest.approx(predicted["pairs"], rel=0.15)

    games_bounds = SprtBounds(-20.0, 20.0)
    probabilities = tilted_pentanomial(TYPICAL_PENTANOMIAL, 1.0)
    games = simulate(lambda: PentanomialSprt(games_bounds), PAIR_SCORES, probabilities, 400, seed=32)
    predicted = expected_units("games", games_bounds, 0.0, pentanomial_variance(probabilities))
    assert games.h1 / 400 == pytest.approx(0.5, abs=3 * math.sqrt(0.25 / 400))
    assert games.mean_pairs == pytest.approx(predicted["pairs"], rel=0.15)
