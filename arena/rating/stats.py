"""Sequential statistics for comparing a candidate bot with a baseline over duplicate pairs.

Two units: ``deals`` (the pair statistic is the candidate's mean point margin over the two games
of a duplicated deal) and ``games`` (the candidate's score over two games to 21, the pentanomial
model). Both run a generalised SPRT (Wald's bounds on a generalised log-likelihood ratio): deals
under a normal model of unknown variance, games under the pentanomial model with the maximum-
likelihood distribution under each hypothesis (Van den Bergh, as fishtest computes it). Expected
sample sizes use Van den Bergh's normal approximation. docs/statistics.md gives the formulas,
their sources, the simulations behind these choices and the caveats.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import NormalDist

UNITS = ("deals", "games")
# score_to_elo clamps to +-this: a sample of only wins (or only losses) has no finite Elo.
ELO_LIMIT = 1000.0
PAIR_SCORES = (0.0, 0.5, 1.0, 1.5, 2.0)
GAME_SCORES = (0.0, 0.5, 1.0)
# fishtest's regularisation: an empty pentanomial cell counts as this many pairs.
PSEUDO_COUNT = 1e-3
# No decision before this many pairs: fewer say too little about the spread of the pair statistic.
DEFAULT_MIN_PAIRS = 10
# Probabilities of pair scores 0, .5, 1, 1.5, 2 for two equal bots: a guess (draws are rare in
# games to 21, and duplicate pairs mostly split 1-1), used only when no variance is given.
TYPICAL_PENTANOMIAL = (0.12, 0.02, 0.72, 0.02, 0.12)


def elo_to_score(elo: float) -> float:
    """Expected per-game score of a side ``elo`` logistic Elo stronger: 1 / (1 + 10^(-elo/400))."""
    if elo >= 0:
        return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))
    odds = 10.0 ** (elo / 400.0)  # written this way so a very negative Elo cannot overflow
    return odds / (1.0 + odds)


def score_to_elo(score: float) -> float:
    """Logistic Elo difference that gives the per-game ``score`` (0..1), clamped to +-ELO_LIMIT."""
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"a per-game score is between 0 and 1, got {score}")
    if score <= 0.0:
        return -ELO_LIMIT
    if score >= 1.0:
        return ELO_LIMIT
    elo = -400.0 * math.log10(1.0 / score - 1.0)
    return max(-ELO_LIMIT, min(ELO_LIMIT, elo))


def student_t_quantile(p: float, df: int) -> float:
    """The p-quantile of Student's t with ``df`` degrees of freedom (0 < p < 1, df >= 1).

    Exact (closed-form CDF, Abramowitz & Stegun 26.7.3-4, inverted by bisection) up to 200 degrees
    of freedom, the Cornish-Fisher expansion (A&S 26.7.5, error below 1e-9) beyond.
    """
    if not 0.0 < p < 1.0 or df < 1:
        raise ValueError(f"need 0 < p < 1 and df >= 1, got p={p}, df={df}")
    if p < 0.5:
        return -student_t_quantile(1.0 - p, df)
    if p == 0.5:
        return 0.0
    if df > 200:
        x = NormalDist().inv_cdf(p)
        g1 = (x**3 + x) / 4
        g2 = (5 * x**5 + 16 * x**3 + 3 * x) / 96
        g3 = (3 * x**7 + 19 * x**5 + 17 * x**3 - 15 * x) / 384
        g4 = (79 * x**9 + 776 * x**7 + 1482 * x**5 - 1920 * x**3 - 945 * x) / 92160
        return x + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4
    target = 2.0 * p - 1.0  # P(|T| <= t)
    low, high = 0.0, math.pi / 2
    for _ in range(100):
        theta = (low + high) / 2
        if _t_central_probability(theta, df) < target:
            low = theta
        else:
            high = theta
    return math.sqrt(df) * math.tan((low + high) / 2)


def _t_central_probability(theta: float, df: int) -> float:
    """P(|T| <= t) for t = sqrt(df) tan(theta): A&S 26.7.3 (odd df) and 26.7.4 (even df)."""
    c2 = math.cos(theta) ** 2
    if df % 2 == 1:
        term, total = math.cos(theta), 0.0
        for k in range(1, (df - 1) // 2 + 1):
            total += term
            term *= c2 * (2 * k) / (2 * k + 1)
        return 2.0 / math.pi * (theta + math.sin(theta) * total)
    term, total = 1.0, 0.0
    for k in range(1, df // 2 + 1):
        total += term
        term *= c2 * (2 * k - 1) / (2 * k)
    return math.sin(theta) * total


@dataclass(frozen=True)
class SprtBounds:
    """H0: effect <= lower, H1: effect >= upper (points per deal or Elo), with error rates alpha, beta."""

    lower: float
    upper: float
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        if not self.lower < self.upper:
            raise ValueError(f"the lower bound must be below the upper one, got [{self.lower}, {self.upper}]")
        if not (0.0 < self.alpha < 1.0 and 0.0 < self.beta < 1.0 and self.alpha + self.beta < 1.0):
            raise ValueError(f"need 0 < alpha, beta and alpha + beta < 1, got {self.alpha}, {self.beta}")

    @property
    def llr_lower(self) -> float:
        """Wald's A = ln(beta / (1 - alpha)): accept H0 at or below it."""
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def llr_upper(self) -> float:
        """Wald's B = ln((1 - beta) / alpha): accept H1 at or above it."""
        return math.log((1.0 - self.beta) / self.alpha)


