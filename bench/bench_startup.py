"""How soon do the commands answer? Whole-process times of the quick commands, this checkout
against an older one, alternated run by run.

Usage: python bench/bench_startup.py --old DIR [--runs 9]

For each command, ``new`` (this checkout) and ``old`` (the checkout ``--old DIR``, put first on
PYTHONPATH, so the same interpreter and packages run the older code) in turn, ``--runs`` times
each after a warm-up:

- ``import``: ``python -X importtime -c 'import arena.cli.main'`` (and ``referee.cli.main``), the
  module's cumulative import time as the interpreter reports it;
- ``arena --help``, ``arena compare --help``, ``referee --help``, ``referee check --help``: the
  whole process, start to exit (wall clock);
- ``referee check`` start: from starting ``referee check --bot BOT`` until the bot's first
  instruction (a shell script that writes the time, ns since the epoch, into its log and waits),
  with ``--sandbox none`` (the referee's own start) and with the default sandbox (what a user
  waits for: the sandbox's probe and set-up too). The process is killed once the bot has started.

Prints each figure's median (min-max) for both, and the median of the ratios new/old pair by pair
(a ratio holds while the machine's speed drifts).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # the virtual environment's `arena` and `referee`
STAMP_BOT = "#!/bin/sh\n# starts, says when (ns since the epoch) into its log, waits\ndate +%s%N >&2\nexec sleep 60\n"
STAMP = re.compile(r"\b(\d{19,})\b")
BOT_WAIT_S = 60.0  # bound on a loaded machine getting to the bot's start


def env_for(code: Path | None) -> dict[str, str]:
    """The environment that runs ``code`` (None: this checkout, as installed)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if code is not None:
        env["PYTHONPATH"] = str(code)
    return env


def import_time(module: str) -> Callable[[Path | None], float]:
    def run(code: Path | None) -> float:
        err = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True,
                             text=True, cwd=tempfile.gettempdir(), env=env_for(code), check=True).stderr
        return int(re.findall(rf"\|\s+(\d+) \| {re.escape(module)}$", err, re.M)[-1]) / 1e6
    return run


def whole_process(*argv: str) -> Callable[[Path | None], float]:
    def run(code: Path | None) -> float:
        start = time.perf_counter()
        # from a folder outside both checkouts, so the current folder does not decide which code runs
        subprocess.run([str(BIN / argv[0]), *argv[1:]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       cwd=tempfile.gettempdir(), env=env_for(code), check=True)
        return time.perf_counter() - start
    return run


def check_start(bot: Path, *extra: str) -> Callable[[Path | None], float]:
    def run(code: Path | None) -> float:
        logs = Path(tempfile.mkdtemp(prefix="bench-check-"))
        started = time.time_ns()
        process = subprocess.Popen([str(BIN / "referee"), "check", "--bot", str(bot), "--logs", str(logs), *extra],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tempfile.gettempdir(),
                                   env=env_for(code), start_new_session=True)
        try:
            deadline = time.monotonic() + BOT_WAIT_S
            while time.monotonic() < deadline:
                for log in logs.rglob("*.log"):
                    found = STAMP.search(log.read_text(errors="replace"))
                    if found:
                        return (int(found.group(1)) - started) / 1e9
                time.sleep(0.001)
            raise SystemExit(f"the bot did not start within {BOT_WAIT_S:.0f} s")
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            shutil.rmtree(logs, ignore_errors=True)
    return run


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, type=Path, help="a checkout of the older code (git worktree add)")
    parser.add_argument("--runs", type=int, default=9, help="runs of each command, each way (default 9)")
    args = parser.parse_args(argv)
    old = args.old.resolve()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as folder:
        Path(folder).chmod(0o755)  # the sandbox runs the bot as a uid of its own: it must read the script
        bot = Path(folder) / "stamp_bot.sh"
        bot.write_text(STAMP_BOT)
        bot.chmod(0o755)
        figures: list[tuple[str, Callable[[Path | None], float]]] = [
            ("import arena.cli.main", import_time("arena.cli.main")),
            ("import referee.cli.main", import_time("referee.cli.main")),
            ("arena --help", whole_process("arena", "--help")),
            ("arena compare --help", whole_process("arena", "compare", "--help")),
            ("referee --help", whole_process("referee", "--help")),
            ("referee check --help", whole_process("referee", "check", "--help")),
            ("referee check, bot started (--sandbox none)", check_start(bot, "--sandbox", "none")),
            ("referee check, bot started (default sandbox)", check_start(bot)),
        ]
        print(f"{'figure (s)':46s} {'new median (min-max)':24s} {'old median (min-max)':24s} new/old")
        for name, run in figures:
            run(None), run(old)  # warm-up: the file cache, .pyc files
            new, before = [], []
            for _ in range(args.runs):
                new.append(run(None))
                before.append(run(old))
            ratio = statistics.median(a / b for a, b in zip(new, before))
            print(f"{name:46s} {spread(new):24s} {spread(before):24s} {ratio:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
