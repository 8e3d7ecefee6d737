"""``arena demo``: a round robin of every sample bot, with standings, in a folder that is kept.

The Quickstart's main job: it writes a tournament file for the sample bots of this checkout
(the Node.js bot too when ``node`` is installed), runs it with an embedded SQLite database and
prints the standings, in well under a minute on a 2-core machine. The folder (``--dir``, or a new
one under the temporary directory) keeps the file, the database and the bot logs, and the demo
ends with the commands that look at them again or run the tournament again.
"""

from __future__ import annotations

import json
import shlex
import sys
import tempfile
from pathlib import Path

from rich.console import Console

from referee.cli.demo import SAMPLE_BOTS, sample_packages
from referee.loop import run_main

from ..config import load_config
from ..errors import UsageError
from .console import make_console
from .live import run_tournament

DEMO_FILE = "demo.toml"


def demo_text(bots: dict[str, Path], games_per_pairing: int, move_time_ms: int, seed: int) -> str:
    """The demo's tournament file: the sample bot packages (docs/packages.md)."""
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
    for name, folder in bots.items():
        lines += ["[[bots]]", f"name = {json.dumps(name)}", f"package = {json.dumps(str(folder))}", ""]
    return "\n".join(lines)


def demo_file(folder: Path, text: str) -> Path:
    """Write the demo's tournament file into ``folder`` (made if missing); its path. A folder
    holding another demo's file is refused: its database has that demo's games."""
    path = folder / DEMO_FILE
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if path.exists():
            if path.read_text(encoding="utf-8") != text:
                raise UsageError(f"{folder} already holds a demo with other settings or bots ({path}): "
                                 "choose another --dir, or delete that folder")
        else:
            path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot use {folder} for the demo: {exc.strerror or exc}") from None
    return path


def arena_program() -> str:
    """How the user started ``arena`` (``.venv/bin/arena`` says more than ``arena`` when the
    virtual environment is not active), for commands to copy."""
    if Path(sys.argv[0]).name == "arena":
        return shlex.quote(sys.argv[0])
    return f"{shlex.quote(sys.executable)} -m arena.cli"


def print_next_steps(console: Console, path: Path) -> None:
    """Where the demo's files are, and the exact commands to look at them or run it again."""
    arena, file = arena_program(), shlex.quote(str(path))
    console.print(f"\nthe demo is kept in {path.parent}: {path.name} (the tournament file), demo.db (every game "
                  "and rating), demo-logs/ (bot logs). Look at it again, or run it again:", soft_wrap=True,
                  highlight=False)
    steps = [(f"{arena} standings {file}", "these standings"),
             (f"{arena} games {file}", "every game, with failures"),
             (f"{arena} show {file} 1 --full", "game 1, play by play, with hands and table"),
             (f"{arena} run {file}", "run it again: plays what is left (nothing now; delete demo.db to replay all)")]
    width = max(len(command) for command, _ in steps)
    for command, what in steps:
        console.print(f"  {command:{width}s}  # {what}", soft_wrap=True, highlight=False, markup=False)


def run_demo(games_per_pairing: int = 4, move_time_ms: int = 200, seed: int = 1, folder: Path | None = None) -> int:
    """Write (or find) the demo's tournament in ``folder`` (default: a new temporary one, kept),
    run it, print the standings and the commands to reuse it; the exit status."""
    if not SAMPLE_BOTS.is_dir():
        raise UsageError(f"no sample bots at {SAMPLE_BOTS} (run from a checkout of the repository)")
    console = make_console()
    bots = sample_packages()
    text = demo_text(bots, games_per_pairing, move_time_ms, seed)
    path = demo_file(folder if folder is not None else Path(tempfile.mkdtemp(prefix="arena-demo-")), text)
    console.print(f"demo: {', '.join(bots)}; {games_per_pairing} games per pairing (duplicate deals), "
                  f"{move_time_ms} ms per move; tournament file {path}", soft_wrap=True)
    status = run_main(run_tournament(load_config(path), console, show_paths=False))
    print_next_steps(console, path)
    return status