def gsprt_llr(pairs: float, mean: float, variance: float, theta0: float, theta1: float) -> float:
    """Van den Bergh's normal approximation of the generalised LLR of mean theta1 against theta0:
    N (theta1 - theta0) (2 mean - theta0 - theta1) / (2 variance); what expected_units assumes."""
    return pairs * (theta1 - theta0) * (2.0 * mean - theta0 - theta1) / (2.0 * variance)


def normal_glr(pairs: float, mean: float, variance: float, theta0: float, theta1: float) -> float:
    """Generalised LLR of mean theta1 against theta0 for normal values of unknown variance, from the
    mean and the divisor-N variance: N/2 ln((v + (mean - theta0)^2) / (v + (mean - theta1)^2)).
    Its first-order expansion in theta1 - theta0 is gsprt_llr()."""
    return pairs / 2.0 * math.log((variance + (mean - theta0) ** 2) / (variance + (mean - theta1) ** 2))


def _secular_root(offsets: list[float], weights: list[float]) -> float:
    """The x in (-1/max d, -1/min d) with sum_i w_i d_i / (1 + x d_i) = 0, for weights w_i > 0 and
    offsets d_i of both signs: Newton's method kept inside a shrinking bracket."""
    low = -1.0 / max(offsets)
    high = -1.0 / min(offsets)
    cells = list(zip(offsets, weights))
    x = 0.0
    for _ in range(200):
        value = slope = 0.0
        for d, w in cells:
            r = d / (1.0 + x * d)
            value += w * r
            slope += w * r * r
        if value == 0.0:
            return x
        if value > 0.0:  # the function decreases in x: the root lies above x
            low = x
        else:
            high = x
        step = x + value / slope
        if abs(step - x) <= 1e-13 * max(1.0, abs(x)):
            return step
        x = step if low < step < high else (low + high) / 2
    return x


def multinomial_glr(counts: Iterable[float], values: Iterable[float], theta0: float, theta1: float) -> float:
    """Generalised LLR of mean theta1 against theta0 for a discrete distribution on ``values``,
    each the maximum-likelihood distribution with that mean given the counts (all positive):
    p_i = phat_i / (1 + x (a_i - theta)), x from the secular equation (Van den Bergh)."""
    weights = list(counts)
    points = list(values)
    llr = 0.0
    for theta, sign in ((theta0, 1.0), (theta1, -1.0)):
        offsets = [a - theta for a in points]
        x = _secular_root(offsets, weights)
        llr += sign * sum(w * math.log1p(x * d) for d, w in zip(offsets, weights))
    return llr


