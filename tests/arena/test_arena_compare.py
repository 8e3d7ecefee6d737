"""``arena compare`` and ``arena gauntlet`` with real bot processes over gRPC: the sequential test
accepts H1 for a clearly stronger bot, never for a bot against itself, and writes the documented
JSON report; duplicate pairs cancel the deal's luck exactly for a deterministic bot."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from arena.play.compare import CompareSpec, Comparison, endpoint_bot
from arena.play.executor import GameExecutor, InProcessExecutor, SeatBot
from arena.rating.stats import SprtBounds
from referee.bots.endpoint import BotEndpoint
from referee.bots.launcher import BotProcess
from referee.clock import TimeControl
from referee.match.report import GameReport
from referee.match.spec import GameSetup
from referee.sandbox import default_launcher
from tests.support import ROOT, arena_here, fresh_temp_dir, run_arena

PY = sys.executable
RANDOM = f"{PY} {ROOT / 'sample_bots/random/random_bot.py'}"
GREEDY = f"{PY} {ROOT / 'sample_bots/greedy/greedy_bot.py'}"
# a fixed amount of search per move (not a share of the clock), so its strength and its time to
# answer do not depend on how busy the machine is
LOOKAHEAD = f"{PY} {ROOT / 'sample_bots/lookahead/lookahead_bot.py'} --samples 2"
ROOMY_MS = "2000"  # a move time no sample bot can miss on a loaded machine (they answer in milliseconds)

REPORT_FIELDS = {
    "format", "version", "candidate", "baseline", "unit", "players", "pairing", "seed", "mode", "bounds", "status",
    "pairs", "games", "deals", "cards_dealt", "wins", "draws", "losses", "pentanomial", "mean_margin", "statistics",
    "failures", "trueskill", "elapsed_s", "games_per_s",
}


def test_lookahead_against_random_accepts_h1_and_exits_0(tmp_path: Path) -> None:
    """A clearly better candidate: H1 accepted, exit status 0, and the JSON report holds the
    documented fields with figures that agree with each other."""
    report_path = tmp_path / "report.json"
    done = run_arena("compare", "--candidate", LOOKAHEAD, "--baseline", RANDOM, "--move-time", ROOMY_MS,
                     "--margin0", "0", "--margin1", "1", "--json", str(report_path), timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "H1 accepted" in done.stdout
    report = json.loads(report_path.read_text())
    assert set(report) == REPORT_FIELDS
    assert (report["format"], report["version"], report["unit"], report["mode"], report["status"]) == (
        "royal-casino-compare", 1, "deals", "sprt", "H1")
    assert report["games"] == 2 * report["pairs"] == report["wins"] + report["draws"] + report["losses"]
    assert report["deals"] == report["games"]  # one-deal games
    assert report["cards_dealt"] == 52 * report["deals"]
    stats = report["statistics"]
    assert stats["decision"] == "H1" and stats["llr"] >= stats["llr_bounds"][1]
    assert stats["pairs"] == report["pairs"] and stats["ci"][0] > 0 < report["mean_margin"]
    assert report["failures"] == []
    assert report["trueskill"]["candidate"]["mu"] > report["trueskill"]["baseline"]["mu"]


class RecordingLauncher:
    """The default launcher (the sandbox, as ``arena compare`` uses), keeping every process it starts."""

    def __init__(self) -> None:
        self.inner = default_launcher()
        self.processes: list[BotProcess] = []

    async def launch(self, endpoint: BotEndpoint, address: str, log_path: Path) -> BotProcess:
        process = await self.inner.launch(endpoint, address, log_path)
        self.processes.append(process)
        return process


class CountingExecutor(InProcessExecutor):
    """The real in-process executor, noting which games it was asked to play and which it finished."""

    def __init__(self, logs: Path) -> None:
        super().__init__(logs, RecordingLauncher())
        self.started: list[int] = []
        self.finished: list[int] = []

    async def play(self, setup: GameSetup, seats: Sequence[SeatBot], observe: object = None) -> GameReport:
        self.started.append(setup.game_number)
        report = await super().play(setup, seats)
        self.finished.append(setup.game_number)
        return report


def _sprt_run(logs: Path, concurrency: int) -> tuple[Comparison, CountingExecutor]:
    spec = CompareSpec(endpoint_bot("candidate", GREEDY), endpoint_bot("baseline", RANDOM),
                       bounds=SprtBounds(0.0, 2.0, 0.05, 0.05), max_units=200, seed=3, concurrency=concurrency,
                       time_control=TimeControl(move_time_ms=int(ROOMY_MS)))
    executor = CountingExecutor(logs)
    return run_comparison(Comparison(spec, executor), executor), executor


def run_comparison(comparison: Comparison, executor: GameExecutor) -> Comparison:
    """Run ``comparison`` to its end on ``executor``, then close the executor."""

    async def run() -> None:
        try:
            await comparison.run()
        finally:
            await executor.close()
    asyncio.run(run())
    return comparison


@pytest.mark.timeout(240)
def test_a_verdict_does_not_depend_on_concurrency_and_later_games_are_dropped(tmp_path: Path) -> None:
    """Greedy (deterministic) against random (seeded by game): one game at a time and four at once
    reach the same verdict after the same pairs with the same margins, because results are taken
    in pair order. At four at once, games past the deciding pair were under way when it decided:
    they count for nothing, and every bot process either run started has stopped at the end."""
    one, serial = _sprt_run(tmp_path / "one", concurrency=1)
    four, parallel = _sprt_run(tmp_path / "four", concurrency=4)
    assert one.decision == four.decision == "H1"
    assert len(one.pairs) == len(four.pairs) >= 10  # the test's minimum before any decision
    assert [(p.index, p.margins, p.game_scores) for p in one.pairs] == [
        (p.index, p.margins, p.game_scores) for p in four.pairs]
    assert all(p.failures == () for p in four.pairs)
    counted = 2 * len(four.pairs)
    assert set(range(1, counted + 1)) <= set(parallel.finished)
    assert max(parallel.started) > counted, "games past the deciding pair had started"
    assert four.report()["games"] == counted
    for executor in (serial, parallel):
        processes = executor.launcher.processes  # type: ignore[attr-defined]
        assert processes and all(process.exited for process in processes)
        for process in processes:
            with pytest.raises(ProcessLookupError):  # nothing of its process group is left either
                os.killpg(process.process.pid, 0)  # type: ignore[union-attr]
    # a process per seat of each game at once, reused from game to game (none restarted: no failures)
    assert len(parallel.launcher.processes) <= 2 * 4  # type: ignore[attr-defined]


def test_a_bot_against_itself_does_not_accept_h1(tmp_path: Path) -> None:
    """The random bot against itself (different seeds, so games differ) in a short run: never H1
    (exit 1 for H0 or 3 for no decision), whatever the luck of these decks."""
    report_path = tmp_path / "self.json"
    done = run_arena("compare", "--candidate", RANDOM, "--baseline", RANDOM, "--max-units", "80",
                     "--move-time", ROOMY_MS, "--seed", "5", "--json", str(report_path), timeout=240)
    assert done.returncode in (1, 3), done.stdout + done.stderr
    report = json.loads(report_path.read_text())
    assert report["status"] in ("H0", "inconclusive") and report["games"] <= 80


def test_duplicate_pairs_cancel_the_deal_for_a_deterministic_bot(tmp_path: Path) -> None:
    """The greedy bot (deterministic) against itself plays the same deal both ways round, so every
    pair's margin is exactly 0: the duplicate pairing removes all of the deal's luck. With
    independent decks the pairs differ. Fixed length: exit 0 and estimates only. The bots' logs
    are kept in --logs DIR (first run) or nowhere (second): the temporary directory stays empty."""
    margins = {}
    for pairing in ("duplicate", "independent"):
        path, temp, logs = tmp_path / f"{pairing}.json", fresh_temp_dir(), tmp_path / f"logs-{pairing}"
        keep = ["--logs", str(logs)] if pairing == "duplicate" else []
        done = run_arena("compare", "--candidate", GREEDY, "--baseline", GREEDY, "--units", "20", "--pairing", pairing,
                         "--move-time", ROOMY_MS, "--json", str(path), *keep, timeout=240, env={"TMPDIR": str(temp)})
        assert done.returncode == 0, done.stdout + done.stderr
        assert list(temp.iterdir()) == [], "nothing left in the temporary directory"
        if keep:
            assert f"bot logs: {logs}" in done.stdout
            assert {p.name.rsplit("-", 1)[0] for p in logs.iterdir()} == {"candidate", "baseline"}
            assert all(p.read_text(encoding="utf-8").startswith("--- starting ") for p in logs.iterdir())
        else:
            assert not logs.exists() and "bot logs: " not in done.stdout
        report = json.loads(path.read_text())
        assert (report["mode"], report["status"], report["games"]) == ("fixed", "done", 20)
        margins[pairing] = report["statistics"]["variance"]
    assert margins["duplicate"] == 0.0
    assert margins["independent"] > 0.0


def test_games_unit_and_pentanomial_report(tmp_path: Path) -> None:
    """Full games: pair scores in the pentanomial counts add up to the pairs, W/D/L to the games,
    and each game deals at least one whole deck."""
    path = tmp_path / "games.json"
    done = run_arena("compare", "--candidate", GREEDY, "--baseline", RANDOM, "--unit", "games", "--units", "8",
                     "--move-time", ROOMY_MS, "--json", str(path), timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(path.read_text())
    assert report["unit"] == "games" and sum(report["pentanomial"]) == report["pairs"] == 4
    assert report["wins"] + report["draws"] + report["losses"] == 8
    assert report["deals"] >= 8 and report["cards_dealt"] == 52 * report["deals"]
    assert report["statistics"]["elo"] is not None


def test_sprt_estimate_and_usage_errors() -> None:
    """--sprt-estimate plays nothing and prints the expected size; mismatched bounds and bad
    arguments are one-line usage errors with exit status 2."""
    done = arena_here("compare", "--candidate", "x", "--baseline", "y", "--sprt-estimate", "--true-effect", "0.5",
                     "--variance", "9")
    assert done.returncode == 0, done.stderr
    assert "expected pairs" in done.stdout and "P(accept H1) = 0.950" in done.stdout
    for args in (
        ["--unit", "deals", "--elo1", "10"],
        ["--unit", "games", "--margin1", "1"],
        ["--margin0", "1", "--margin1", "0"],
        ["--concurrency", "0"],
        ["--sprt-estimate"],
        ["--move-time", "1099511627776"],  # over the referee's one-hour limit: was a traceback
    ):
        bad = arena_here("compare", "--candidate", RANDOM, "--baseline", RANDOM, *args)
        assert bad.returncode == 2, (args, bad.stdout, bad.stderr)
        assert bad.stderr.count("\n") == 1 and bad.stderr.startswith("arena: error:"), (args, bad.stderr)
    bad = arena_here("compare", "--candidate", "no-such-program-xyz", "--baseline", RANDOM)
    assert bad.returncode == 2 and bad.stderr.startswith("arena: error:"), bad.stderr


def test_gauntlet_reports_each_opponent_and_trueskill(tmp_path: Path) -> None:
    """The candidate against two reference bots: a row per opponent plus overall, and TrueSkill."""
    path, temp = tmp_path / "gauntlet.json", fresh_temp_dir()
    done = run_arena("gauntlet", "--candidate", GREEDY, "--opponent", f"random={RANDOM}", "--opponent",
                     f"greedy={GREEDY}", "--units", "10", "--move-time", ROOMY_MS, "--json", str(path), timeout=240,
                     env={"TMPDIR": str(temp)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(temp.iterdir()) == [], "no logs or sockets left behind without --logs"
    report = json.loads(path.read_text())
    assert [row["opponent"] for row in report["opponents"]] == ["random", "greedy"]
    by_name = {row["opponent"]: row for row in report["opponents"]}
    assert all(row["games"] == 10 for row in report["opponents"])
    assert by_name["greedy"]["mean_margin"] == 0.0  # itself, duplicated: every deal cancels
    assert by_name["random"]["mean_margin"] > 0
    assert report["overall"]["games"] == 20
    assert set(report["trueskill"]) == {"candidate", "random", "greedy"}
    assert "overall" in done.stdout and "TrueSkill after the run" in done.stdout
    bad = run_arena("gauntlet", "--candidate", GREEDY, "--opponent", "nameless")
    assert bad.returncode == 2 and bad.stderr.startswith("arena: error:")


def test_score_game_counts_wins_draws_and_forfeits() -> None:
    """The candidate's game score and point margin from a result: a win, a shared top (draw), a
    forfeit by either side (±11 points, the whole deal), and 4-player teams (seats 0+2)."""
    from arena.play.compare import FORFEIT_MARGIN, candidate_seats, score_game
    from casino.v1 import game_pb2
    from referee.match.report import GameReport

    def report(scores: list[int], ranks: list[int], winner: int, forfeit_seat: int | None = None) -> GameReport:
        failures = [] if forfeit_seat is None else [game_pb2.Failure(seat=forfeit_seat, kind=game_pb2.FAILURE_KIND_CRASH,
                                                                     reason="exited", forfeit=True)]
        result = game_pb2.GameResult(scores=scores, ranks=ranks, winner_side=winner, failures=failures)
        return GameReport("g", 1, [0, 1], result, {})

    first, second = candidate_seats(2, True), candidate_seats(2, False)
    assert score_game(report([21, 9], [1, 2], 0), first)[:2] == (1.0, 12)
    assert score_game(report([21, 9], [1, 2], 0), second)[:2] == (0.0, -12)
    assert score_game(report([7, 7], [1, 1], -1), first)[:2] == (0.5, 0)
    assert score_game(report([3, 1], [2, 1], 1, forfeit_seat=0), first)[:2] == (0.0, -FORFEIT_MARGIN)
    score, margin, failures = score_game(report([3, 1], [2, 1], 1, forfeit_seat=0), second)
    assert (score, margin) == (1.0, FORFEIT_MARGIN) and failures == ["baseline seat 0: crash: exited"]
    teams = candidate_seats(4, False)  # the candidate's copies sit at seats 1 and 3: side 1
    assert teams == (False, True, False, True)
    assert score_game(report([4, 9], [2, 1, 2, 1], 1), teams)[:2] == (1.0, 5)
