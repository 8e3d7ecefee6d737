"""Regression testing for agents: the candidate against a baseline in duplicate pairs, with a
sequential test that stops as soon as the answer is clear (``arena compare``), or against several
reference bots for a fixed number of units (``arena gauntlet``).

A *pair* is one deck played twice with the seats swapped (4 players: two copies of the candidate
as one team against two copies of the baseline, then the teams swap seats). With ``unit="deals"``
each game is a single deal (the rules' maximum-deals option set to 1) and a pair's statistic is
the candidate's point margin averaged over its two games; with ``unit="games"`` games go to 21 and
a pair scores 0, ½, 1, 1½ or 2 (the pentanomial model). The statistics are in arena/stats.py and
their justification in docs/statistics.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from casino.v1 import game_pb2
from referee.bots.endpoint import BotEndpoint
from referee.clock import TimeControl
from referee.match.report import GameReport
from referee.match.spec import FailurePolicy, GameSettings, GameSetup
from referee.packages.load import Packages, is_package
from referee.rules import RuleOptions
from referee.sandbox import SandboxSettings

from ..cores import available_cores
from ..rating.ratings import RatingBook
from ..rating.results import GameOutcome
from ..rating.stats import MarginSprt, PentanomialSprt, SprtBounds, fixed_length_summary
from ..schedule.pairings import deck_seed
from .executor import GameExecutor, SeatBot

FORFEIT_MARGIN = 11  # a forfeit in a one-deal game: as if the opponents took every point of the deal
CARDS_PER_DEAL = 52  # every card of the deck is dealt in each deal, whatever the table size
PAIRINGS = ("duplicate", "independent")


@dataclass(frozen=True)
class CompareSpec:
    """One comparison: who, how (unit, table, pairing), and when to stop."""

    candidate: SeatBot
    baseline: SeatBot
    unit: str = "deals"
    players: int = 2
    bounds: SprtBounds | None = None  # None: fixed length (``units`` games, no early stop)
    units: int = 0  # fixed length: games to play (rounded up to whole pairs)
    max_units: int = 20_000  # sequential: give up (inconclusive) after this many games
    seed: int = 1
    concurrency: int = field(default_factory=available_cores)  # games at once: the cores (arena/cores.py)
    pairing: str = "duplicate"  # "independent": the pair's two games get different decks (for measurements)
    time_control: TimeControl = field(default_factory=TimeControl)
    policy: FailurePolicy = FailurePolicy.FORFEIT
    label: str = "compare"
    rules: RuleOptions | None = None  # the table's rules (a ladder's challenges); None: the defaults

    def __post_init__(self) -> None:
        if self.unit not in ("deals", "games"):
            raise ValueError(f"unit is 'deals' or 'games', not {self.unit!r}")
        if self.players not in (2, 4):
            raise ValueError(f"players is 2 or 4, not {self.players}")
        if self.pairing not in PAIRINGS:
            raise ValueError(f"pairing is one of {PAIRINGS}, not {self.pairing!r}")
        if self.bounds is None and self.units < 1:
            raise ValueError("a fixed-length run needs units >= 1")
        if self.concurrency < 1:
            raise ValueError(f"concurrency is at least 1, not {self.concurrency}")

    @property
    def options(self) -> RuleOptions:
        rules = self.rules if self.rules is not None else RuleOptions(players=self.players)
        return dataclasses.replace(rules, max_deals=1) if self.unit == "deals" else rules

    @property
    def pair_limit(self) -> int:
        games = self.units if self.bounds is None else self.max_units
        return max(1, math.ceil(games / 2))


@dataclass(frozen=True)
class PairResult:
    """One finished pair: the statistic, the candidate's per-game scores, cards dealt, failures."""

    index: int
    value: float  # mean margin (deals) or pair score 0..2 (games)
    game_scores: tuple[float, float]  # candidate's score per game: 1 win, 0.5 draw, 0 loss
    margins: tuple[int, int]
    deals: int
    failures: tuple[str, ...]
    outcomes: tuple[GameOutcome, GameOutcome]


def candidate_seats(players: int, candidate_first: bool) -> tuple[bool, ...]:
    """Per seat, whether the candidate sits there (4 players: seats 0+2 are one team)."""
    first = tuple(seat % 2 == 0 for seat in range(players))
    return first if candidate_first else tuple(not c for c in first)


def _game_score(result: game_pb2.GameResult, side: int, side_rank: int) -> float:
    """1 for the winning side, ½ for a side sharing the top rank with no winner, else 0."""
    if result.winner_side == side:
        return 1.0
    return 0.5 if result.winner_side < 0 and side_rank == min(result.ranks) else 0.0