def _decide(pairs: int, min_pairs: int, llr: float, bounds: SprtBounds) -> str | None:
    if pairs < min_pairs:
        return None
    if llr >= bounds.llr_upper:
        return "H1"
    if llr <= bounds.llr_lower:
        return "H0"
    return None


def _mean_interval(n: float, mean: float, unbiased_variance: float, confidence: float) -> tuple[float, float]:
    """Student-t interval of a mean from ``n`` values; infinite below two values."""
    if n < 2:
        return -math.inf, math.inf
    half = student_t_quantile(0.5 + confidence / 2, max(1, round(n) - 1)) * math.sqrt(unbiased_variance / n)
    return mean - half, mean + half


def _finite(value: float) -> float | None:
    """JSON has no infinity or NaN: such a value becomes null."""
    return value if math.isfinite(value) else None


def _margin_description(n: int, mean: float, m2: float, confidence: float) -> dict:
    variance = m2 / (n - 1) if n >= 2 else math.nan
    low, high = _mean_interval(n, mean, variance, confidence)
    return {
        "unit": "deals", "pairs": n, "units": 2 * n, "games": 2 * n,
        "mean": _finite(mean) if n else None, "variance": _finite(variance),
        "confidence": confidence, "ci": [_finite(low), _finite(high)],
    }


def _pair_score_moments(counts: Iterable[float]) -> tuple[float, float, float]:
    """Number of pairs, mean pair score and its variance with divisor N (the empirical distribution's)."""
    cells = list(counts)
    n = sum(cells)
    mean = sum(c * a for c, a in zip(cells, PAIR_SCORES)) / n
    variance = sum(c * (a - mean) ** 2 for c, a in zip(cells, PAIR_SCORES)) / n
    return n, mean, variance


def _elo_estimate(counts: tuple[int, ...], confidence: float) -> tuple[float, float, float]:
    """Elo of the mean per-game score, and the Student-t interval of that score turned into Elo."""
    n, mean, variance = _pair_score_moments(counts)
    score = mean / 2.0
    unbiased = variance * n / (n - 1) if n >= 2 else math.nan
    low, high = _mean_interval(n, score, unbiased / 4.0, confidence)
    return score_to_elo(score), score_to_elo(max(0.0, low)), score_to_elo(min(1.0, high))


def _pentanomial_description(counts: tuple[int, ...], wdl: tuple[int, int, int] | None, confidence: float) -> dict:
    n = sum(counts)
    described: dict = {"unit": "games", "pairs": n, "units": 2 * n, "games": 2 * n, "counts": list(counts),
                       "wdl": list(wdl) if wdl is not None else None, "confidence": confidence}
    if n == 0:
        return described | {"score": None, "variance": None, "elo": None, "elo_ci": [None, None]}
    _, mean, variance = _pair_score_moments(counts)
    elo, low, high = _elo_estimate(counts, confidence)
    return described | {"score": mean / 2.0, "variance": _finite(variance * n / (n - 1) if n >= 2 else math.nan),
                        "elo": elo, "elo_ci": [low, high]}


def _pair_index(pair_score: float) -> int:
    doubled = float(pair_score) * 2.0
    if doubled not in (0.0, 1.0, 2.0, 3.0, 4.0):
        raise ValueError(f"a pair score is one of 0, 0.5, 1, 1.5, 2, got {pair_score!r}")
    return int(doubled)


def _sprt_fields(llr: float, decision: str | None, bounds: SprtBounds, min_pairs: int) -> dict:
    return {"llr": llr, "llr_bounds": [bounds.llr_lower, bounds.llr_upper], "bounds": [bounds.lower, bounds.upper],
            "alpha": bounds.alpha, "beta": bounds.beta, "min_pairs": min_pairs, "decision": decision}


