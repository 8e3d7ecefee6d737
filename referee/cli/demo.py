"""``referee demo``: a short match between each pair of sample bots, with standings.

Uses the bots in ``sample_bots/`` of this checkout: the Python random, greedy and lookahead
bots, and the Node.js bot when ``node`` is installed (running ``npm ci`` for it once if needed).
"""

from __future__ import annotations

import asyncio
import itertools
import shutil
import subprocess
import sys
from pathlib import Path

from ..bots.endpoint import BotEndpoint
from ..clock import TimeControl
from ..match.run import run_match
from ..match.spec import MatchSpec
from ..rules import RuleOptions
from .match import describe_game

SAMPLE_BOTS = Path(__file__).resolve().parents[2] / "sample_bots"  # referee/cli/demo.py -> the checkout


# The demos' lookahead bot does a fixed amount of search per move rather than a share of the clock:
# its strength does not depend on how busy the machine is, and it answers well within any move time.
DEMO_LOOKAHEAD_SAMPLES = 4


def sample_bot_commands(out=sys.stdout) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Name -> command line of every sample bot available here."""
    python = sys.executable
    bots = {name: f"{python} {SAMPLE_BOTS / 'python' / (name + '_bot.py')}" for name in ("random", "greedy", "lookahead")}
    bots["lookahead"] += f" --samples {DEMO_LOOKAHEAD_SAMPLES}"
    node_dir = SAMPLE_BOTS / "node"
    if shutil.which("node") and (node_dir / "bot.js").exists():
        if not (node_dir / "node_modules").exists() and shutil.which("npm"):
            out.write("installing the Node.js bot's packages (npm ci)...\n")
            subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=node_dir, check=False, timeout=300)
        if (node_dir / "node_modules").exists():
            bots["node"] = f"node {node_dir / 'bot.js'}"
    return bots


def sample_bot_folder(name: str) -> Path:
    """The folder a sample bot runs in (its working directory: what a sandbox shows it)."""
    return SAMPLE_BOTS / ("node" if name == "node" else "python")


def run_demo(games: int, move_time_ms: int, seed: int) -> int:
    if not SAMPLE_BOTS.is_dir():
        sys.stderr.write(f"referee: error: no sample bots at {SAMPLE_BOTS} (run from a checkout of the repository)\n")
        return 2
    bots = sample_bot_commands()
    print(f"demo: {', '.join(bots)}; {games} games per pair, {move_time_ms} ms per move\n")
    table = {name: [0, 0, 0, 0] for name in bots}  # games, wins, draws, losses
    for a, b in itertools.combinations(bots, 2):
        spec = MatchSpec(bots=[BotEndpoint.parse(bots[n], cwd=str(sample_bot_folder(n))) for n in (a, b)],
                         options=RuleOptions(players=2),
                         games=games, seed=seed, time_control=TimeControl(move_time_ms=move_time_ms))
        report = asyncio.run(run_match(spec))
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