def score_game(report: GameReport, cand: tuple[bool, ...]) -> tuple[float, int, list[str]]:
    """The candidate's game score (1, ½, 0), point margin and failure descriptions of one game."""
    result = report.result
    players = len(cand)
    sides = [seat % 2 if players == 4 else seat for seat in range(players)]
    cand_side = sides[cand.index(True)]
    base_side = sides[cand.index(False)]
    forfeits = {f.seat for f in result.failures if f.forfeit}
    cand_forfeit = any(cand[s] for s in forfeits)
    base_forfeit = any(not cand[s] for s in forfeits)
    failures = [f"{'candidate' if cand[f.seat] else 'baseline'} seat {f.seat}: "
                f"{game_pb2.FailureKind.Name(f.kind).removeprefix('FAILURE_KIND_').lower()}: {f.reason}"
                for f in result.failures]
    if cand_forfeit and not base_forfeit:
        return 0.0, -FORFEIT_MARGIN, failures
    if base_forfeit and not cand_forfeit:
        return 1.0, FORFEIT_MARGIN, failures
    if cand_forfeit and base_forfeit:
        return 0.5, 0, failures
    margin = result.scores[cand_side] - result.scores[base_side]
    return _game_score(result, cand_side, result.ranks[cand.index(True)]), margin, failures


class Comparison:
    """Plays pairs through an executor and feeds them, in pair order, to the test."""

    def __init__(self, spec: CompareSpec, executor: GameExecutor,
                 on_pair: Callable[[Comparison, PairResult], None] | None = None) -> None:
        self.spec = spec
        self.executor = executor
        self.on_pair = on_pair or (lambda comparison, pair: None)
        if spec.bounds is None:
            self.test: MarginSprt | PentanomialSprt | None = None
        elif spec.unit == "deals":
            self.test = MarginSprt(spec.bounds)
        else:
            self.test = PentanomialSprt(spec.bounds)
        self.pairs: list[PairResult] = []
        self.book = RatingBook()
        self.started = time.monotonic()
        self.decision: str | None = None
        self._turns = 0

    def _setup(self, index: int, game: int) -> tuple[GameSetup, list[SeatBot]]:
        spec = self.spec
        candidate_first = game == 0
        cand = candidate_seats(spec.players, candidate_first)
        seats = [spec.candidate if c else spec.baseline for c in cand]
        if spec.pairing == "duplicate":
            seed = deck_seed(spec.seed, index)
        else:
            seed = deck_seed(spec.seed, 2 * index + game + (1 << 40))  # every game its own deck
        setup = GameSetup.build(
            GameSettings(spec.options, spec.time_control, spec.policy), match_id=spec.label,
            game_number=2 * index + game + 1, seat_bots=[0 if c else 1 for c in cand], seed=seed,
            game_id=f"{spec.label}-p{index + 1}-{'ab'[game]}",
        )
        return setup, seats

    async def _play_pair(self, index: int, gate: asyncio.Semaphore) -> PairResult:
        async def one(game: int) -> tuple[GameReport, tuple[bool, ...]]:
            setup, seats = self._setup(index, game)
            async with gate:
                return await self.executor.play(setup, seats), candidate_seats(self.spec.players, game == 0)

        (report_a, cand_a), (report_b, cand_b) = await asyncio.gather(one(0), one(1))
        score_a, margin_a, fail_a = score_game(report_a, cand_a)
        score_b, margin_b, fail_b = score_game(report_b, cand_b)
        value = (margin_a + margin_b) / 2 if self.spec.unit == "deals" else score_a + score_b
        outcomes = tuple(self._outcome(r, c) for r, c in ((report_a, cand_a), (report_b, cand_b)))
        return PairResult(index, value, (score_a, score_b), (margin_a, margin_b),
                          report_a.result.deals + report_b.result.deals, tuple(fail_a + fail_b), outcomes)  # type: ignore[arg-type]

    def _outcome(self, report: GameReport, cand: tuple[bool, ...]) -> GameOutcome:
        players = len(cand)
        names = tuple(self.spec.candidate.name if c else self.spec.baseline.name for c in cand)
        sides = tuple(seat % 2 if players == 4 else seat for seat in range(players))
        return GameOutcome.from_result(report.game_number, names, sides, report.result)

    def restore(self, pairs: Sequence[PairResult]) -> None:
        """Pairs an earlier run of this comparison finished (in pair order), fed to the test as if
        just played, so ``run`` goes on from the next pair (a ladder's challenge, a round at a time).
        ``on_pair`` is not called for them."""
        for pair in pairs:
            self._record(pair, tell=False)

    def _record(self, pair: PairResult, tell: bool = True) -> None:
        self.pairs.append(pair)
        if self.test is not None:
            if isinstance(self.test, MarginSprt):
                self.test.add(pair.value)
            else:
                self.test.add_games(*pair.game_scores)
            self.decision = self.test.decision()
        if self.spec.players == 2:  # with 4 players each team is two copies of one bot: not rated
            for outcome in pair.outcomes:
                self.book.update(outcome)
        if tell:
            self.on_pair(self, pair)

    async def run(self, until_pairs: int | None = None) -> None:
        """Play pairs until the test decides or the limit is reached; results are taken in pair
        order whatever order they finish in, so a run is reproducible at any concurrency.

        ``concurrency`` games play at once; the gate lets them in in the order they were made (an
        asyncio semaphore wakes its waiters first come, first served), so the games playing are
        always the earliest unfinished ones and a later pair never delays an earlier one. A window
        of ``concurrency + 1`` pairs keeps a game waiting for every slot that frees even while an
        earlier pair's last game is still playing. Games past the pair that decides are
        cancelled (their bots restarted before any reuse, stopped at the executor's close) and
        never counted. It starts after the pairs already recorded (``restore``) and, with
        ``until_pairs``, stops once that many pairs are recorded (the test may decide later)."""
        spec = self.spec
        limit = spec.pair_limit if until_pairs is None else min(spec.pair_limit, until_pairs)
        gate = asyncio.Semaphore(spec.concurrency)
        window = spec.concurrency + 1  # pairs in flight (made, waiting at the gate or playing)
        pending: dict[int, asyncio.Task[PairResult]] = {}
        next_index = len(self.pairs)
        try:
            while True:
                while len(pending) < window and next_index < limit and self.decision is None:
                    pending[next_index] = asyncio.create_task(self._play_pair(next_index, gate))
                    next_index += 1
                expected = len(self.pairs)
                if expected not in pending:
                    return
                self._record(await pending.pop(expected))
                if self.decision is not None:
                    return
        finally:
            for task in pending.values():
                task.cancel()
            if pending:
                await asyncio.gather(*pending.values(), return_exceptions=True)

    # --- reporting --------------------------------------------------------------------------

    def status(self) -> str:
        """'H1', 'H0', 'inconclusive' (sequential) or 'done' (fixed length)."""
        if self.test is None:
            return "done"
        return self.decision or "inconclusive"

    def report(self) -> dict[str, Any]:
        """The comparison as a JSON-friendly report (docs/statistics.md lists the fields)."""
        spec = self.spec
        elapsed = time.monotonic() - self.started
        games = 2 * len(self.pairs)
        deals = sum(p.deals for p in self.pairs)
        wins = sum(s == 1.0 for p in self.pairs for s in p.game_scores)
        draws = sum(s == 0.5 for p in self.pairs for s in p.game_scores)
        counts = [0, 0, 0, 0, 0]
        for p in self.pairs:
            counts[round(sum(p.game_scores) * 2)] += 1
        if self.test is not None:
            statistics = self.test.summary()
        elif self.pairs:
            values = [p.value for p in self.pairs]
            statistics = fixed_length_summary(spec.unit, values)
        else:
            statistics = {}
        ratings = self.book.ratings()
        return {
            "format": "royal-casino-compare",
            "version": 1,
            "candidate": spec.candidate.endpoint.spec,
            "baseline": spec.baseline.endpoint.spec,
            "unit": spec.unit,
            "players": spec.players,
            "pairing": spec.pairing,
            "seed": spec.seed,
            "mode": "fixed" if spec.bounds is None else "sprt",
            "bounds": None if spec.bounds is None else dataclasses.asdict(spec.bounds),
            "status": self.status(),
            "pairs": len(self.pairs),
            "games": games,
            "deals": deals,
            "cards_dealt": deals * CARDS_PER_DEAL,
            "wins": wins,
            "draws": draws,
            "losses": games - wins - draws,
            "pentanomial": counts,
            "mean_margin": (sum(p.value for p in self.pairs) / len(self.pairs)) if spec.unit == "deals" and self.pairs else None,
            "statistics": statistics,
            "failures": [f for p in self.pairs for f in p.failures],
            "trueskill": ({name: {"mu": r.mu, "sigma": r.sigma} for name, r in sorted(ratings.items())}
                          if spec.players == 2 else None),
            "elapsed_s": round(elapsed, 3),
            "games_per_s": round(games / elapsed, 3) if elapsed > 0 else None,
        }


