"""Ctrl-C (SIGINT) and SIGTERM on ``referee match`` stop every bot process it started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT, assert_no_bot_processes, bot_processes, python_bot_command

START_WAIT_S = 30.0
# As from a terminal: a suite started as a background job inherits SIGINT ignored, and Python would
# then never turn it into KeyboardInterrupt. The disposition is reset by a program that then execs
# the referee (same pid), not by a preexec_fn: that makes subprocess fork this gRPC-using process,
# and grpcio's fork handlers can abort the child before its exec (grpc/grpc#43055, seen under load).
WITH_SIGINT = [sys.executable, "-c",
               "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_match_leaves_no_bot_running(sig: int) -> None:
    """Both bots are running mid-match (one hangs on its turn); the signal ends the referee and
    every bot process group with it."""
    before = {pid for pid, _ in bot_processes()}
    referee = subprocess.Popen(
        [*WITH_SIGINT, sys.executable, "-m", "referee.cli", "match", "--bot", python_bot_command("hang", after=1),
         "--bot", python_bot_command("normal"), "--games", "3", "--move-time", "20000"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        deadline = time.monotonic() + START_WAIT_S
        while len({pid for pid, _ in bot_processes()} - before) < 2:
            assert referee.poll() is None, referee.communicate()
            assert time.monotonic() < deadline, "the bots did not start"
            time.sleep(0.05)
        time.sleep(1.0)  # let the handshake happen and the hanging bot get its turn
        referee.send_signal(sig)
        referee.wait(timeout=20)
    finally:
        if referee.poll() is None:
            referee.kill()
            referee.wait(timeout=10)
    assert_no_bot_processes(exclude=before, wait_s=5.0)
