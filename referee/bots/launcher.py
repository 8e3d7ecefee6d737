"""Launchers start a bot's process: the seam where a sandbox backend plugs in (referee/sandbox/).

A started bot runs in its own process group (its own session), learns where to listen from
``CASINO_BOT_ADDRESS``, has its stdout and stderr written to a log file (capped), and is stopped
with its whole group: SIGTERM, then SIGKILL after a short wait. Every started group is also
killed at interpreter exit, and on Linux it is tied to the referee's life (die_with_parent), so
no bot outlives the referee, even one killed with SIGKILL. ``LocalLauncher`` is the sandbox's
"none" mode; referee/sandbox/ has the others.
"""


from __future__ import annotations

import asyncio
import atexit
import contextlib
import errno
import os
import shlex
import shutil
import signal
from pathlib import Path
from typing import Protocol

from ..errors import PlatformFault, platform_fault
from ..metrics import BOTS_RUNNING
from .cpu import CpuMeter, ProcTreeMeter
from .die_with_parent import guard_argv
from .endpoint import BotEndpoint
from .logcap import CappedLog, open_log, private_folder

ADDRESS_ENV = "CASINO_BOT_ADDRESS"
STOP_WAIT_S = 2.0
DEFAULT_LOG_CAP = 4 << 20  # bytes of a bot's output kept in its log (the sandbox's log_cap_mib)
_LIVE_GROUPS: set[int] = set()


def _live_groups() -> int:
    """``referee_bots_running``: every started group until it is stopped."""
    return len(_LIVE_GROUPS)



