"""The Referee gRPC service: run matches for the arena and operators, stream what happens.

Health checking and server reflection are registered, so load balancers and ``grpcurl`` work.
Clients may name bots by address; naming a command (``cmd:...``) that the referee would start
is refused unless the server runs with ``allow_commands`` (it would let any client run
programs on this machine).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from casino.v1 import game_pb2, referee_pb2, referee_pb2_grpc

from ..bots.endpoint import BotEndpoint
from ..bots.launcher import Launcher
from ..clock import TimeControl
from ..errors import EndpointError, ListenError
from ..match.run import run_match
from ..match.spec import FailurePolicy, MatchSpec
from ..rules import parse_deck
from ..rules.errors import RulesError
from ..wire.convert import options_from_pb

log = logging.getLogger(__name__)
_HOST_PORT = re.compile(r"^(?!unix:).*:(\d+)$")  # a TCP listen address, port last
MAX_GAMES_PER_REQUEST = 10_000
MAX_GAME_ID_CHARS = 128  # this server's game ids are 12 hex digits, "-g" and the game number
_POLICIES = {
    referee_pb2.FAILURE_POLICY_UNSPECIFIED: FailurePolicy.FORFEIT,
    referee_pb2.FAILURE_POLICY_FORFEIT: FailurePolicy.FORFEIT,
    referee_pb2.FAILURE_POLICY_RANDOM_MOVE: FailurePolicy.RANDOM_MOVE,
}


class RefereeService(referee_pb2_grpc.RefereeServiceServicer):
    """Thin servicer over ``run_match``; records are kept as JSON files under ``records_dir``."""

    def __init__(self, records_dir: Path, allow_commands: bool = False, launcher: Launcher | None = None) -> None:
        self.records_dir = records_dir
        self.allow_commands = allow_commands
        self.launcher = launcher  # starts the bots clients name by command (None: the default sandbox)

    def _spec(self, request: referee_pb2.RunMatchRequest) -> MatchSpec:
        bots = []
        for spec in request.bots:
            if not self.allow_commands and not BotEndpoint.is_address(spec):
                # refused before looking the program up, so clients learn nothing about this machine
                raise EndpointError(f"bot {spec!r} is not an address; this server accepts only addresses (start it with --allow-commands)")
            bots.append(BotEndpoint.parse(spec))
        pb_options = game_pb2.RuleOptions()
        pb_options.CopyFrom(request.options)
        if not pb_options.players:
            pb_options.players = len(bots)
        options = options_from_pb(pb_options)
        if not 1 <= (request.games or 1) <= MAX_GAMES_PER_REQUEST:
            raise ValueError(f"games must be 1..{MAX_GAMES_PER_REQUEST}")
        return MatchSpec(
            bots=bots,
            options=options,
            games=request.games or 1,
            seed=request.seed,
            decks=[parse_deck(list(d.cards)) for d in request.decks],
            time_control=TimeControl.from_pb(request.time_control),
            policy=_POLICIES.get(request.failure_policy, FailurePolicy.FORFEIT),
            max_strikes=request.max_strikes or 3,
            rotate_seats=not request.fixed_seats,
            records_dir=self.records_dir,
            logs_dir=self.records_dir / "logs",  # one folder per match below it
        )

    async def RunMatch(  # noqa: N802 - the gRPC method name
        self, request: referee_pb2.RunMatchRequest, context: grpc.aio.ServicerContext
    ) -> None:
        try:
            spec = self._spec(request)
        except (EndpointError, RulesError, ValueError) as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
            return
        events: asyncio.Queue[referee_pb2.RunMatchResponse | None] = asyncio.Queue()
        task = asyncio.create_task(run_match(spec, events.put_nowait, launcher=self.launcher))
        task.add_done_callback(lambda _: events.put_nowait(None))
        over = False  # the match ended and its outcome was taken here
        try:
            while (event := await events.get()) is not None:
                if not await _send(context, event):
                    return  # the client went away: the finally stops the match and its bots
            over = True
            task.result()  # re-raise a runner error
        except Exception as exc:  # the referee's own failure, reported, never a hang
            log.exception("match failed")
            await context.abort(grpc.StatusCode.INTERNAL, f"match failed: {exc}")
        finally:
            if not over:  # cancelled, or the client went away (a failed write)
                task.cancel()
                task.add_done_callback(_log_unheard_error)

    async def GetGameRecord(  # noqa: N802
        self, request: referee_pb2.GetGameRecordRequest, context: grpc.aio.ServicerContext
    ) -> referee_pb2.GetGameRecordResponse:
        game_id = request.game_id
        if len(game_id) > MAX_GAME_ID_CHARS:  # a file name that long is an OSError, not a lookup
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                f"bad game id: {len(game_id)} characters, at most {MAX_GAME_ID_CHARS}")
        if not game_id or not all(ch.isascii() and (ch.isalnum() or ch == "-") for ch in game_id):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                f"bad game id {game_id!r}: only letters, digits and '-' (A-Z a-z 0-9 -)")
        path = self.records_dir / f"{game_id}.json"
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:  # missing, or anything else that makes it unreadable
            text = None
        if text is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no record for game {game_id!r}")
        return referee_pb2.GetGameRecordResponse(record_json=text)


async def _send(context: grpc.aio.ServicerContext, event: referee_pb2.RunMatchResponse) -> bool:
    """Write one reply; False when that failed: the call has ended (the client cancelled or went
    away while the reply waited for the network)."""
    try:
        await context.write(event)
    except Exception as exc:  # gRPC's own error type (ExecuteBatchError), not a public one
        log.info("the client of a match went away (%s: %s); stopping the match", type(exc).__name__, exc)
        return False
    return True


def _log_unheard_error(task: asyncio.Task[object]) -> None:
    """A match stopped after its client left has nobody to report an error to: log it in one line
    (and retrieve it, so asyncio does not print "Task exception was never retrieved")."""
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.warning("a match whose client went away failed: %s: %s", type(exc).__name__, exc)


async def start_server(listen: str, records_dir: Path, allow_commands: bool = False,
                       launcher: Launcher | None = None) -> tuple[grpc.aio.Server, int]:
    """Start the service with health and reflection; returns the server and the bound port."""
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])  # a port in use is an error, not shared
    referee_pb2_grpc.add_RefereeServiceServicer_to_server(RefereeService(records_dir, allow_commands, launcher), server)
    checker = health.aio.HealthServicer()
    for name in ("", "casino.v1.RefereeService"):
        await checker.set(name, health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    names = (
        referee_pb2.DESCRIPTOR.services_by_name["RefereeService"].full_name,
        health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
        reflection.SERVICE_NAME,
    )
    reflection.enable_server_reflection(names, server)
    host_port = _HOST_PORT.match(listen)
    if host_port and int(host_port.group(1)) > 65535:  # gRPC would pick a free port instead
        raise ListenError(f"cannot listen on {listen}: port must be 0..65535")
    port = None
    with _stderr_kept() as core_log:  # gRPC's core logs why a bind fails on stderr itself
        try:
            port = server.add_insecure_port(listen)
        except RuntimeError:  # whose message says only "Failed to bind"
            pass
    if port is None:
        raise ListenError(f"cannot listen on {listen}: {_why_not_bound(core_log)}")
    sys.stderr.write(core_log[0])  # whatever it said on a bind that worked
    await server.start()
    return server, port


@contextlib.contextmanager
def _stderr_kept() -> Iterator[list[str]]:
    """Capture what is written to file descriptor 2 (by C code too) inside the block: the list
    yielded holds it after the block, the caller decides whether to show it."""
    captured: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as spool:
        os.dup2(spool.fileno(), 2)
        try:
            yield captured
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            spool.seek(0)
            captured.append(spool.read().decode(errors="replace"))


def _why_not_bound(core_log: list[str]) -> str:
    """The reason in gRPC's log line ("E1201 ... add_port.cc:83] Failed to add port to server:
    address lookup failed for ...: Misformatted domain name"), on one line."""
    lines = [line for text in core_log for line in text.splitlines() if "] " in line]
    if not lines:
        return "the address is malformed, in use, or not this machine's"
    return " ".join(lines[-1].split("] ", 1)[1].split())


async def serve(listen: str, records_dir: Path | None = None, allow_commands: bool = False,
                launcher: Launcher | None = None) -> None:
    """Serve until SIGINT/SIGTERM, then stop gracefully (running matches get 5 s)."""
    records = records_dir or Path(tempfile.mkdtemp(prefix="casino-records-"))
    records.mkdir(parents=True, exist_ok=True)
    server, port = await start_server(listen, records, allow_commands, launcher)
    print(f"referee listening on {listen} (port {port}); records in {records}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(grace=5)