class MarginSprt:
    """GSPRT on the mean point margin per deal (unit ``deals``), fed one duplicate pair at a time.

    The LLR is normal_glr() with the divisor-N sample variance floored at ((upper - lower) / 2)^2,
    so identical margins give a finite LLR; no decision before ``min_pairs`` pairs (at least 2).
    """

    def __init__(self, bounds: SprtBounds, min_pairs: int = DEFAULT_MIN_PAIRS) -> None:
        self.bounds = bounds
        self.min_pairs = max(2, min_pairs)
        self._n = 0
        self._mean = 0.0
        self._m2 = 0.0  # sum of squared deviations from the running mean (Welford)

    def add(self, pair_margin: float) -> None:
        """Record one pair: the candidate's margin averaged over the pair's two games."""
        x = float(pair_margin)
        if not math.isfinite(x):
            raise ValueError(f"a pair margin is a finite number, got {pair_margin!r}")
        self._n += 1
        delta = x - self._mean
        self._mean += delta / self._n
        self._m2 += delta * (x - self._mean)

    @property
    def pairs(self) -> int:
        """Number of pairs recorded."""
        return self._n

    def llr(self) -> float:
        """The GSPRT log-likelihood ratio of H1 against H0 so far (0 below two pairs)."""
        if self._n < 2:
            return 0.0
        lower, upper = self.bounds.lower, self.bounds.upper
        variance = max(self._m2 / self._n, ((upper - lower) / 2.0) ** 2)
        return normal_glr(self._n, self._mean, variance, lower, upper)

    def decision(self) -> str | None:
        """"H1" (candidate better by at least ``upper``), "H0" (not better than ``lower``) or None: go on."""
        return _decide(self._n, self.min_pairs, self.llr(), self.bounds)

    def estimate(self, confidence: float = 0.95) -> tuple[float, float, float]:
        """Mean margin per deal and its Student-t interval (infinite below two pairs)."""
        if self._n == 0:
            raise ValueError("no pairs recorded yet")
        low, high = _mean_interval(self._n, self._mean, self._m2 / (self._n - 1) if self._n > 1 else math.nan,
                                   confidence)
        return self._mean, low, high

    def summary(self, confidence: float = 0.95) -> dict:
        """JSON-friendly state: pairs, mean, unbiased variance, interval, LLR, its bounds, decision."""
        return (_margin_description(self._n, self._mean, self._m2, confidence)
                | _sprt_fields(self.llr(), self.decision(), self.bounds, self.min_pairs))


