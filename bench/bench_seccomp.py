"""System-call filter benchmark: what the bots' seccomp filter (referee/sandbox/seccomp.py) costs.

Usage: python bench/bench_seccomp.py [--calls N] [--starts N] [--round-trips N] [--runs R]

Both figures run in the sandbox a bot gets (bwrap, prlimit, setpriv as root; system folders only),
with and without ``--seccomp``, taking turns (filtered, unfiltered, ...) so a drifting machine
moves both alike; each figure is the median of R runs, the ratio filtered / unfiltered.

1. Per system call: the system's Python makes N cheap calls (``os.getppid``, which the kernel
   answers at once, so the filter's share is as large as it gets) and says the time per call.
2. Start-up: from starting the sandbox of ``true`` to its exit, N starts (what the filter adds to
   each bot's start: the program handed over and installed).
3. Per move: the Turn/answer round trip to the built-in Python bot started by the sandbox
   launcher, with the filter and with the same machine told it has none (bench_sandbox.py's loop).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from referee.sandbox import SandboxSettings, make_launcher  # noqa: E402
from referee.sandbox.machine import probe, system_sandbox_argv  # noqa: E402
from referee.sandbox.seccomp import program, program_fd  # noqa: E402

LOOP = ("import os, time\nn = {n}\nstart = time.perf_counter_ns()\nfor _ in range(n):\n    os.getppid()\n"
        "print((time.perf_counter_ns() - start) / n)")


def run_sandboxed(command: list[str], filtered: bool) -> tuple[float, str]:
    """Seconds from start to exit of ``command`` in a bot's sandbox, and what it printed."""
    machine = probe()
    fd = program_fd(program()[0] or b"") if filtered else None
    with tempfile.TemporaryDirectory(prefix="casino-bench-") as folder:
        try:
            argv = system_sandbox_argv(machine.tools, machine.as_root, command, folder, fd)
            start = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120,
                                  pass_fds=(fd,) if fd is not None else ())
            return time.perf_counter() - start, done.stdout
        finally:
            if fd is not None:
                os.close(fd)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=1_000_000, help="system calls per run (default 1000000)")
    parser.add_argument("--starts", type=int, default=20, help="sandbox starts per run (default 20)")
    parser.add_argument("--round-trips", type=int, default=3000, help="Turns per run (default 3000)")
    parser.add_argument("--runs", type=int, default=7, help="runs of each (default 7)")
    args = parser.parse_args()
    machine = probe()
    if machine.bwrap_problem or machine.seccomp_problem:
        print(f"cannot measure here: {machine.bwrap_problem or machine.seccomp_problem}", file=sys.stderr)
        return 2
    python = next((p for p in (f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}",
                               "/usr/bin/python3") if os.access(p, os.X_OK)), None)
    if python is None:
        print("cannot measure here: no system Python (/usr/bin/python3) to run inside the sandbox", file=sys.stderr)
        return 2
    from bench_sandbox import round_trips  # bench/ is on the path as this script's folder

    launchers = {True: make_launcher(SandboxSettings(mode="bwrap"), machine),
                 False: make_launcher(SandboxSettings(mode="bwrap"),
                                      dataclasses.replace(machine, seccomp_problem="off for the benchmark"),
                                      warn=lambda line: None)}
    per_call: dict[bool, list[float]] = {True: [], False: []}
    starts: dict[bool, list[float]] = {True: [], False: []}
    per_move: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.runs):
        for filtered in (True, False):
            _, said = run_sandboxed([python, "-I", "-S", "-c", LOOP.format(n=args.calls)], filtered)
            per_call[filtered].append(float(said))
            took = [run_sandboxed(["/bin/true"], filtered)[0] for _ in range(args.starts)]
            starts[filtered].append(statistics.median(took) * 1000)
            with tempfile.TemporaryDirectory(prefix="casino-bench-") as folder:
                seconds = asyncio.run(round_trips(launchers[filtered], args.round_trips, Path(folder)))
            per_move[filtered].append(seconds * 1e6)

    def row(what: str, values: dict[bool, list[float]], unit: str) -> None:
        on, off = statistics.median(values[True]), statistics.median(values[False])
        ratios = [a / b for a, b in zip(values[True], values[False])]
        print(f"{what}: filtered {on:.1f} {unit} ({min(values[True]):.1f}-{max(values[True]):.1f}), "
              f"unfiltered {off:.1f} {unit} ({min(values[False]):.1f}-{max(values[False]):.1f}), "
              f"ratio {statistics.median(ratios):.3f} (pairs {min(ratios):.3f}-{max(ratios):.3f}), "
              f"difference {on - off:+.1f} {unit}")

    print(f"{args.runs} runs each, alternating; as {'root' if machine.as_root else 'another user'}; "
          f"filter of {len(program()[0] or b'') // 8} instructions")
    row(f"per system call (os.getppid, {args.calls} per run)", per_call, "ns")
    row(f"start-up of true in the sandbox ({args.starts} per run, median)", starts, "ms")
    row(f"Turn/answer round trip, built-in Python bot ({args.round_trips} per run, median)", per_move, "us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
