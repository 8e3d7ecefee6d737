"""``referee demo``: a short match between each pair of sample bots, with standings.

Uses the bot packages in ``sample_bots/`` of this checkout: the Python random, greedy and
lookahead bots, and the Node.js bot when ``node`` is installed (running ``npm ci`` for its runtime
once if needed), each built and run as a package (docs/packages.md).
"""

from __future__ import annotations

import itertools
import shutil
import sys
from pathlib import Path

from ..clock import TimeControl
from ..loop import run_main
from ..match.run import run_match
from ..match.spec import MatchSpec
from ..rules import RuleOptions
from .match import describe_game

SAMPLE_BOTS = Path(__file__).resolve().parents[2] / "sample_bots"  # referee/cli/demo.py -> the checkout


DEMO_KITS = ("random", "greedy", "lookahead", "node")  # quick to start; the C++ and Go kits build first


def sample_packages(out=sys.stdout) -> dict[str, Path]:  # type: ignore[no-untyped-def]
    """Name -> package folder of every sample bot available here (the Node.js bot when the node
    runtime can run: its packages installed, by ``npm ci``, the first time)."""
    from ..packages.runtimes import install_node_packages, node_runtime

    kits = {name: SAMPLE_BOTS / name for name in DEMO_KITS if (SAMPLE_BOTS / name / "bot.toml").is_file()}
    if "node" in kits and node_runtime().problem is not None:
        if shutil.which("node") and shutil.which("npm"):
            out.write("installing the node runtime's packages (npm ci)...\n")
            install_node_packages()
        if node_runtime().problem is not None:
            del kits["node"]
    return kits


def run_demo(games: int, move_time_ms: int, seed: int) -> int:
    if not SAMPLE_BOTS.is_dir():
        sys.stderr.write(f"referee: error: no sample bots at {SAMPLE_BOTS} (run from a checkout of the repository)\n")
        return 2
    from ..packages.load import Packages
    from ..sandbox import SandboxSettings

    kits = sample_packages()
    packages = Packages(SandboxSettings())
    bots = {name: run_main(packages.bot_from_path(str(folder))).endpoint for name, folder in kits.items()}
    print(f"demo: {', '.join(bots)}; {games} games per pair, {move_time_ms} ms per move\n")
    table = {name: [0, 0, 0, 0] for name in bots}  # games, wins, draws, losses
    for a, b in itertools.combinations(bots, 2):
        spec = MatchSpec(bots=[bots[a], bots[b]], options=RuleOptions(players=2),
                         games=games, seed=seed, time_control=TimeControl(move_time_ms=move_time_ms))
        report = run_main(run_match(spec))
        print(f"  ({a} vs {b}: bot logs in {report.logs_dir})")
        for game in report.games:
            print(describe_game(game, report.bot_names, spec.options))
        tally = report.tally()
        for i, name in enumerate((a, b)):
            row = table[name]
            row[0] += len(report.games)
            row[1] += tally.wins[i]
            row[2] += tally.draws[i]
            row[3] += tally.losses[i]
    print(f"\n{'bot':12s} {'games':>5s} {'wins':>5s} {'draws':>5s} {'losses':>6s}")
    for name, (played, won, drawn, lost) in sorted(table.items(), key=lambda kv: (-kv[1][1], kv[0])):
        print(f"{name:12s} {played:5d} {won:5d} {drawn:5d} {lost:6d}")
    return 0
