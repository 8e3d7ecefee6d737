"""Smoke test of bench/bench_duplicate.py: its games are eval_bots' games, and a tiny run (greedy
against random, a few pairs, one process) writes every figure the docs quote to its JSON."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load(name: str) -> ModuleType:
    """Import a bench script as a module (bench/ is not a package)."""
    sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


bench = load("bench_duplicate")
eval_bots = load("eval_bots")


def test_games_are_played_as_eval_bots_plays_them() -> None:
    for seed in (1, 2):
        for side in (0, 1):
            expected = eval_bots.play_game(("greedy", "random", seed, side, 2, 8))
            got = bench.play_game(bench.GameTask("greedy", "random", "games", seed, side, 8, seed, f"s{seed}-a{side}"))
            assert (got.candidate_points, got.baseline_points, got.deals, got.score) == (
                expected["a_points"], expected["b_points"], expected["deals"], expected["outcome"])


def test_duplicate_pairs_share_decks_and_independent_ones_do_not() -> None:
    dup = bench.pair_tasks("greedy", "random", "deals", "duplicate", 3, 1, 8)
    ind = bench.pair_tasks("greedy", "random", "deals", "independent", 3, 1, 8)
    assert [t.deck_seed for t in dup[0::2]] == [t.deck_seed for t in dup[1::2]]
    assert [t.candidate_side for t in dup] == [0, 1] * 3
    assert len({t.deck_seed for t in ind}) == 6


def test_tiny_run_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "dup.json"
    assert bench.main(["--matchups", "greedy-random", "--deal-pairs", "24", "--game-pairs", "12", "--runs", "8",
                       "--jobs", "1", "--json", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    units = report["matchups"]["greedy-random"]["units"]
    assert set(units) == {"deals", "games"}
    assert units["deals"]["effect"] > 0  # greedy beats random by points per deal
    assert units["deals"]["bounds"] == [0.0, units["deals"]["effect"] / 2]
    for unit, analysis in units.items():
        for pairing in ("duplicate", "independent"):
            sample = analysis["pairings"][pairing]
            assert sample["pairs"] == (24 if unit == "deals" else 12)
            assert len(report["pairs"][f"greedy-random/{unit}/{pairing}"]) == sample["pairs"]
            seq = sample["sequential"]
            assert seq["runs"] == 8
            assert seq["share_h1"] + seq["share_h0"] + seq["share_capped"] == 1.0
            assert seq["mean_pairs"] >= report["settings"]["min_pairs"]
            assert seq["mean_cards"] == pytest.approx(52 * seq["mean_deals"])
            assert seq["mean_games"] == 2 * seq["mean_pairs"]
            if unit == "deals":
                assert sample["deals_per_pair"] == 2.0 and sample["cards_per_pair"] == 104.0
            else:
                assert sample["deals_per_pair"] > 2.0  # greedy needs more than one deal to reach 21
