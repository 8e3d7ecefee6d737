"""The referee's and the arena's processes run on uvloop unless CASINO_EVENT_LOOP says asyncio
(referee/loop.py; docs/operations.md, "The event loop and gRPC's settings")."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from referee.errors import UsageError
from referee.loop import LOOP_ENV, chosen_loop, run_main
from tests.conftest import ROOT


async def loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_commands_run_on_uvloop_by_default_and_on_asyncio_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LOOP_ENV, raising=False)
    assert chosen_loop() == "uvloop" and run_main(loop_module()).startswith("uvloop")
    monkeypatch.setenv(LOOP_ENV, "asyncio")
    assert chosen_loop() == "asyncio" and run_main(loop_module()).startswith("asyncio")


def test_an_unknown_loop_is_one_error_line_and_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOOP_ENV, "trio")
    with pytest.raises(UsageError, match="CASINO_EVENT_LOOP='trio': expected one of uvloop, asyncio"):
        run_main(loop_module())
    bot = f"{sys.executable} -m referee.bots.builtin"
    done = subprocess.run([sys.executable, "-m", "referee.cli", "match", "--games", "1", "--bot", bot, "--bot", bot],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), LOOP_ENV: "trio"})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["referee: error: CASINO_EVENT_LOOP='trio': expected one of uvloop, asyncio"]
