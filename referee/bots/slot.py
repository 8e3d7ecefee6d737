"""A bot session: one bot of a match (BotSlot): its process started through a Launcher, its
channel, health check and handshake, and its restart after a crash or a timeout.

A start that fails is the bot's startup failure, unless the platform caused it (bots/faults.py):
the referee's own folders, files, descriptors or memory, or a sandbox it could not set up. That
raises PlatformFault, with the bot stopped: never a verdict on the bot."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import grpc

from casino.v1 import bot_pb2, game_pb2

from ..clock import MONOTONIC, Clock, TimeControl
from ..errors import PlatformFault, platform_fault
from ..names import clean_name, clean_version
from ..wire.connection import CHANNEL_OPTIONS, BotConnection, StreamFailure
from ..wire.convert import PROTOCOL_MAJOR
from .endpoint import BotEndpoint
from .faults import as_platform_fault, descriptors_fault
from .health import wait_healthy
from .cpu import CpuMeter
from .launcher import LOCAL_LAUNCHER, BotProcess, Launcher
from .sockets import SOCKET_PATH_MAX, fits

log = logging.getLogger(__name__)
F = game_pb2.FailureKind
STARTUP_ATTEMPTS = 3  # consecutive failed starts after which a bot is given up for the match
# gRPC waits 1 s (then 1.6 s, ...) before it tries a refused connection again, and the first try is
# made before a just-started bot has bound its socket: that wait was most of a bot's start-up.
# Retry soon instead (20 ms, growing to at most 250 ms); a bot at an address is retried as often.
SLOT_CHANNEL_OPTIONS = [*CHANNEL_OPTIONS, ("grpc.initial_reconnect_backoff_ms", 20),
                        ("grpc.min_reconnect_backoff_ms", 20), ("grpc.max_reconnect_backoff_ms", 250)]


class BotSlot:
    """One bot of the match: its endpoint, process, channel and stream."""

    def __init__(self, index: int, endpoint: BotEndpoint, logs_dir: Path, socket_dir: Path, label: str = "",
                 name: str = "", clock: Clock = MONOTONIC, launcher: Launcher = LOCAL_LAUNCHER) -> None:
        self.index = index
        self.clock = clock  # times its start-up and, through its connection, every answer
        self.launcher = launcher  # starts its process (for a command endpoint)
        self.endpoint = endpoint
        self.label = label or f"bot{index}"  # names its log file and sockets
        self.given_name = name  # what the caller (a tournament) calls the bot; shown instead of its own
        self.hello_name = ""  # the bot's own name, from its Hello, cleaned (referee/names.py)
        self.version = ""  # from its Hello, cleaned
        self.play_events = False  # the bot asked for a PlayMade after every play
        self.log_path = logs_dir / f"{self.label}.log"
        self._socket_dir = socket_dir
        self.process: BotProcess | None = None
        self.channel: grpc.aio.Channel | None = None
        self.connection: BotConnection | None = None
        self.starts = 0
        self.failed_starts = 0
        self.startup_failure: StreamFailure | None = None
        self.needs_restart = False  # set after a timeout: restart before the next game (its state is unknown)

    @property
    def name(self) -> str:
        """The bot's name in output and records: the caller's, else its own, else its label."""
        return self.given_name or self.hello_name or self.label

    @property
    def cpu_meter(self) -> CpuMeter | None:
        """Where its moves' CPU time is read; None for a bot at an address (not measured)."""
        return self.process.cpu_meter() if self.process is not None else None

    @property
    def ready(self) -> bool:
        return (
            self.connection is not None
            and self.connection.broken is None
            and (self.process is None or not self.process.exited)
        )

    async def ensure_ready(self, handshake: bot_pb2.Handshake, control: TimeControl) -> StreamFailure | None:
        """Reuse the stream, or (re)start the bot and redo the handshake; None when ready."""
        if self.ready and not self.needs_restart:
            return None
        if self.failed_starts >= STARTUP_ATTEMPTS:
            return self.startup_failure
        await self.shutdown()
        self.needs_restart = False
        self.starts += 1
        loop = asyncio.get_running_loop()
        startup_s = control.startup_time_ms / 1000
        started = self.clock.now()
        deadline = loop.time() + self.clock.real_wait_s(startup_s)  # the real bound on waiting
        address = self.endpoint.address
        if self.endpoint.is_process:
            # a folder of its own for its socket: a sandbox shows the bot this folder and no other
            folder = self._socket_dir / self.label
            try:
                folder.mkdir(mode=0o700, exist_ok=True)
            except OSError as exc:  # the referee's own folder
                raise platform_fault(exc, f"cannot make the bot's socket folder {folder}") from exc
            address = f"unix:{folder / f'{self.starts}.sock'}"
            if not fits(address.removeprefix("unix:")):
                return await self._startup_failed(
                    f"its socket path {address.removeprefix('unix:')} is longer than a unix socket's "
                    f"{SOCKET_PATH_MAX} bytes: set TMPDIR to a shorter folder")
            try:
                self.process = await self.launcher.launch(self.endpoint, address, self.log_path)
            except (OSError, MemoryError) as exc:
                fault = as_platform_fault(exc, f"cannot start {self.endpoint.spec!r}")
                if fault is not None:  # the referee's own calls (its pipes, its memory): not the bot's start
                    raise fault from exc
                return await self._startup_failed(f"cannot start {self.endpoint.spec!r}: {exc}")
        assert address is not None
        self.channel = grpc.aio.insecure_channel(address, options=SLOT_CHANNEL_OPTIONS)
        try:
            why = await wait_healthy(self.channel, deadline, self.process)
        except PlatformFault:
            await self.shutdown()
            raise
        if why:
            return await self._startup_failed(why)
        self.connection = BotConnection(self.channel, self.clock)
        hello = await self.connection.open(handshake, max(0.001, startup_s - (self.clock.now() - started)))
        late = self.clock.now() - started > startup_s
        if late or (isinstance(hello, StreamFailure) and hello.kind == F.FAILURE_KIND_TIMEOUT):
            return await self._startup_failed(
                f"handshake failed: no Hello within the startup time ({control.startup_time_ms} ms)")
        if isinstance(hello, StreamFailure):
            return await self._startup_failed(f"handshake failed: {hello.reason}", hello.received)
        major = hello.protocol_version.split(".")[0] if hello.protocol_version else PROTOCOL_MAJOR
        if major != PROTOCOL_MAJOR:
            return await self._startup_failed(
                f"speaks protocol {clean_version(hello.protocol_version)!r}, the referee speaks {PROTOCOL_MAJOR}")
        # bot-chosen text is cleaned before any log line, event or record holds it
        self.hello_name = clean_name(hello.name)
        self.version = clean_version(hello.version)
        self.play_events = hello.play_events
        self.failed_starts = 0
        log.info("bot %s ready: %s %s at %s", self.label, self.name, self.version, address)
        return None

    def platform_fault(self) -> PlatformFault | None:
        """What the platform failed to do for the running bot (its log could not be written), or None."""
        return self.process.platform_fault() if self.process is not None else None

    async def _platform_check(self) -> None:
        """Before a failed start is the bot's: raise the PlatformFault that caused it, if the
        platform did (a sandbox not set up, a log not written, no descriptor left), the bot stopped."""
        process = self.process
        fault = None
        if process is not None:
            fault = await process.exit_fault() if process.exited else process.platform_fault()
        fault = fault or descriptors_fault(f"cannot start bot {self.label}")
        if fault is not None:
            log.warning("bot %s (%s) could not be started, the platform's fault (%s): %s", self.label,
                        self.endpoint.spec, fault.condition, fault)
            await self.shutdown()
            raise fault

    async def _startup_failed(self, reason: str, received: str = "") -> StreamFailure:
        """Record a failed start and tear down what was started, so the bot is not ready (the
        platform's fault instead raises: ``_platform_check``)."""
        await self._platform_check()
        self.failed_starts += 1
        self.startup_failure = StreamFailure(F.FAILURE_KIND_STARTUP, reason, received)
        log.warning("bot %s (%s) failed to start: %s", self.label, self.endpoint.spec, reason)
        await self.shutdown()
        return self.startup_failure

    async def shutdown(self) -> None:
        """Close the stream and channel and stop the process (its whole group). The process is
        stopped even when closing the stream is cancelled (a match cancelled again while it
        stops), and a stop that is itself cancelled kills it at once (``BotProcess.stop``)."""
        try:
            if self.connection is not None:
                connection, self.connection = self.connection, None
                await connection.close()
            if self.channel is not None:
                channel, self.channel = self.channel, None
                await channel.close(grace=None)
        finally:
            if self.process is not None:
                process, self.process = self.process, None
                await process.stop()


