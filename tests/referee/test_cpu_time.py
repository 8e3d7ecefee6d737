"""CPU time per move (docs/protocol.md, "Time limits"): what the /proc meter counts, that a
bot's busy loop is recorded as CPU time and a sleep is not, and that the opt-in CPU-time limit
times out a bot that burns far more than it while a bot that only waits (wall clock) plays on.

Real bot processes over real gRPC. Every margin is 10x or more, and the busy loop burns CPU time
(its thread's own clock), not wall time: a slow or loaded machine takes longer, the verdicts stay.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from casino.v1 import game_pb2, referee_pb2
from referee.bots.cpu import ProcTreeMeter, proc_metering_problem
from referee.bots.endpoint import BotEndpoint
from referee.clock import TimeControl
from referee.match.record import seat_move_times
from referee.match.run import run_match
from referee.match.spec import FailurePolicy, MatchSpec
from referee.rules import RuleOptions
from tests.conftest import SCRIPTED_BOT, assert_no_bot_processes, builtin_bot_command
from tests.support import run_referee

pytestmark = pytest.mark.skipif(proc_metering_problem() is not None, reason=str(proc_metering_problem()))
F = game_pb2.FailureKind
BURN_MS = 300  # CPU a burning bot uses on each of its burning turns
SLEEP_MS = 1000  # wall time a sleeping bot waits on each of its sleeping turns: 10x the CPU limit below
CPU_LIMIT_MS = 100
BACKSTOP_MS = 30_000  # the wall-clock limit beside a CPU limit: far beyond any of these turns


def scripted(mode: str, *, after: int = 1, turns: int = 2, ms: int = BURN_MS) -> str:
    return shlex.join([sys.executable, str(SCRIPTED_BOT), mode, "--after", str(after), "--turns", str(turns),
                       "--ms", str(ms)])


def play(bots: list[str], control: TimeControl, tmp_path: Path, policy: FailurePolicy = FailurePolicy.FORFEIT):
    events: list[referee_pb2.RunMatchResponse] = []
    spec = MatchSpec(bots=[BotEndpoint.parse(b) for b in bots], options=RuleOptions(players=len(bots)), seed=5,
                     time_control=control, policy=policy, logs_dir=tmp_path)
    return asyncio.run(run_match(spec, events.append)), events


BURNER = r"""
import subprocess, sys, threading, time
def burn(s):
    start = time.thread_time()
    while time.thread_time() - start < s:
        pass
SPIN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"
thread = threading.Thread(target=burn, args=({s},))
thread.start()
alive = subprocess.Popen([sys.executable, "-c", SPIN.format(s={s}) + "print(flush=True)\ntime.sleep(60)"],
                         stdout=subprocess.PIPE)
