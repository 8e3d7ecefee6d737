"""Rule of the referee: a bot dies with the process that started it, even one killed with SIGKILL,
including one killed in the instant between starting the bot and tying it to its life
(referee/bots/die_with_parent.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from referee.bots.die_with_parent import ORPHANED_STATUS, guard_argv

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_guard_whose_parent_is_not_the_one_named_runs_nothing(tmp_path: Path) -> None:
    """What a referee killed before the guard's prctl leaves: the guard, adopted by another
    process, sees a parent that is not the referee and exits without running the bot."""
    ran = tmp_path / "ran"
    argv = guard_argv(["/bin/sh", "-c", f"touch {ran}"])
    pid_at = argv.index(str(os.getpid()))
    argv[pid_at] = "1"  # the parent it was started by is gone: "1" stands for its adopter's pid
    done = subprocess.run(argv, capture_output=True, timeout=30)
    assert done.returncode == ORPHANED_STATUS, done.stderr
    assert not ran.exists()


def test_a_guarded_command_runs_in_place_and_dies_with_its_killed_parent(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    # a parent that starts a guarded sleeper in a session of its own, then waits to be killed
    parent = textwrap.dedent(f"""
        import subprocess, sys, time
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from referee.bots.die_with_parent import guard_argv
        child = subprocess.Popen(guard_argv(["/bin/sleep", "600"]), start_new_session=True)
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", parent])
    try:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text()):
            assert time.monotonic() < deadline, "the parent did not start its child"
            time.sleep(0.02)
        child = int(pid_file.read_text())
        while Path(f"/proc/{child}/exe").resolve() != Path("/bin/sleep").resolve() and \
                Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")[0] != b"/bin/sleep":
            assert time.monotonic() < deadline, "the guard did not exec the command in place"
            time.sleep(0.02)
        assert _alive(child)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(child), "the guarded command outlived its killed parent"
