"""Sandbox benchmark: what the default sandbox costs a bot, against no sandbox, in one run.

Usage: python bench/bench_sandbox.py [--starts N] [--round-trips N] [--games-per-pairing N] [--runs R]

The modes alternate (sandbox, none, sandbox, none, ...) so a machine whose speed drifts moves both
alike, and each figure is a median; the ratios are sandbox / none.

1. Start-up: from asking the launcher for the bot to the bot answering its health check, for the
   built-in random bot (``python -m referee.bots.builtin``), N starts per mode; and the sandbox's
   own cost without Python's start-up: from asking for ``true`` to its exit.
2. Per-move round trip: one open Play stream to the built-in bot started by each launcher; a Turn
   with one legal move, its answer, N times (as bench/bench_protocol.py's bare round trip); and
   the referee's wall time per play in a match of two built-in bots (bots ready to match end).
3. Tournament games/s: a 4-bot round robin of the sample random and greedy bots as ``arena run``
   plays it (run_tournament), ``[sandbox] mode`` "auto" (the default) against "none", bot
   start-up included.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import grpc
from rich.console import Console

from arena.cli import live as live_run
from arena.store import store as storage
from arena.config import load_config
from referee.bots.endpoint import BotEndpoint
from referee.bots.health import wait_healthy
from referee.bots.launcher import Launcher
from referee.clock import TimeControl
from referee.match.run import run_match
from referee.match.spec import MatchSpec
from referee.rules import RuleOptions
from referee.sandbox import SandboxLauncher, SandboxSettings, make_launcher
from referee.wire.connection import CHANNEL_OPTIONS

from bench_protocol import stream_round_trips  # the same loop the bare protocol figure uses

BUILTIN = f"{sys.executable} -m referee.bots.builtin"
MODES = ("auto", "none")


def launchers() -> dict[str, Launcher]:
    found = {mode: make_launcher(SandboxSettings(mode=mode)) for mode in MODES}
    sandbox = found["auto"]
    name = sandbox.mode if isinstance(sandbox, SandboxLauncher) else "none"
    cgroups = isinstance(sandbox, SandboxLauncher) and sandbox.machine.cgroups is not None
    print(f"sandbox mode here: {name}; cgroups: {'yes' if cgroups else 'no'}")
    return found


async def start_up(launcher: Launcher, command: str, folder: Path, until_exit: bool) -> float:
    """Seconds from asking ``launcher`` for ``command`` to it being healthy (or, ``until_exit``,
    to its exit)."""
    (folder / "bot").mkdir(exist_ok=True)
    address = f"unix:{folder / 'bot' / 'b.sock'}"
    start = time.perf_counter()
    process = await launcher.launch(BotEndpoint.parse(command), address, folder / "bot.log")
    try:
        if until_exit:
            assert process.process is not None
            await process.process.wait()
        else:
            async with grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS) as channel:
                why = await wait_healthy(channel, asyncio.get_running_loop().time() + 60, process)
                if why:
                    raise SystemExit(f"the bot did not start: {why}")
        return time.perf_counter() - start
    finally:
        await process.stop()


async def round_trips(launcher: Launcher, n: int, folder: Path) -> float:
    """Median seconds of a Turn and its answer, over ``n`` (the first tenth dropped: warm-up)."""
    (folder / "bot").mkdir(exist_ok=True)
    address = f"unix:{folder / 'bot' / 'r.sock'}"
    process = await launcher.launch(BotEndpoint.parse(BUILTIN), address, folder / "rtt.log")
    try:
        async with grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS) as channel:
            if await wait_healthy(channel, asyncio.get_running_loop().time() + 60, process):
                raise SystemExit("the bot did not start")
            times = await stream_round_trips(channel, n)
        return statistics.median(times[n // 10:])
    finally:
        await process.stop()


async def match_per_play(launcher: Launcher, games: int, folder: Path) -> float:
    """Seconds of wall time per play in a match of two built-in bots, from both being ready to its
    end: the referee's round trip as a game sees it (Turn built, sent, answered, judged)."""
    spec = MatchSpec(bots=[BotEndpoint.parse(BUILTIN), BotEndpoint.parse(BUILTIN)], options=RuleOptions(players=2),
                     games=games, seed=7, time_control=TimeControl(move_time_ms=2000), logs_dir=folder / "logs")
    ready: list[float] = []

    def on_event(event: object) -> None:
        if event.WhichOneof("event") == "match_started":  # type: ignore[attr-defined]
            ready.append(time.perf_counter())

    report = await run_match(spec, on_event, launcher=launcher)
    elapsed = time.perf_counter() - ready[0]
    return elapsed / sum(len(g.record["timings_us"]) for g in report.games)


