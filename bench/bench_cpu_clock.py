"""Wall clock or CPU time: how many timeouts a CPU-time limit saves on a busy machine.

Usage: python bench/bench_cpu_clock.py [--move-ms 100] [--concurrency 2] [--load 2] [--runs 3]
       [--games-per-pairing 2] [--backstop 10]
       python bench/bench_cpu_clock.py --overhead --runs 7 [--games 20]

Runs ``arena run`` (a real process, as a user would) on the tournament of
bench/bench_lookahead_clock.py (two lookahead bots, two greedy, two random; 2 players) at
``--concurrency``, while ``--load`` busy loops (``python -c 'while True: pass'``, stopped by their
pids at the end) compete for the CPUs, in two modes that alternate run by run:

- ``wall``: ``[time] move_ms = M`` (the default clock);
- ``cpu``:  ``[time] cpu_ms = M`` with ``move_ms = backstop x M`` as the wall-clock backstop.

The lookahead bots budget the same share (40%) of M either way: of the wall clock, or of their
CPU time when the handshake carries a CPU limit. For each run: every timeout (by bot kind), and the
lookahead bots' moves as the referee measured them, wall time and CPU time (the records'
``timings_us`` and ``cpu_us``). Figures in docs/benchmarks.md, "Wall clock or CPU time".

``--overhead``: what measuring CPU time costs the referee. Matches of ``--games`` games between
two built-in random bots (a millisecond a move, so the referee's own work shows) through
``run_match`` in this process, alternately with the bots' CPU meters and without them (a slot
that gives no meter, as for a bot at an address); the referee's CPU time per play
(``time.process_time``) of each.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena.store.store import Store
from bench.bench_lookahead_clock import BOTS

NAME = "cpu-clock"


def tournament_file(folder: Path, mode: str, move_ms: int, backstop: int, concurrency: int, games_per_pairing: int,
                    seed: int) -> Path:
    py = sys.executable
    time_lines = [f"move_ms = {move_ms}"] if mode == "wall" else [f"move_ms = {backstop * move_ms}", f"cpu_ms = {move_ms}"]
    lines = [f'name = "{NAME}"', "players = 2", f"games_per_pairing = {games_per_pairing}",
             f"concurrency = {concurrency}", f"seed = {seed}", "[time]", *time_lines]
    for i, kind in enumerate(BOTS):
        command = f"{py} {ROOT / 'sample_bots' / 'python' / f'{kind}_bot.py'}"
        lines += ["[[bots]]", f'name = "{kind}{i}"', f"command = {json.dumps(command)}",
                  f'env = {{ CASINO_BOT_SEED = "{i}" }}']
    path = folder / f"{NAME}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def percentile(values: list[int], q: float) -> float:
    return sorted(values)[int(q * (len(values) - 1))] / 1000 if values else float("nan")


def one_run(args: argparse.Namespace, mode: str, seed: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        path = tournament_file(Path(tmp), mode, args.move_ms, args.backstop, args.concurrency, args.games_per_pairing,
                               seed)
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "arena.cli", "run", str(path)], cwd=ROOT, capture_output=True,
                              text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=3600, check=False)
        seconds = time.monotonic() - started
        if done.returncode != 0:
            raise SystemExit(f"arena run exited {done.returncode}: {done.stderr.strip()[-500:]}")
        store = Store(f"sqlite:///{Path(tmp) / f'{NAME}.db'}")
        try:
            tid = store.tournament_id(NAME)
            assert tid is not None
            names = {b.position: b.name for b in store.bots(tid)}
            timeouts: Counter[str] = Counter()
            reasons: list[str] = []
            wall_us: list[int] = []
            cpu_us: list[int] = []
            games = 0
            for _, record in store.records(tid):
                games += 1
                seats = record["seats"]
                for f in record["failures"]:
                    if f["kind"] == "FAILURE_KIND_TIMEOUT":
                        bot = names[seats[f["seat"]]["bot"]]
                        timeouts[bot.rstrip("0123456789")] += 1
                        reasons.append(f"{bot}: {f['reason']}")
                for (seat, us), cpu in zip(record["timings_us"], record.get("cpu_us") or []):
                    if names[seats[seat]["bot"]].startswith("lookahead"):
                        wall_us.append(us)
                        if cpu is not None:
                            cpu_us.append(cpu)
        finally:
            store.close()
    return {"games": games, "seconds": seconds, "timeouts": dict(timeouts), "reasons": reasons,
            "moves": len(wall_us), "wall_median": percentile(wall_us, 0.5), "wall_p99": percentile(wall_us, 0.99),
            "wall_max": percentile(wall_us, 1.0), "cpu_median": percentile(cpu_us, 0.5),
            "cpu_p99": percentile(cpu_us, 0.99), "cpu_max": percentile(cpu_us, 1.0)}


def start_load(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop_load(loops: list[subprocess.Popen[bytes]]) -> None:
    for proc in loops:  # each by its own pid
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def overhead(args: argparse.Namespace) -> None:
    import asyncio

    from referee.bots.endpoint import BotEndpoint
    from referee.bots.slot import BotSlot
    from referee.clock import TimeControl
    from referee.match.run import run_match
    from referee.match.spec import MatchSpec
    from referee.rules import RuleOptions

    metered = BotSlot.cpu_meter
    unmetered = property(lambda self: None)
    bot = BotEndpoint.parse(f"{sys.executable} -m referee.bots.builtin")
    per_play: dict[str, list[float]] = {"with meters": [], "without": []}
    for k in range(args.runs):
        for label, values in per_play.items():
            BotSlot.cpu_meter = metered if label == "with meters" else unmetered  # type: ignore[method-assign]
            with tempfile.TemporaryDirectory() as logs:
                spec = MatchSpec(bots=[bot, bot], options=RuleOptions(players=2), games=args.games, seed=100 + k,
                                 time_control=TimeControl(move_time_ms=2000), logs_dir=Path(logs))
                cpu = time.process_time()
                report = asyncio.run(run_match(spec))
                cpu = time.process_time() - cpu
            plays = sum(len(g.record["timings_us"]) for g in report.games)
            values.append(cpu / plays * 1e6)
            print(f"run {k + 1} {label:11s}: {plays} plays, referee CPU {values[-1]:.0f} us per play "
                  f"(load {os.getloadavg()[0]:.2f})", flush=True)
    BotSlot.cpu_meter = metered  # type: ignore[method-assign]
    medians = {label: statistics.median(values) for label, values in per_play.items()}
    print(f"median referee CPU per play: with meters {medians['with meters']:.0f} us, without "
          f"{medians['without']:.0f} us: {medians['with meters'] - medians['without']:+.0f} us")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--move-ms", type=int, default=100, help="the budget M: wall move time, or CPU time")
    parser.add_argument("--backstop", type=int, default=10, help="cpu mode: move_ms = backstop x M (default 10)")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--load", type=int, default=2, help="busy loops running beside the tournament (default 2)")
    parser.add_argument("--games-per-pairing", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3, help="runs per mode, alternating wall and cpu")
    parser.add_argument("--overhead", action="store_true", help="measure what CPU meters cost the referee instead")
    parser.add_argument("--games", type=int, default=20, help="--overhead: games per match (default 20)")
    args = parser.parse_args()
    if args.overhead:
        print(f"{os.cpu_count()} CPUs ({cpu_model()}), Python {platform.python_version()}; {args.games} games a match")
        overhead(args)
        return 0
    print(f"{os.cpu_count()} CPUs ({cpu_model()}), Python {platform.python_version()}; bots {', '.join(BOTS)}; "
          f"M = {args.move_ms} ms, backstop {args.backstop}x, concurrency {args.concurrency}, {args.load} busy loops, "
          f"{15 * args.games_per_pairing} games a run; load average before: {os.getloadavg()[0]:.2f}")
    results: dict[str, list[dict[str, object]]] = {"wall": [], "cpu": []}
    loops = start_load(args.load)
    try:
        for k in range(args.runs):
            for mode in ("wall", "cpu"):
                r = one_run(args, mode, seed=100 + k)  # both modes play the same schedule and decks
                results[mode].append(r)
                print(f"run {k + 1} {mode:4s}: {r['games']} games in {r['seconds']:.0f} s, load {os.getloadavg()[0]:.2f}; "
                      f"timeouts {r['timeouts'] or 'none'}; lookahead moves {r['moves']}: wall median "
                      f"{r['wall_median']:.1f} / p99 {r['wall_p99']:.1f} / max {r['wall_max']:.1f} ms, CPU median "
                      f"{r['cpu_median']:.1f} / p99 {r['cpu_p99']:.1f} / max {r['cpu_max']:.1f} ms", flush=True)
                for line in r["reasons"]:  # type: ignore[union-attr]
                    print(f"    {line}")
    finally:
        stop_load(loops)
    print()
    for mode, runs in results.items():
        totals = [sum(r["timeouts"].values()) for r in runs]  # type: ignore[union-attr]
        print(f"{mode:4s}: timeouts per run {totals} (median {statistics.median(totals)}); lookahead CPU per move, "
              f"median of runs {statistics.median(r['cpu_median'] for r in runs):.1f} ms; "
              f"run time median {statistics.median(r['seconds'] for r in runs):.0f} s")  # type: ignore[misc]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