class BotProcess:
    """A started bot: its process group, log file and listening address.

    Its stdout and stderr reach its log through a pipe the referee reads (``CappedLog``): at most
    ``log_cap`` bytes are kept. Subclasses (the sandbox's) change how the command is run
    (``command``), what is done once it ends (``cleanup``) and how its end is described
    (``death_reason``).
    """

    def __init__(self, endpoint: BotEndpoint, address: str, log_path: Path, log_cap: int = DEFAULT_LOG_CAP) -> None:
        self.endpoint = endpoint
        self.address = address
        self.log_path = log_path
        self.log_cap = log_cap
        self.process: asyncio.subprocess.Process | None = None
        self._meter: CpuMeter | None = None
        self.log: CappedLog | None = None
        self.pass_fds: tuple[int, ...] = ()  # open files ``command`` hands the child (closed here once it started)

    def command(self) -> tuple[list[str], dict[str, str], str | None]:
        """The argv, environment and working directory to start; OSError when it cannot be."""
        env = {**os.environ, **dict(self.endpoint.env), ADDRESS_ENV: self.address}
        command = list(self.endpoint.command)
        # Checked here, not by the exec: the guard in front of it (die_with_parent) would only exit.
        program = (shutil.which(command[0], path=env.get("PATH")) if os.sep not in command[0]
                   else os.path.join(self.endpoint.cwd or "", command[0]))
        if program is None or not os.access(program, os.X_OK):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command[0])
        return command, env, self.endpoint.cwd

    def header(self) -> str:
        """The first line of each start in the log."""
        return f"--- starting {shlex.join(self.endpoint.command)} on {self.address}"

    async def start(self) -> None:
        try:
            argv, env, cwd = self.command()
            argv = guard_argv(argv)  # on Linux it dies with the referee, even one killed with SIGKILL
            try:
                private_folder(self.log_path.parent)
                with open_log(self.log_path) as log:
                    log.write(f"{self.header()}\n".encode())
            except OSError as exc:  # the referee's own file: the platform's fault, never the bot's
                raise platform_fault(exc, f"cannot write the bot's log {self.log_path}") from exc
            read_end, write_end = os.pipe()
            try:
                self.process = await asyncio.create_subprocess_exec(
                    *argv,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=write_end,
                    stderr=write_end,
                    cwd=cwd,
                    env=env,
                    start_new_session=True,  # its own process group, killed as a whole
                    pass_fds=self.pass_fds,
                )
            except BaseException:
                os.close(read_end)
                raise
            finally:
                os.close(write_end)  # the bot holds the only write end now: EOF when it (all of it) ends
        finally:
            for fd in self.pass_fds:
                os.close(fd)
            self.pass_fds = ()
        _LIVE_GROUPS.add(self.process.pid)
        # set here, not at import, so that importing the launcher does not load prometheus_client;
        # until a first bot starts the gauge reads 0 all the same
        BOTS_RUNNING.set_function(_live_groups)
        self.log = CappedLog(read_end, self.log_path, self.log_cap)
        self._meter = self.make_meter()

    def make_meter(self) -> CpuMeter:
        """What its moves' CPU time is read from: its process tree through /proc (a sandboxed
        bot with a cgroup of its own reads the cgroup's count instead)."""
        assert self.process is not None
        return ProcTreeMeter(self.process.pid)

    def cpu_meter(self) -> CpuMeter | None:
        """What the referee reads the bot's CPU time from (``make_meter``); None when it is not running."""
        if self.process is None or self.process.returncode is not None:
            return None
        return self._meter

    @property
    def exited(self) -> bool:
        return self.process is None or self.process.returncode is not None

    def platform_fault(self) -> PlatformFault | None:
        """What the platform failed to do for this bot so far (its log could not be written: the
        pipe is still drained, but the game must not go on as if it were), else None."""
        if self.log is not None and self.log.error is not None:
            return platform_fault(self.log.error, f"cannot write the bot's log {self.log_path}")
        return None

    async def exit_fault(self) -> PlatformFault | None:
        """Once the process has ended by itself: the PlatformFault when the platform, not the bot,
        ended it (a sandbox that could not be set up, referee/sandbox/process.py), else None."""
        return self.platform_fault()

    def death_reason(self) -> str | None:
        """Why the process ended when something other than its status says it (a sandbox limit)."""
        return None

    def returncode_signal(self, code: int) -> int | None:
        """The signal that killed the bot, read from its exit status (None: it exited)."""
        return -code if code < 0 else None

    def limit_note(self) -> str:
        """" (it had reached its process limit, N)" when its sandbox refused it processes, else ""."""
        return ""

    @property
    def exit_description(self) -> str:
        if self.process is None or self.process.returncode is None:
            return "running"
        reason = self.death_reason()
        if reason:
            return reason
        code = self.process.returncode
        sig = self.returncode_signal(code)
        if sig is not None:
            try:
                return f"killed by {signal.Signals(sig).name}"
            except ValueError:
                return f"killed by signal {sig}"
        return f"exited with status {code}"

    def terminate(self) -> None:
        """Ask the bot to end (SIGTERM to its process group): the first step of ``stop``."""
        if self.process is not None:
            _signal_group(self.process.pid, signal.SIGTERM)

    async def cleanup(self) -> None:
        """After the process group is gone: what else the bot leaves (nothing, here)."""

    def limits_reached(self) -> list[str]:
        """What was limited while the bot ran, one line each (here only its log's cap)."""
        if self.log is None or not self.log.cut:
            return []
        return [f"log cap ({_mib(self.log_cap)}) reached: {self.log.discarded} more bytes of output discarded"]

    def trailer(self) -> list[str]:
        """Lines for the end of the log once the bot has stopped (what was limited)."""
        return self.limits_reached()

    def _close_meter(self) -> None:
        if self._meter is not None:
            self._meter.close()
            self._meter = None

    def kill_now(self) -> None:
        """SIGKILL everything of the bot at once, without waiting: what ``stop`` does when it is
        itself cancelled or fails on the way, so that no bot outlives an interrupted stop."""
        if self.process is not None:
            _signal_group(self.process.pid, signal.SIGKILL)

    async def stop(self) -> None:
        """Stop the whole process group: SIGTERM, then SIGKILL if it lingers. Cancelled (or
        failing) on the way, it kills the bot at once (``kill_now``) before it gives up."""
        proc = self.process
        if proc is None:
            return
        pgid = proc.pid
        try:
            if proc.returncode is None:
                self.terminate()
                try:
                    await asyncio.wait_for(proc.wait(), STOP_WAIT_S)
                except asyncio.TimeoutError:
                    pass
            _signal_group(pgid, signal.SIGKILL)  # children that outlived the leader, too
            if proc.returncode is None:
                await proc.wait()
            self._close_meter()  # before the cleanup, which may remove the cgroup it reads
            await self.cleanup()
        except BaseException:
            self.kill_now()
            raise
        finally:
            _LIVE_GROUPS.discard(pgid)
            self._close_meter()
            if self.address.startswith("unix:"):
                Path(self.address[len("unix:"):]).unlink(missing_ok=True)
            if self.log is not None:
                await asyncio.to_thread(self.log.finish)
                lines = self.trailer()
                if lines:
                    with contextlib.suppress(OSError), open(self.log_path, "ab") as log:
                        log.write("".join(f"--- {line}\n" for line in lines).encode())


class Launcher(Protocol):
    """Starts a bot's process for a slot: the seam where other ways of running a bot (a sandbox)
    plug in. Today's implementation is ``LocalLauncher``."""

    async def launch(self, endpoint: BotEndpoint, address: str, log_path: Path, writable: tuple[str, ...] = (),
                     network: bool = False) -> BotProcess:
        """Start ``endpoint``'s command listening on ``address``, its output to ``log_path``;
        OSError when it cannot be started. ``writable``: folders it may write (a package's build
        folder); ``network``: the host's network (a build the operator allows it for)."""
        ...


class LocalLauncher:
    """Starts a bot as a child process of the referee, in its own process group (``BotProcess``),
    with the referee's environment and no limits: the sandbox's "none" mode."""

    def __init__(self, log_cap: int = DEFAULT_LOG_CAP) -> None:
        self.log_cap = log_cap

    async def launch(self, endpoint: BotEndpoint, address: str, log_path: Path, writable: tuple[str, ...] = (),
                     network: bool = False) -> BotProcess:
        process = BotProcess(endpoint, address, log_path, self.log_cap)  # no sandbox: it may write and reach anything
        await process.start()
        return process


LOCAL_LAUNCHER = LocalLauncher()


def _mib(size: int) -> str:
    return f"{size / (1 << 20):g} MiB"


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


@atexit.register
def _kill_live_groups() -> None:
    for pgid in list(_LIVE_GROUPS):
        _signal_group(pgid, signal.SIGKILL)

