"""In-process bots in the arena: a comparison of two in-process bots, played whole games at a time
on worker processes (arena/play/pool.py), decides pair by pair as the same comparison over gRPC
with real bot processes; a tournament file's [[bots]] may name one; the `arena compare` command
runs them; and a ladder's ``bots add`` refuses one in one line (exit 2)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from arena.config import load_config
from arena.play.compare import CompareSpec, Comparison, PairResult
from arena.play.executor import GameExecutor, InProcessExecutor, SeatBot
from arena.play.pool import WorkerPoolExecutor
from referee.bots.endpoint import INPROCESS_REFUSED, BotEndpoint
from referee.bots.launcher import LOCAL_LAUNCHER
from tests.arena.test_arena_compare import run_comparison
from tests.arena_support import write_tournament
from tests.conftest import ROOT
from tests.support import arena_here, run_arena

GREEDY = ROOT / "sample_bots" / "greedy" / "greedy_bot.py"
RANDOM = ROOT / "sample_bots" / "random" / "random_bot.py"


def compare(candidate: BotEndpoint, baseline: BotEndpoint, executor: GameExecutor) -> list[PairResult]:
    spec = CompareSpec(candidate=SeatBot("candidate", candidate), baseline=SeatBot("baseline", baseline),
                       unit="games", units=6, seed=3, concurrency=2)
    return run_comparison(Comparison(spec, executor), executor).pairs


def test_a_pooled_in_process_comparison_decides_as_over_grpc(tmp_path: Path) -> None:
    seed = {"CASINO_BOT_SEED": "4"}
    over_grpc = compare(BotEndpoint.parse(f"{sys.executable} {GREEDY}"),
                        BotEndpoint.parse(f"{sys.executable} {RANDOM}", env=seed),
                        InProcessExecutor(tmp_path / "grpc", launcher=LOCAL_LAUNCHER))
    pooled = compare(BotEndpoint.parse(f"inprocess:{GREEDY}", trusted=True),
                     BotEndpoint.parse(f"inprocess:{RANDOM}", env=seed, trusted=True),
                     WorkerPoolExecutor(InProcessExecutor(tmp_path / "fallback"), 2, tmp_path / "pool"))
    assert pooled == over_grpc and len(pooled) == 3


def test_a_tournament_file_may_name_an_in_process_bot(tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_text(GREEDY.read_text(encoding="utf-8"), encoding="utf-8")
    path = write_tournament(tmp_path / "t.toml", {"name": "t", "games_per_pairing": 2},
                            [{"name": "mine", "command": "inprocess:mine.py:GreedyBot"},
                             {"name": "random", "command": f"inprocess:{RANDOM}"}])
    mine = load_config(path).bots[0].endpoint()
    assert (mine.inprocess, mine.inprocess_class) == (str(tmp_path / "mine.py"), "GreedyBot")


def test_arena_compare_runs_in_process_bots(tmp_path: Path) -> None:
    done = run_arena("compare", "--candidate", f"inprocess:{GREEDY}", "--baseline", f"inprocess:{RANDOM}",
                     "--unit", "games", "--units", "4", "--concurrency", "2", "--json", str(tmp_path / "r.json"),
                     "--logs", str(tmp_path / "logs"), timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["games"] == 4 and report["failures"] == []


def test_a_ladder_refuses_an_in_process_bot_in_one_line(tmp_path: Path) -> None:
    path = write_tournament(tmp_path / "ladder.toml", {"name": "lad", "seed": 2}, [
        {"name": "a", "command": f"{sys.executable} {RANDOM}"}, {"name": "b", "command": f"{sys.executable} {RANDOM}"}])
    with open(path, "a", encoding="utf-8") as file:
        file.write('\n[ladder]\ninterval = "1h"\npairings_per_bot = 2\n')
    done = arena_here("bots", "add", "c", f"inprocess:{GREEDY}", "-f", str(path))
    assert done.returncode == 2 and INPROCESS_REFUSED in done.stderr and done.stderr.count("\n") == 1, done.stderr
