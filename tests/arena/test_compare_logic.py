"""The comparison's own logic (arena/play/compare.py), fast, with tests/fakes.py's FakeExecutor:
which games a pair is made of, that duplicate pairs cancel the deal exactly, and that a run's
report is the same at any concurrency and in whatever order its games finish. The same with
real bot processes, and the sequential test's decisions, are in test_arena_compare.py."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any

from arena.play.compare import CompareSpec, Comparison, endpoint_bot
from arena.play.executor import SeatBot
from referee.clock import TimeControl
from referee.match.report import GameReport
from referee.match.spec import GameSetup
from tests.fakes import FakeExecutor

CANDIDATE = endpoint_bot("candidate", "unix:/nonexistent/candidate.sock")
BASELINE = endpoint_bot("baseline", "unix:/nonexistent/baseline.sock")


class ShuffledFakeExecutor(FakeExecutor):
    """A FakeExecutor whose games finish in a seeded random order (each yields to the event loop a
    random number of times first), so results arrive out of pair order."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.rng = random.Random(seed)
        self.setups: list[GameSetup] = []
        self.finished: list[int] = []  # game numbers, in the order they finished

    async def play(self, setup: GameSetup, seats: Sequence[SeatBot]) -> GameReport:
        self.setups.append(setup)
        for _ in range(self.rng.randrange(30)):
            await asyncio.sleep(0)
        report = await super().play(setup, seats)
        self.finished.append(setup.game_number)
        return report


def compare(executor: FakeExecutor, **spec: Any) -> dict[str, Any]:
    """A fixed-length comparison of the two fake bots through ``executor``: its report, without
    the wall-clock fields."""
    settings: dict[str, Any] = {"units": 12, "seed": 4, "time_control": TimeControl(), **spec}
    comparison = Comparison(CompareSpec(CANDIDATE, BASELINE, **settings), executor)
    asyncio.run(comparison.run())
    report = comparison.report()
    del report["elapsed_s"], report["games_per_s"]
    return report


def test_a_pair_is_one_deck_played_both_ways_round() -> None:
    executor = ShuffledFakeExecutor(seed=1)
    report = compare(executor, units=6)
    assert (report["mode"], report["status"], report["pairs"], report["games"]) == ("fixed", "done", 3, 6)
    setups = sorted(executor.setups, key=lambda s: s.game_number)
    assert [s.game_number for s in setups] == [1, 2, 3, 4, 5, 6]
    for a, b in zip(setups[::2], setups[1::2]):
        assert (list(a.seat_bots), list(b.seat_bots)) == ([0, 1], [1, 0]), "the candidate first, then second"
        assert a.seed == b.seed and a.game_id.endswith("-a") and b.game_id.endswith("-b")
    assert len({s.seed for s in setups}) == 3, "each pair its own deck"


def test_duplicate_pairs_cancel_the_deal_exactly_and_independent_ones_do_not() -> None:
    # The fake's play depends on the deck alone, as a deterministic bot against itself: each pair's
    # two margins are opposite, so every pair's value is 0.
    duplicate = compare(FakeExecutor())
    assert duplicate["mean_margin"] == 0.0 and duplicate["statistics"]["variance"] == 0.0
    assert duplicate["wins"] == duplicate["losses"] and duplicate["failures"] == []
    independent = compare(FakeExecutor(), pairing="independent")
    assert independent["statistics"]["variance"] > 0.0


def test_the_report_is_the_same_at_any_concurrency_and_finishing_order() -> None:
    executors = [ShuffledFakeExecutor(seed) for seed in (1, 2, 3)]
    reports = [compare(executor, concurrency=concurrency, pairing="independent", unit="games")
               for executor, concurrency in zip(executors, (1, 2, 6))]
    assert executors[2].finished != sorted(executors[2].finished), "games finished out of pair order"
    assert reports[0]["games"] == 12 and sum(reports[0]["pentanomial"]) == 6
    assert reports[1] == reports[0] and reports[2] == reports[0]
