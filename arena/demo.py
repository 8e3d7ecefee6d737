"""``arena demo``: a round robin of every sample bot in a temporary folder, with standings.

The Quickstart's main job: it writes a tournament file for the sample bots of this checkout
(the Node.js bot too when ``node`` is installed), runs it with an embedded SQLite database and
prints the standings, in well under a minute on a 2-core machine.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
from pathlib import Path

from referee.demo import SAMPLE_BOTS, sample_bot_commands

from .cli import run_tournament
from .console import make_console
from .config import load_config


def demo_file(folder: Path, bots: dict[str, str], games_per_pairing: int, move_time_ms: int, seed: int) -> Path:
    """Write the demo's tournament file into ``folder``; returns its path."""
    lines = [
        'name = "demo"',
        "players = 2",
        f"games_per_pairing = {games_per_pairing}",
        "duplicate = true",
        f"seed = {seed}",
        "",
        "[time]",
        f"move_ms = {move_time_ms}",
        "",
    ]
    for name, command in bots.items():
        lines += ["[[bots]]", f"name = {json.dumps(name)}", f"command = {json.dumps(command)}", ""]
    path = folder / "demo.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def run_demo(games_per_pairing: int = 4, move_time_ms: int = 200, seed: int = 1, keep: bool = False) -> int:
    if not SAMPLE_BOTS.is_dir():
        sys.stderr.write(f"arena: error: no sample bots at {SAMPLE_BOTS} (run from a checkout of the repository)\n")
        return 2
    console = make_console()
    bots = sample_bot_commands()
    folder = Path(tempfile.mkdtemp(prefix="arena-demo-"))
    try:
        path = demo_file(folder, bots, games_per_pairing, move_time_ms, seed)
        console.print(f"demo: {', '.join(bots)}; {games_per_pairing} games per pairing (duplicate deals), "
                      f"{move_time_ms} ms per move; tournament file {path}")
        return asyncio.run(run_tournament(load_config(path), console, show_paths=keep))
    finally:
        if keep:
            console.print(f"kept {folder} (tournament file, database, bot logs)")
        else:
            shutil.rmtree(folder, ignore_errors=True)