subprocess.run([sys.executable, "-c", SPIN.format(s={s})], check=True)  # exits and is reaped
thread.join()
alive.stdout.readline()  # it has burnt its share and sleeps
print(alive.pid, flush=True)
time.sleep(60)
"""


def test_the_proc_meter_counts_threads_live_children_and_reaped_children() -> None:
    """A process that burns 0.3 s in a thread, 0.3 s in a child still alive, and 0.3 s in a child
    it waited for: the meter counts all three (loosely: at least 80% of 0.9 s)."""
    proc = subprocess.Popen([sys.executable, "-c", BURNER.format(s=0.3)], stdout=subprocess.PIPE, text=True)
    child = None
    try:
        meter = ProcTreeMeter(proc.pid)
        assert meter.cpu_ns() is not None
        assert proc.stdout is not None
        child = int(proc.stdout.readline())
        used = meter.cpu_ns()
        assert used is not None and used >= 0.8 * 0.9e9, used
    finally:
        if child is not None:
            os.kill(child, signal.SIGKILL)  # the sleeping child, by the pid it gave
        proc.kill()
        proc.wait(timeout=10)
    assert meter.cpu_ns() is None  # gone: nothing to read


PARENT = r"""
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(child.pid, flush=True)
sys.stdin.readline()  # the test has read the meter with the child alive
child.kill()
child.wait()
print(flush=True)
time.sleep(60)
"""


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_the_proc_meter_keeps_its_files_open_for_the_tree_it_saw_and_closes_those_of_a_gone_child() -> None:
    """The meter keeps each process's /proc files open between readings (cheaper readings): a
    child's files while it lives, closed once it is gone; every file closed by ``close``."""
    proc = subprocess.Popen([sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        proc.stdout.readline()  # its child is running
        before = _open_fds()
        meter = ProcTreeMeter(proc.pid)
        assert meter.cpu_ns() is not None
        kept = _open_fds() - before
        assert kept >= 4, kept  # parent and child: a stat and at least one children file each
        proc.stdin.write("\n")
        proc.stdin.flush()
        proc.stdout.readline()  # the child was killed and reaped
        assert meter.cpu_ns() is not None
        assert _open_fds() - before < kept  # the child's files are closed
        meter.close()
        assert _open_fds() == before and meter.cpu_ns() is None
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_a_busy_loop_is_recorded_as_cpu_time_and_a_sleep_is_not(tmp_path: Path) -> None:
    """No CPU limit: a bot that burns 300 ms of CPU on its first two turns against one that sleeps
    1 s on its first two. The record (and each play event) has each move's CPU time: at least
    half of the burn for the burner, under a tenth of the sleep for the sleeper."""
    control = TimeControl(move_time_ms=BACKSTOP_MS, startup_time_ms=20_000)
    report, events = play([scripted("burn"), scripted("sleep", ms=SLEEP_MS)], control, tmp_path)
    [game] = report.games
    assert not game.result.failures
    record = game.record
    # every move a bot was asked for has its CPU time; a forced play (the referee's) has none
    assert len(record["cpu_us"]) == len(record["timings_us"])
    assert [i for i, cpu in enumerate(record["cpu_us"]) if cpu is None] == record.get("forced", [])
    plays = [e.play for e in events if e.WhichOneof("event") == "play"]
    assert [p.cpu_us if not p.forced else None for p in plays] == record["cpu_us"]
    assert all(p.HasField("cpu_us") != p.forced for p in plays)
    times = seat_move_times(record)
    burner, sleeper = times[0], times[1]  # game 1: bot 0 in seat 0
    assert min(burner.cpu_us[:2]) >= BURN_MS * 1000 / 2, burner.cpu_us[:2]
    assert max(sleeper.cpu_us[:2]) < SLEEP_MS * 1000 / 10, sleeper.cpu_us[:2]
    assert min(sleeper.wall_us[:2]) >= SLEEP_MS * 1000  # it did wait: measured on the wall clock instead
    assert_no_bot_processes()


def test_the_cpu_limit_times_out_a_bot_that_burns_far_more(tmp_path: Path) -> None:
    """A 100 ms CPU limit, a 30 s wall backstop, and a bot that burns 2 s of CPU (20x) on its
    first turn: a TIMEOUT that names the CPU time, and the bot is stopped."""
    control = TimeControl(move_time_ms=BACKSTOP_MS, cpu_time_ms=CPU_LIMIT_MS, startup_time_ms=20_000)
    report, _ = play([scripted("burn", turns=1, ms=2000), builtin_bot_command(2)], control, tmp_path)
    [game] = report.games
    [failure] = game.result.failures
    assert (failure.seat, failure.kind, failure.play_number, failure.forfeit) == (0, F.FAILURE_KIND_TIMEOUT, 1, True)
    # cut off while it burns (the referee watches its CPU time), or judged on its answer
    reason = re.fullmatch(r"used (\d+) ms of CPU time(?: without answering, limit 100 ms|, limit 100 ms "
                          r"\(answered after \d+ ms\))", failure.reason)
    assert reason, failure.reason
    assert int(reason.group(1)) > CPU_LIMIT_MS + control.grace_ms
    assert_no_bot_processes()


def test_a_bot_in_an_endless_loop_is_cut_off_near_the_cpu_limit_not_at_the_backstop(tmp_path: Path) -> None:
    """A bot that would burn for ten minutes: the referee, reading its CPU time while it waits,
    stops at the limit. It has used well under 10x the limit and grace by then (the wall
    backstop would have let it burn for 30 s), and the game goes on to its result."""
    control = TimeControl(move_time_ms=BACKSTOP_MS, cpu_time_ms=CPU_LIMIT_MS, startup_time_ms=20_000)
    report, _ = play([scripted("burn", turns=1, ms=600_000), builtin_bot_command(2)], control, tmp_path)
    [failure] = report.games[0].result.failures
    reason = re.fullmatch(r"used (\d+) ms of CPU time without answering, limit 100 ms", failure.reason)
    assert failure.kind == F.FAILURE_KIND_TIMEOUT and reason, failure.reason
    assert CPU_LIMIT_MS + control.grace_ms < int(reason.group(1)) < 10 * (CPU_LIMIT_MS + control.grace_ms)
    assert report.games[0].result.termination == game_pb2.TERMINATION_FORFEIT
    assert_no_bot_processes()


def test_a_bot_at_an_address_has_no_cpu_time(tmp_path: Path, running_builtin_bot: tuple[str, int]) -> None:
    """Without a CPU limit a bot at an address plays as before; its moves' CPU time is not
    measured: null in the record, unset in the play events (the started bot's are set)."""
    address, _ = running_builtin_bot
    report, events = play([address, builtin_bot_command(2)], TimeControl(move_time_ms=BACKSTOP_MS), tmp_path)
    [game] = report.games
    assert not game.result.failures
    forced = set(game.record.get("forced", ()))  # the referee's plays: no bot was asked, nothing measured
    by_seat = [(seat, cpu) for i, ((seat, _), cpu) in enumerate(zip(game.record["timings_us"], game.record["cpu_us"]))
               if i not in forced]
    assert {cpu is None for seat, cpu in by_seat if seat == 0} == {True}
    assert {cpu is None for seat, cpu in by_seat if seat == 1} == {False}
    plays = [e.play for e in events if e.WhichOneof("event") == "play" and not e.play.forced]
    assert [p.HasField("cpu_us") for p in plays] == [seat == 1 for seat, _ in by_seat]


def test_under_a_cpu_limit_a_bot_that_waits_on_the_wall_clock_plays_on(tmp_path: Path) -> None:
    """The same 100 ms CPU limit: a bot that sleeps 1 s (10x the limit) on two turns uses almost no
    CPU and is not timed out; so is its opponent, the built-in random bot."""
    control = TimeControl(move_time_ms=BACKSTOP_MS, cpu_time_ms=CPU_LIMIT_MS, startup_time_ms=20_000)
    report, _ = play([scripted("sleep", ms=SLEEP_MS), builtin_bot_command(2)], control, tmp_path)
    [game] = report.games
    assert not game.result.failures, [f.reason for f in game.result.failures]
    assert game.result.termination == game_pb2.TERMINATION_NORMAL
    assert game.record["time_control"]["cpuTimeMs"] == CPU_LIMIT_MS
    assert min(seat_move_times(game.record)[0].wall_us[:2]) >= SLEEP_MS * 1000
    assert_no_bot_processes()


def test_a_timeout_on_the_wall_backstop_says_how_much_cpu_the_move_used(tmp_path: Path) -> None:
    """A CPU limit with a backstop shorter than a bot's sleep: the wall clock times it out, and the
    reason adds the move's CPU time (small: it slept), telling a waiting bot from a busy one."""
    control = TimeControl(move_time_ms=1000, cpu_time_ms=CPU_LIMIT_MS, startup_time_ms=20_000)
    report, _ = play([scripted("sleep", turns=1, ms=10_000), builtin_bot_command(2)], control, tmp_path)
    [failure] = report.games[0].result.failures
    reason = re.fullmatch(r"no answer within 1050 ms \(CPU (\d+) ms\)", failure.reason)
    assert failure.kind == F.FAILURE_KIND_TIMEOUT and reason, failure.reason
    assert int(reason.group(1)) < CPU_LIMIT_MS


def test_referee_match_takes_a_cpu_limit_and_shows_cpu_times(tmp_path: Path) -> None:
    done = run_referee("match", "--bot", builtin_bot_command(1), "--bot", builtin_bot_command(2), "--cpu-time", "500",
                       "--move-time", "5000", "--startup-time", "20000", "--records", str(tmp_path), timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = next(line for line in lines if line.startswith("bot ") and " games " in line)
    rows = [line for line in lines if line.startswith("builtin-random ")]
    assert header.endswith("move ms p50     p99 cpu ms p50     p99"), header
    assert len(rows) == 2 and all(re.search(r"\d+\.\d\d\s+\d+\.\d\d$", row) for row in rows), rows
    [record_file] = tmp_path.glob("*.json")
    assert '"cpuTimeMs": 500' in record_file.read_text()


@pytest.mark.parametrize("args, message", [
    (["--bot", "127.0.0.1:9", "--cpu-time", "100"],
     ("a CPU-time limit needs bots the referee starts: bot 2 ('127.0.0.1:9') is an address, "
      "and its CPU time cannot be measured")),
    (["--cpu-time", "2000"], "cpu_time_ms (2000) must be at most move_time_ms (1000), the wall-clock backstop"),
    (["--cpu-time", "-1"], "cpu_time_ms must be a whole number of milliseconds >= 0, not -1"),
])
def test_referee_match_refuses_a_cpu_limit_it_cannot_apply(args: list[str], message: str) -> None:
    bots = [] if "--bot" in args else ["--bot", builtin_bot_command(1)]
    done = run_referee("match", *bots, "--bot", builtin_bot_command(2), *args, timeout=60)
    assert done.returncode == 2
    assert done.stderr == f"referee: error: {message}\n"


def test_old_records_without_cpu_times_still_read() -> None:
    """A record written before CPU times existed (no ``cpu_us``) gives wall times and no CPU times."""
    old = {"timings_us": [[0, 900], [1, 1200], [0, 700]]}
    times = seat_move_times(old)
    assert times[0].wall_us == (900, 700) and times[0].cpu_us == ()
    assert times[1].wall_us == (1200,) and times[1].cpu_us == ()
    mixed = seat_move_times({"timings_us": [[0, 900], [1, 1200]], "cpu_us": [None, 800]})
    assert (mixed[0].cpu_us, mixed[1].cpu_us) == ((), (800,))


def test_the_meter_reads_in_microseconds_not_milliseconds() -> None:
    """A cheap sanity bound so a unit slip (ticks, ms) shows: this process's reading moves by about
    the CPU it burns (at least half of 0.2 s, at most its wall time plus a second)."""
    meter = ProcTreeMeter(os.getpid())
    before, wall = meter.cpu_ns(), time.monotonic()
    start = time.thread_time()
    while time.thread_time() - start < 0.2:
        pass
    after = meter.cpu_ns()
    assert before is not None and after is not None
    assert 0.1e9 <= after - before <= (time.monotonic() - wall + 1) * 1e9
