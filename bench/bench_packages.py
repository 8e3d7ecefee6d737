"""Bot packages: what building each starter kit costs, first and found built, and what starting a
bot as a package costs against starting the same bot as a command.

Usage: python bench/bench_packages.py [--runs 3] [--starts 9] [--kits random,greedy,cpp,go]

1. Builds: for each kit of sample_bots/ (a folder with bot.toml), ``--runs`` times: the way from
   its folder to a bot ready to start (pack, check, unpack, build: `Packages.bot_from_path`) in
   fresh unpack and build caches ("first"), then once more on the same caches ("again": found
   built, never rebuilt; the script stops if it rebuilds). Kits without a build step show the
   packing and unpacking alone.
2. Start-up: from asking the default sandbox's launcher for the bot to the bot answering its
   health check, the greedy bot started as a command (``python greedy_bot.py`` in its folder)
   and as its package's endpoint (resolved once, before), alternated start by start; the medians
   and the median of the ratios package / command (goal: at most 1.1).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import grpc  # noqa: E402

from referee.bots.endpoint import BotEndpoint  # noqa: E402
from referee.bots.health import wait_healthy  # noqa: E402
from referee.bots.launcher import Launcher  # noqa: E402
from referee.packages.build import Builder  # noqa: E402
from referee.packages.cache import UnpackCache  # noqa: E402
from referee.packages.load import Packages  # noqa: E402
from referee.sandbox import SandboxSettings, make_launcher  # noqa: E402

KITS = ROOT / "sample_bots"
CHANNEL_OPTIONS = [("grpc.enable_retries", 0)]


def fresh_packages(folder: Path) -> Packages:
    return Packages(SandboxSettings(), unpacked=UnpackCache(folder / "archives"),
                    builder=Builder(SandboxSettings(), folder / "builds"))


def build_times(kit: Path, runs: int) -> tuple[list[float], list[float], str]:
    """Seconds to a ready bot: each run's first (fresh caches) and again (found built)."""
    first, again, how = [], [], "no build step"
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="bench-packages-") as tmp:
            packages = fresh_packages(Path(tmp))
            start = time.perf_counter()
            made = asyncio.run(packages.bot_from_path(str(kit)))
            first.append(time.perf_counter() - start)
            start = time.perf_counter()
            made_again = asyncio.run(packages.bot_from_path(str(kit)))
            again.append(time.perf_counter() - start)
            if made.built is not None:
                how = "built"
                if made_again.built is None or not made_again.built.cached:
                    raise SystemExit(f"{kit.name} was built again: the cache did not hold")
    return first, again, how


async def start_up(launcher: Launcher, endpoint: BotEndpoint, folder: Path) -> float:
    """Seconds from asking ``launcher`` for the bot to its health check saying SERVING."""
    (folder / "bot").mkdir(exist_ok=True)
    address = f"unix:{folder / 'bot' / 'b.sock'}"
    start = time.perf_counter()
    process = await launcher.launch(endpoint, address, folder / "bot.log")
    try:
        async with grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS) as channel:
            why = await wait_healthy(channel, asyncio.get_running_loop().time() + 60, process)
            if why:
                raise SystemExit(f"the bot did not start: {why}")
        return time.perf_counter() - start
    finally:
        await process.stop()


def show(name: str, values: list[float], unit: str = "s") -> str:
    return f"{name} {statistics.median(values):.3f} {unit} ({min(values):.3f}-{max(values):.3f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="builds of each kit, first and again (default 3)")
    parser.add_argument("--starts", type=int, default=9, help="starts of each kind, alternated (default 9)")
    parser.add_argument("--kits", default="", help="kits to build, comma-separated (default: every one)")
    args = parser.parse_args()
    kits = [KITS / k for k in args.kits.split(",") if k] or sorted(p for p in KITS.iterdir() if (p / "bot.toml").is_file())
    print(f"{os.cpu_count()} CPUs; load {os.getloadavg()[0]:.2f}; {args.runs} run(s) per kit, {args.starts} starts")
    print("\n1. From a kit's folder to a bot ready to start (pack, check, unpack, build)")
    for kit in kits:
        first, again, how = build_times(kit, args.runs)
        print(f"  {kit.name:10s} {how:13s} {show('first', first)}; {show('again', again)}")

    print("\n2. Start-up to SERVING, the greedy bot as a command and as a package (alternated)")
    launcher = make_launcher(SandboxSettings())
    with tempfile.TemporaryDirectory(prefix="bench-packages-") as tmp:
        folder = Path(tmp)
        greedy = KITS / "greedy"
        command = BotEndpoint.parse(f"{sys.executable} greedy_bot.py", cwd=str(greedy))
        package = asyncio.run(fresh_packages(folder).bot_from_path(str(greedy))).endpoint
        times: dict[str, list[float]] = {"command": [], "package": []}
        asyncio.run(start_up(launcher, command, folder))  # warm-up: the interpreter's files in the page cache
        for _ in range(args.starts):
            for name, endpoint in (("command", command), ("package", package)):
                times[name].append(asyncio.run(start_up(launcher, endpoint, folder)))
        ratios = [p / c for p, c in zip(times["package"], times["command"])]
        print(f"  {show('command', times['command'])}; {show('package', times['package'])}; "
              f"package/command median {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