class PentanomialSprt:
    """GSPRT on the Elo of the candidate (unit ``games``) from pair scores 0, .5, 1, 1.5, 2.

    Pairs come through add_games() (which also keeps game-level wins/draws/losses) or add()
    (pair score only; then ``wdl`` is None). The LLR is multinomial_glr() on the counts, an empty
    cell counting PSEUDO_COUNT pairs as in fishtest; no decision before ``min_pairs`` pairs (at least 2).
    """

    def __init__(self, bounds: SprtBounds, min_pairs: int = DEFAULT_MIN_PAIRS) -> None:
        if max(abs(bounds.lower), abs(bounds.upper)) > ELO_LIMIT:
            raise ValueError(f"Elo bounds are within +-{ELO_LIMIT:g}, got [{bounds.lower}, {bounds.upper}]")
        self.bounds = bounds
        self.min_pairs = max(2, min_pairs)
        self._counts = [0, 0, 0, 0, 0]
        self._wdl = [0, 0, 0]
        self._pairs_without_games = 0

    @classmethod
    def from_counts(cls, bounds: SprtBounds, counts: Iterable[int],
                    min_pairs: int = DEFAULT_MIN_PAIRS) -> "PentanomialSprt":
        """A test resumed from pentanomial counts (pairs scoring 0, .5, 1, 1.5, 2); ``wdl`` is None."""
        cells = [int(c) for c in counts]
        if len(cells) != 5 or min(cells) < 0:
            raise ValueError(f"pentanomial counts are five non-negative integers, got {cells}")
        test = cls(bounds, min_pairs)
        test._counts = cells
        test._pairs_without_games = sum(cells)
        return test

    def add(self, pair_score: float) -> None:
        """Record one pair by the candidate's total score over its two games; ValueError if not 0..2 by halves."""
        self._counts[_pair_index(pair_score)] += 1
        self._pairs_without_games += 1

    def add_games(self, score_game1: float, score_game2: float) -> None:
        """Record one pair by the candidate's score in each game (1 win, 0.5 draw, 0 loss)."""
        for score in (score_game1, score_game2):
            if float(score) not in GAME_SCORES:
                raise ValueError(f"a game score is 0, 0.5 or 1, got {score!r}")
        self._counts[_pair_index(float(score_game1) + float(score_game2))] += 1
        for score in (score_game1, score_game2):
            self._wdl[{1.0: 0, 0.5: 1, 0.0: 2}[float(score)]] += 1

    @property
    def counts(self) -> tuple[int, int, int, int, int]:
        """Pairs that scored 0, 0.5, 1, 1.5 and 2."""
        c = self._counts
        return c[0], c[1], c[2], c[3], c[4]

    @property
    def wdl(self) -> tuple[int, int, int] | None:
        """The candidate's game wins, draws, losses; None once a pair was recorded without its games."""
        if self._pairs_without_games:
            return None
        return self._wdl[0], self._wdl[1], self._wdl[2]

    @property
    def pairs(self) -> int:
        """Number of pairs recorded."""
        return sum(self._counts)

    def llr(self) -> float:
        """The GSPRT log-likelihood ratio of H1 against H0 so far (0 before any pair)."""
        if self.pairs == 0:
            return 0.0
        theta0, theta1 = (2.0 * elo_to_score(elo) for elo in (self.bounds.lower, self.bounds.upper))
        return multinomial_glr([c if c else PSEUDO_COUNT for c in self._counts], PAIR_SCORES, theta0, theta1)

    def decision(self) -> str | None:
        """"H1" (candidate at least ``upper`` Elo better), "H0" (at most ``lower``) or None: go on."""
        return _decide(self.pairs, self.min_pairs, self.llr(), self.bounds)

    def estimate(self, confidence: float = 0.95) -> tuple[float, float, float]:
        """Elo of the mean score and its interval: the Student-t interval of the score turned into Elo."""
        if self.pairs == 0:
            raise ValueError("no pairs recorded yet")
        return _elo_estimate(self.counts, confidence)

    def summary(self, confidence: float = 0.95) -> dict:
        """JSON-friendly state: counts, wdl, score, pair-score variance, Elo and interval, LLR, decision."""
        return (_pentanomial_description(self.counts, self.wdl, confidence)
                | _sprt_fields(self.llr(), self.decision(), self.bounds, self.min_pairs))


def fixed_length_summary(unit: str, pair_values: Iterable[float], confidence: float = 0.95) -> dict:
    """Estimates after a fixed number of pairs (no early stop): the keys of the SPRT summaries
    without the test's. ``pair_values`` are pair margins (deals) or pair scores (games)."""
    if unit == "deals":
        values = [float(v) for v in pair_values]
        if not all(math.isfinite(v) for v in values):
            raise ValueError("pair margins are finite numbers")
        mean = math.fsum(values) / len(values) if values else 0.0
        return _margin_description(len(values), mean, math.fsum((v - mean) ** 2 for v in values), confidence)
    if unit == "games":
        counts = [0, 0, 0, 0, 0]
        for value in pair_values:
            counts[_pair_index(value)] += 1
        return _pentanomial_description(tuple(counts), None, confidence)
    raise ValueError(f"unit is one of {UNITS}, got {unit!r}")


def tilted_pentanomial(shape: Iterable[float], mean: float) -> tuple[float, ...]:
    """The distribution p_i ~ shape_i e^(lambda a_i) over pair scores a_i whose mean is ``mean``
    (0 < mean < 2): the closest to ``shape`` in relative entropy with that mean."""
    weights = [float(w) for w in shape]
    if len(weights) != 5 or min(weights) < 0 or weights[0] <= 0 or weights[4] <= 0 or not 0.0 < mean < 2.0:
        raise ValueError("need five non-negative weights with both ends positive, and 0 < mean < 2")

    def tilted(lam: float) -> list[float]:
        raw = [w * math.exp(lam * (a - 1.0)) for w, a in zip(weights, PAIR_SCORES)]
        total = sum(raw)
        return [r / total for r in raw]

    low, high = -60.0, 60.0  # the mean is increasing in lambda
    for _ in range(200):
        lam = (low + high) / 2
        if sum(p * a for p, a in zip(tilted(lam), PAIR_SCORES)) < mean:
            low = lam
        else:
            high = lam
    return tuple(tilted((low + high) / 2))


