"""Launchers start a bot's process: the seam where a sandbox backend plugs in (referee/sandbox/).

A started bot runs in its own process group (its own session), learns where to listen from
``CASINO_BOT_ADDRESS``, writes stdout and stderr to a log file, and is stopped with its whole
group: SIGTERM, then SIGKILL after a short wait. Every started group is also killed at
interpreter exit, so no bot outlives the referee.
"""


from __future__ import annotations

import asyncio
import atexit
import errno
import os
import shlex
import shutil
import signal
import sys
from pathlib import Path
from typing import Protocol

from .cpu import CpuMeter, ProcTreeMeter
from .endpoint import BotEndpoint

ADDRESS_ENV = "CASINO_BOT_ADDRESS"
STOP_WAIT_S = 2.0
_LIVE_GROUPS: set[int] = set()
# On Linux a started bot is also told to die with the process that started it (prctl
# PR_SET_PDEATHSIG through util-linux's setpriv, which then execs the bot in place), so even a
# referee killed with SIGKILL leaves no bot behind. Where setpriv is missing, the atexit and
# signal paths still stop every bot on any exit short of SIGKILL.
_DIE_WITH_PARENT = ("setpriv", "--pdeathsig", "KILL", "--") if sys.platform == "linux" and shutil.which("setpriv") else ()



class BotProcess:
    """A started bot: its process group, log file and listening address."""

    def __init__(self, endpoint: BotEndpoint, address: str, log_path: Path) -> None:
        self.endpoint = endpoint
        self.address = address
        self.log_path = log_path
        self.process: asyncio.subprocess.Process | None = None
        self._meter: ProcTreeMeter | None = None

    async def start(self) -> None:
        env = {**os.environ, **dict(self.endpoint.env), ADDRESS_ENV: self.address}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            log.write(f"--- starting {shlex.join(self.endpoint.command)} on {self.address}\n".encode())
            log.flush()
            command = self.endpoint.command
            if _DIE_WITH_PARENT:
                program = (shutil.which(command[0], path=env.get("PATH")) if os.sep not in command[0]
                           else os.path.join(self.endpoint.cwd or "", command[0]))
                if program is None or not os.access(program, os.X_OK):
                    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command[0])
                command = (*_DIE_WITH_PARENT, *command)
            self.process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
                cwd=self.endpoint.cwd,
                env=env,
                start_new_session=True,  # its own process group, killed as a whole
            )
        _LIVE_GROUPS.add(self.process.pid)
        self._meter = ProcTreeMeter(self.process.pid)

    def cpu_meter(self) -> CpuMeter | None:
        """What the referee reads the bot's CPU time from (its process tree through /proc; a
        sandbox backend with a cgroup per bot gives its own); None when it is not running."""
        if self.process is None or self.process.returncode is not None:
            return None
        return self._meter

    @property
    def exited(self) -> bool:
        return self.process is None or self.process.returncode is not None

    @property
    def exit_description(self) -> str:
        if self.process is None or self.process.returncode is None:
            return "running"
        code = self.process.returncode
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with status {code}"

    async def stop(self) -> None:
        """Stop the whole process group: SIGTERM, then SIGKILL if it lingers."""
        proc = self.process
        if proc is None:
            return
        pgid = proc.pid
        try:
            if proc.returncode is None:
                _signal_group(pgid, signal.SIGTERM)
                try:
                    await asyncio.wait_for(proc.wait(), STOP_WAIT_S)
                except asyncio.TimeoutError:
                    pass
            _signal_group(pgid, signal.SIGKILL)  # children that outlived the leader, too
            if proc.returncode is None:
                await proc.wait()
        finally:
            _LIVE_GROUPS.discard(pgid)
            if self._meter is not None:
                self._meter.close()
                self._meter = None
            if self.address.startswith("unix:"):
                Path(self.address[len("unix:"):]).unlink(missing_ok=True)


class Launcher(Protocol):
    """Starts a bot's process for a slot: the seam where other ways of running a bot (a sandbox)
    plug in. Today's implementation is ``LocalLauncher``."""

    async def launch(self, endpoint: BotEndpoint, address: str, log_path: Path) -> BotProcess:
        """Start ``endpoint``'s command listening on ``address``, its output to ``log_path``;
        OSError when it cannot be started."""
        ...


class LocalLauncher:
    """Starts a bot as a child process of the referee, in its own process group (``BotProcess``)."""

    async def launch(self, endpoint: BotEndpoint, address: str, log_path: Path) -> BotProcess:
        process = BotProcess(endpoint, address, log_path)
        await process.start()
        return process


LOCAL_LAUNCHER = LocalLauncher()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


@atexit.register
def _kill_live_groups() -> None:
    for pgid in list(_LIVE_GROUPS):
        _signal_group(pgid, signal.SIGKILL)

