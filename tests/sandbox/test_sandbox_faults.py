"""The sandbox's failures against the bot's own (issue 26), with real bubblewrap, real cgroups and a
uid of the bot's own: a sandbox bubblewrap cannot set up, or a runtime the bot's uid cannot reach,
is a PlatformFault ("sandbox", "runtime") with every bot stopped; a bot that exits, whose program is
missing from its own folder, or that its cgroup kills for memory, is still the bot's failure. No uid left
to lease is "sandbox" too."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from casino.v1 import game_pb2
from referee.bots.endpoint import BotEndpoint
from referee.errors import PlatformFault
from referee.match.report import MatchReport
from referee.match.run import run_match
from referee.match.spec import MatchSpec
from referee.rules import RuleOptions
from referee.sandbox import SandboxSettings, make_launcher
from referee.sandbox.launcher import SandboxLauncher
from referee.sandbox.machine import probe
from tests.conftest import ROOMY_TIME, ROOT, assert_no_bot_processes, builtin_bot_command

F = game_pb2.FailureKind
NO_BWRAP = probe().bwrap_problem
pytestmark = pytest.mark.skipif(NO_BWRAP is not None, reason=f"bubblewrap cannot run here: {NO_BWRAP}")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a uid of the bot's own)")
MATCH_WAIT_S = 120


def play(bots: list[BotEndpoint], logs: Path, launcher: SandboxLauncher | None = None,
         **settings: int) -> MatchReport:
    """One game of ``bots`` in the bwrap sandbox (``settings``: SandboxSettings' limits), bounded."""
    launcher = launcher or make_launcher(SandboxSettings(mode="bwrap", **settings))  # type: ignore[assignment]
    spec = MatchSpec(bots=bots, options=RuleOptions(players=2), time_control=ROOMY_TIME, logs_dir=logs)
    return asyncio.run(asyncio.wait_for(run_match(spec, launcher=launcher), MATCH_WAIT_S))


def opponent() -> BotEndpoint:
    return BotEndpoint.parse(builtin_bot_command(2))


def startup_failure(report: MatchReport) -> str:
    """The reason of bot 0's one failure, which must be its startup forfeit."""
    (failure,) = report.games[0].result.failures
    assert (failure.seat, failure.kind, failure.forfeit) == (report.games[0].seat_bots.index(0), F.FAILURE_KIND_STARTUP,
                                                              True), failure
    return failure.reason


def test_a_sandbox_bubblewrap_cannot_set_up_is_the_platforms_fault(tmp_path: Path) -> None:
    """Real bubblewrap, given one more bind whose source is missing (as a vanished runtime or a
    broken mount would be): it fails before it runs the bot. Its JSON status has no "exit-code",
    so the game raises PlatformFault("sandbox") with bwrap's own line, instead of each bot's
    startup forfeit ("exited with status 1")."""
    tools = tmp_path / "tools"
    tools.mkdir()
    machine = probe()
    wrapper = tools / "bwrap"
    wrapper.write_text(f"#!/bin/sh\nexec {shlex.quote(machine.tools['bwrap'] or 'bwrap')} "
                       f"--ro-bind {tmp_path / 'gone'} /mnt \"$@\"\n")
    wrapper.chmod(0o755)
    launcher = SandboxLauncher(SandboxSettings(mode="bwrap"), "bwrap",
                               dataclasses.replace(machine, tools={**machine.tools, "bwrap": str(wrapper)}))
    with pytest.raises(PlatformFault) as raised:
        play([BotEndpoint.parse(builtin_bot_command(1)), opponent()], tmp_path / "logs", launcher)
    assert raised.value.condition == "sandbox"
    assert "could not be set up" in str(raised.value) and f"Can't find source path {tmp_path / 'gone'}" in str(
        raised.value), raised.value
    assert_no_bot_processes()


def test_a_bot_that_exits_at_its_start_inside_bubblewrap_is_still_the_bots_failure(tmp_path: Path) -> None:
    """The control of the one above: bubblewrap set up, the bot's command ran and exited 3."""
    folder = tmp_path / "bot"
    folder.mkdir()
    (folder / "bot.py").write_text("import sys\nsys.exit(3)\n")
    report = play([BotEndpoint.parse(f"{shlex.quote(sys.executable)} bot.py", cwd=str(folder)), opponent()],
                  tmp_path / "logs")
    assert startup_failure(report) == "the bot process exited with status 3 before it was ready"
    assert_no_bot_processes()


def test_a_program_missing_from_its_own_folder_is_still_the_bots_failure(tmp_path: Path) -> None:
    folder = tmp_path / "bot"
    folder.mkdir()
    missing = BotEndpoint(spec="./nothing_here", command=("./nothing_here",), cwd=str(folder))  # parse would refuse it
    report = play([missing, opponent()], tmp_path / "logs")
    assert startup_failure(report).startswith("cannot start './nothing_here': ")
    assert_no_bot_processes()


def test_a_bot_killed_by_its_cgroups_memory_limit_at_its_start_is_still_the_bots_failure(tmp_path: Path) -> None:
    launcher = make_launcher(SandboxSettings(mode="bwrap", memory_mib=64))
    assert isinstance(launcher, SandboxLauncher)
    if "memory" not in launcher.cgroup_limits():
        pytest.skip("no memory cgroup here: its memory limit is an rlimit")
    folder = tmp_path / "bot"
    folder.mkdir()
    (folder / "bot.py").write_text("held = [bytearray(8 << 20) for _ in range(64)]\n")  # 512 MiB, every page touched
    report = play([BotEndpoint.parse(f"{shlex.quote(sys.executable)} bot.py", cwd=str(folder)), opponent()],
                  tmp_path / "logs", launcher)
    assert startup_failure(report) == ("the bot process killed by the sandbox: memory limit (64 MiB) before it "
                                       "was ready")
    assert_no_bot_processes()


def runtime(tmp_path: Path, bin_mode: int) -> tuple[BotEndpoint, Path]:
    """A bot whose interpreter is a runtime outside its folder (``<runtime>/bin/python``, a link to
    this interpreter, with this checkout's packages on PYTHONPATH), its ``bin`` of ``bin_mode``."""
    rt = tmp_path / "runtime"
    (rt / "bin").mkdir(parents=True)
    (rt / "bin" / "python").symlink_to(sys.executable)
    (rt / "bin").chmod(bin_mode)
    folder = tmp_path / "bot"
    folder.mkdir()
    site = next(Path(sys.prefix).glob("lib/python3*/site-packages"))
    endpoint = BotEndpoint(spec="runtime python", command=(str(rt / "bin" / "python"), "-m", "referee.bots.builtin",
                                                           "--seed", "1"),
                           cwd=str(folder), env=(("PYTHONPATH", f"{site}:{ROOT}"),), read_only=(str(site), str(ROOT)))
    return endpoint, rt


@needs_root
def test_a_runtime_its_uid_cannot_reach_is_the_platforms_fault(tmp_path: Path) -> None:
    """Its runtime's bin is 0700: the bot's own uid cannot reach its interpreter. Before, that was
    the bot's startup forfeit (setpriv could not execute it); now it is PlatformFault("runtime"),
    naming the folder, its mode and the program, and the arena's up-front check says the same."""
    endpoint, rt = runtime(tmp_path, 0o700)
    with pytest.raises(PlatformFault) as raised:
        play([endpoint, opponent()], tmp_path / "logs")
    assert raised.value.condition == "runtime"
    assert (f"cannot pass through {rt / 'bin'} (mode 0700) to its program {rt / 'bin' / 'python'}: chmod o+x it"
            in str(raised.value)), raised.value
    launcher = make_launcher(SandboxSettings(mode="bwrap"))
    assert isinstance(launcher, SandboxLauncher)
    assert f"cannot pass through {rt / 'bin'} (mode 0700)" in (launcher.view_problem(endpoint) or "")
    assert_no_bot_processes()


@needs_root
def test_the_same_runtime_others_may_reach_plays(tmp_path: Path) -> None:
    """The control: the same runtime with its bin 0755 runs the bot, which plays its game."""
    endpoint, _ = runtime(tmp_path, 0o755)
    report = play([endpoint, opponent()], tmp_path / "logs")
    assert report.games[0].result.failures == [], report.games[0].result.failures
    assert_no_bot_processes()


@needs_root
def test_no_uid_left_to_lease_is_the_platforms_fault(tmp_path: Path) -> None:
    """The sandbox's one uid is held (its lock file, referee/sandbox/uids.py, as another referee's
    would be): the bot cannot be given a uid of its own. Before, each bot's startup forfeit; now PlatformFault("sandbox")."""
    from referee.sandbox.uids import take_uid

    first = 900_000 + os.getpid() % 50_000  # a uid no other test holds
    held = take_uid(first, 1)
    try:
        with pytest.raises(PlatformFault) as raised:
            play([BotEndpoint.parse(builtin_bot_command(1)), opponent()], tmp_path / "logs",
                 uid_first=first, uid_count=1)
    finally:
        held.release()
    assert raised.value.condition == "sandbox"
    assert f"cannot lease a uid for the bot: every sandbox uid ({first} to {first}) is in use" in str(raised.value)
    assert_no_bot_processes()


PROBER = """
import json, sys
from referee.sandbox import machine
machine.PROBE_TIMEOUT_S = 1
tools = json.loads(sys.argv[1])
print(json.dumps(machine._try_bwrap(tools, machine.os.geteuid() == 0, seccomp=sys.argv[2] == "1")))
"""


@pytest.mark.parametrize("seccomp", [False, True])
def test_a_prober_stopped_while_bubblewrap_ran_tries_again_instead_of_giving_up_the_sandbox(
        seccomp: bool, tmp_path: Path) -> None:
    """The probe's answer holds for the whole process (a worker's every game, where mode "auto"
    falls back to "limits" without bubblewrap). Its trial is timed by the wall clock, so a prober
    stopped while bwrap ran (SIGSTOP, a paused VM) found its deadline passed on waking: "bwrap could
    not be run: ... timed out". Here bwrap's first run stops its prober (1 s deadline) for 1.5 s and
    continues it: the trial is made again and bubblewrap is found to work."""
    from referee.sandbox.seccomp import program

    if seccomp and program()[1] is not None:
        pytest.skip(f"no system-call filter here: {program()[1]}")
    machine = probe()
    first = tmp_path / "stopped-once"
    wrapper = tmp_path / "bwrap"
    wrapper.write_text(f"#!/bin/sh\nif [ ! -e {first} ]; then : > {first}; kill -STOP $PPID; sleep 1.5; "
                       f"kill -CONT $PPID; fi\nexec {shlex.quote(machine.tools['bwrap'] or 'bwrap')} \"$@\"\n")
    wrapper.chmod(0o755)
    tools = {**machine.tools, "bwrap": str(wrapper)}
    done = subprocess.run([sys.executable, "-c", PROBER, json.dumps(tools), "1" if seccomp else "0"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert first.exists(), "the first trial stopped its prober"
    assert json.loads(done.stdout) is None, done.stdout