def pentanomial_variance(probabilities: Iterable[float]) -> float:
    """Variance of the pair score under pentanomial probabilities (or counts) for scores 0..2."""
    return _pair_score_moments(probabilities)[2]


def expected_units(unit: str, bounds: SprtBounds, true_effect: float, variance: float | None = None) -> dict:
    """Wald's approximations for a true effect (points per deal, or Elo): probability of accepting
    H1 and expected number of pairs, from the pair statistic's ``variance`` at that effect.

    For games, ``variance`` None takes TYPICAL_PENTANOMIAL tilted to the true effect. ``units``
    counts games, two per pair (with unit deals each game is a single deal), like ``games``.
    """
    if unit == "deals":
        theta0, theta1, mu = bounds.lower, bounds.upper, true_effect
        if variance is None:
            raise ValueError("the deals unit needs the pair margin's variance")
    elif unit == "games":
        theta0, theta1, mu = (2.0 * elo_to_score(e) for e in (bounds.lower, bounds.upper, true_effect))
        if variance is None:
            variance = pentanomial_variance(tilted_pentanomial(TYPICAL_PENTANOMIAL, mu))
    else:
        raise ValueError(f"unit is one of {UNITS}, got {unit!r}")
    if not variance > 0:
        raise ValueError(f"the variance must be positive, got {variance}")
    a, b = bounds.llr_lower, bounds.llr_upper
    delta = theta1 - theta0
    drift = gsprt_llr(1, mu, variance, theta0, theta1)  # E[LLR per pair]
    llr_variance = delta * delta / variance  # Var[LLR per pair]
    # Wald's operating characteristic with h the non-zero root of E[exp(h Z)] = 1, Z ~ N(drift, llr_variance).
    h = -2.0 * drift / llr_variance
    if abs(h) < 1e-9:
        p_h1 = -a / (b - a)
        pairs = -a * b / llr_variance
    else:
        x = h * (b - a)
        p_h1 = math.exp(-h * b) if x > 700 else math.expm1(-h * a) / math.expm1(x)
        pairs = (p_h1 * b + (1.0 - p_h1) * a) / drift
    per_unit = 2  # a unit is a game (a one-deal game for deals): two per pair
    return {"unit": unit, "true_effect": true_effect, "variance": variance, "p_h1": p_h1, "p_h0": 1.0 - p_h1,
            "llr_drift": drift, "llr_variance": llr_variance, "pairs": pairs, "units": per_unit * pairs,
            "games": 2.0 * pairs}


def score_interval(scores: Iterable[float], confidence: float = 0.95) -> dict:
    """A mean per-game score (1 a win, 0.5 a draw, 0 a loss) with its Wilson score interval:
    ``{"games", "score", "ci": [low, high]}``. Wilson's, not the Student-t interval of the mean
    (``_mean_interval``), because that one shrinks to nothing when every game went the same way
    (2 wins of 2 would read "1.000 to 1.000"); Wilson's stays inside 0..1 and honest at 0 and n."""
    values = [float(v) for v in scores]
    return total_score_interval(math.fsum(values), len(values), confidence)


def total_score_interval(total: float, n: int, confidence: float = 0.95) -> dict:
    """``score_interval`` from the sum of ``n`` games' scores (what the database sums)."""
    if n == 0:
        return {"games": 0, "score": None, "ci": [None, None]}
    p = total / n
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(max(0.0, p * (1 - p) / n + z * z / (4 * n * n))) / (1 + z * z / n)
    return {"games": n, "score": p, "ci": [max(0.0, centre - half), min(1.0, centre + half)]}
