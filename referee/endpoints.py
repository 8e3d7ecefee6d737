"""Bot endpoints: an address of a running bot, or a command the referee starts and stops.

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
import re
import shlex
import shutil
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from .errors import EndpointError

ADDRESS_ENV = "CASINO_BOT_ADDRESS"
STOP_WAIT_S = 2.0
MAX_MESSAGE_BYTES = 1 << 20  # 1 MiB: a move is a few hundred bytes; bigger answers are refused
CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", 16 << 20),
    ("grpc.enable_retries", 0),
]
_HOST_PORT = re.compile(r"^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.\-]+):(\d{1,5})$")
_LIVE_GROUPS: set[int] = set()
# On Linux a started bot is also told to die with the process that started it (prctl
# PR_SET_PDEATHSIG through util-linux's setpriv, which then execs the bot in place), so even a
# referee killed with SIGKILL leaves no bot behind. Where setpriv is missing, the atexit and
# signal paths still stop every bot on any exit short of SIGKILL.
_DIE_WITH_PARENT = ("setpriv", "--pdeathsig", "KILL", "--") if sys.platform == "linux" and shutil.which("setpriv") else ()


@dataclass(frozen=True, slots=True)
class BotEndpoint:
    """Where a bot is: ``address`` (a gRPC target) or ``command`` (argv to start)."""

    spec: str
    address: str | None = None
    command: tuple[str, ...] = ()
    cwd: str | None = None
    env: tuple[tuple[str, str], ...] = field(default=())

    @property
    def is_process(self) -> bool:
        return not self.address

    @staticmethod
    def is_address(spec: str) -> bool:
        """True for ``unix:...`` and ``host:port`` specs (what a client may name remotely)."""
        text = spec.strip()
        return text.startswith("unix:") or bool(_HOST_PORT.match(text))

    @classmethod
    def parse(cls, spec: str, *, cwd: str | None = None, env: dict[str, str] | None = None) -> "BotEndpoint":
        """``unix:/path`` or ``host:port`` is an address; ``cmd:...`` or anything else is a command.

        A command's program must exist (on PATH or as a path) and be an executable file, so typos
        and a script without its execute bit fail before a match starts, not as start-up forfeits.
        """
        text = spec.strip()
        if not text:
            raise EndpointError("empty bot endpoint")
        if text.startswith("unix:"):
            if len(text) <= len("unix:"):
                raise EndpointError(f"bad bot address {spec!r}: unix: needs a socket path")
            return cls(spec=spec, address=text)
        if text.startswith("cmd:"):
            text = text[len("cmd:"):].strip()
        elif (address := _HOST_PORT.match(text)) is not None:
            port = int(address.group(2))
            if not 0 < port < 65536:
                raise EndpointError(f"bad bot address {spec!r}: port must be 1..65535")
            return cls(spec=spec, address=text)
        try:
            argv = tuple(shlex.split(text))
        except ValueError as exc:
            raise EndpointError(f"bad bot command {spec!r}: {exc}") from None
        if not argv:
            raise EndpointError(f"bad bot command {spec!r}")
        program = argv[0]
        base = Path(cwd) if cwd else Path.cwd()
        if os.sep in program:
            path = base / program
            try:
                exists, is_dir = path.exists(), path.is_dir()
            except OSError as exc:  # e.g. a folder on the way that we may not enter
                raise EndpointError(f"bad bot command {spec!r}: cannot look at {_shown(program)}: "
                                    f"{exc.strerror or exc}") from None
            if not exists:
                raise EndpointError(f"unknown bot {spec!r}: {_shown(program)} does not exist")
            if is_dir:
                raise EndpointError(f"bad bot command {spec!r}: {_shown(program)} is a directory, not a program")
            if not os.access(path, os.X_OK):  # root too: X_OK needs an execute bit on a file
                raise EndpointError(f"bad bot command {spec!r}: {_shown(program)} is not executable "
                                    "(chmod +x it, or start it through its interpreter, e.g. python3 bot.py)")
        elif shutil.which(program) is None:
            raise EndpointError(f"unknown bot {spec!r}: no program {program!r} on PATH")
        return cls(spec=spec, command=argv, cwd=cwd, env=tuple(sorted((env or {}).items())))

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (for a job queue to carry it); ``from_dict`` reads it back."""
        return {"spec": self.spec, "address": self.address, "command": list(self.command), "cwd": self.cwd,
                "env": dict(self.env)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "BotEndpoint":
        """Inverse of ``to_dict``; EndpointError on anything else. The program is not looked up
        again: whoever made the endpoint checked it, and the machine that starts it reports a
        missing one as a start-up failure."""
        try:
            address, command, env = data["address"], data["command"], data["env"]
            if (address is None) == (not command):
                raise EndpointError("a bot endpoint is an address or a command, not both or neither")
            if not all(isinstance(a, str) for a in command) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
                raise EndpointError("a bot endpoint's command and env hold strings")
            return cls(spec=str(data["spec"]), address=None if address is None else str(address),
                       command=tuple(command), cwd=None if data["cwd"] is None else str(data["cwd"]),
                       env=tuple(sorted(env.items())))
        except (KeyError, TypeError, AttributeError) as exc:
            raise EndpointError(f"malformed bot endpoint: {exc!r}") from None


def _shown(text: str) -> str:
    """A path as it is when printable, else its repr: an error message stays one line."""
    return text if text.isprintable() else repr(text)


class BotProcess:
    """A started bot: its process group, log file and listening address."""

    def __init__(self, endpoint: BotEndpoint, address: str, log_path: Path) -> None:
        self.endpoint = endpoint
        self.address = address
        self.log_path = log_path
        self.process: asyncio.subprocess.Process | None = None

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


async def wait_healthy(channel: grpc.aio.Channel, deadline: float, process: BotProcess | None) -> str | None:
    """Wait until the bot answers the standard health check (or, when it has no health service,
    until its channel is ready). Returns None when healthy, else the reason it is not."""
    loop = asyncio.get_running_loop()
    stub = health_pb2_grpc.HealthStub(channel)
    last = "no answer"
    while True:
        if process is not None and process.exited:
            return f"the bot process {process.exit_description} before it was ready"
        left = deadline - loop.time()
        if left <= 0:
            return f"not healthy within the startup time ({last})"
        try:
            reply = await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=min(left, 1.0))
            if reply.status == health_pb2.HealthCheckResponse.SERVING:
                return None
            last = f"health status {health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)}"
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.UNIMPLEMENTED:
                return None  # reachable, just without a health service
            last = f"{exc.code().name}: {exc.details()}"
        await asyncio.sleep(min(0.05, max(0.0, deadline - loop.time())))