def compare_settings(spec: CompareSpec) -> dict[str, Any]:
    """What the database keeps of a comparison played through the job queue (its tournament row's
    settings, for people): who, how, and the games' rules and clocks."""
    return {
        "kind": spec.label.split("-")[0], "bots": [spec.candidate.name, spec.baseline.name],
        "candidate": spec.candidate.endpoint.spec, "baseline": spec.baseline.endpoint.spec,
        "unit": spec.unit, "players": spec.players, "pairing": spec.pairing, "seed": spec.seed,
        "bounds": None if spec.bounds is None else dataclasses.asdict(spec.bounds),
        "units": spec.units if spec.bounds is None else None, "max_units": spec.max_units if spec.bounds else None,
        "rules": spec.options.to_dict(), "time_control": spec.time_control.to_dict(), "policy": spec.policy.value,
    }


def endpoint_bot(name: str, spec: str, packages: Packages | None = None) -> SeatBot:
    """A SeatBot from a command line, an address, or a bot package (built here as a server would,
    by ``packages``, default: the default sandbox and runtimes); EndpointError when it is none of
    them, PackageError when the package cannot be built. Call it where no event loop runs."""
    if is_package(spec):
        packages = packages or Packages(SandboxSettings())
        folder, checked = packages.unpack(spec)
        return SeatBot(name, packages.bot_sync(folder, spec, checked.sha256).endpoint, package=spec)
    return SeatBot(name, BotEndpoint.parse(spec, trusted=True))  # the operator's own command line