def tournament(mode: str, games_per_pairing: int, folder: Path) -> float:
    """Games/s of a 4-bot round robin (2 random, 2 greedy sample bots), start-up included."""
    py = sys.executable
    bots = [(f"random{i}", f"{py} {ROOT / 'sample_bots/random/random_bot.py'}") for i in range(2)]
    bots += [(f"greedy{i}", f"{py} {ROOT / 'sample_bots/greedy/greedy_bot.py'}") for i in range(2)]
    lines = ['name = "bench"', f"games_per_pairing = {games_per_pairing}", "concurrency = 2", "seed = 3",
             "[time]", "move_ms = 2000", "[sandbox]", f'mode = "{mode}"']
    for name, command in bots:
        lines += ["[[bots]]", f'name = "{name}"', f"command = {json.dumps(command)}"]
    path = Path(tempfile.mkdtemp(prefix=f"cup-{mode}-", dir=folder)) / "bench.toml"  # a new database each time
    path.write_text("\n".join(lines) + "\n")
    config = load_config(path)
    start = time.perf_counter()
    status = asyncio.run(live_run.run_tournament(config, Console(file=io.StringIO(), width=120)))
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"tournament ({mode}) exited {status}")
    store = storage.Store(config.database)
    done = store.counts(store.tournament_id("bench"))["done"]  # type: ignore[arg-type]
    store.close()
    return done / wall


def alternate(runs: int, measure: Callable[[str], float]) -> dict[str, list[float]]:
    """``measure(mode)`` ``runs`` times per mode, the modes taking turns."""
    found: dict[str, list[float]] = {mode: [] for mode in MODES}
    for _ in range(runs):
        for mode in MODES:
            found[mode].append(measure(mode))
    return found


def show(title: str, values: dict[str, list[float]], unit: str, scale: float = 1.0) -> None:
    med = {mode: statistics.median(v) * scale for mode, v in values.items()}
    spread = {mode: f"{min(v) * scale:.2f}-{max(v) * scale:.2f}" for mode, v in values.items()}
    print(f"{title}: sandbox {med['auto']:.3f} {unit} ({spread['auto']}), none {med['none']:.3f} {unit} "
          f"({spread['none']}); ratio {med['auto'] / med['none']:.3f}, "
          f"difference {med['auto'] - med['none']:+.3f} {unit}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=20, help="start-ups per mode")
    parser.add_argument("--round-trips", type=int, default=2000, help="per stream")
    parser.add_argument("--rtt-runs", type=int, default=5, help="streams per mode")
    parser.add_argument("--match-games", type=int, default=20, help="games of each timed match")
    parser.add_argument("--games-per-pairing", type=int, default=10, help="6 pairings: 60 games per tournament")
    parser.add_argument("--runs", type=int, default=3, help="tournaments per mode")
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, uid {os.getuid()}")
    found = launchers()
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        folder = Path(tmp)
        folder.chmod(0o755)  # a sandboxed bot's uid passes through it (bwrap makes no copy of it)
        true = "/usr/bin/true" if os.path.exists("/usr/bin/true") else "/bin/true"
        show("start-up of `true` (the sandbox's own cost)",
             alternate(args.starts, lambda m: asyncio.run(start_up(found[m], true, folder, True))), "ms", 1000)
        show("start-up of the built-in Python bot (to healthy)",
             alternate(args.starts, lambda m: asyncio.run(start_up(found[m], BUILTIN, folder, False))), "ms", 1000)
        show(f"round trip per move (median of {args.round_trips})",
             alternate(args.rtt_runs, lambda m: asyncio.run(round_trips(found[m], args.round_trips, folder))), "ms",
             1000)
        show(f"referee wall time per play, a match of {args.match_games} games of two built-in bots",
             alternate(args.rtt_runs, lambda m: asyncio.run(match_per_play(found[m], args.match_games, folder))), "ms",
             1000)
        show(f"tournament, 4 sample bots, {6 * args.games_per_pairing} games, concurrency 2",
             alternate(args.runs, lambda m: tournament(m, args.games_per_pairing, folder)), "games/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
