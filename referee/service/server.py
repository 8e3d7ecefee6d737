"""The Referee gRPC service: run matches for the arena and operators, stream what happens.

Locked down by its settings (settings.py, docs/service.md): a bearer token checked for every
method but health (auth.py), TLS and client certificates, at most ``max_matches`` matches at
once, ``max_games`` games a call and ``max_record_bytes`` in its records folder (records.py).
A client may name only the server's own bots and the addresses its operator allowed, and
commands only when the server runs with ``allow_commands`` (which needs authentication). A bot
at an address that cannot be reached is reported to the client with one generic reason, so the
service cannot be used to scan ports; the detail is in the server's log. Health checking is
registered, and server reflection unless authentication is required (or it is asked for).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import logging
import os
import re
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from casino.v1 import game_pb2, referee_pb2, referee_pb2_grpc

from ..bots.endpoint import BotEndpoint
from ..bots.launcher import Launcher
from ..clock import TimeControl
from ..errors import EndpointError, ListenError, PlatformFault, platform_fault
from ..match.report import GameReport
from ..match.run import record_json, run_match
from ..match.spec import FailurePolicy, MatchSpec
from ..rules import parse_deck
from ..rules.errors import RulesError
from ..wire.convert import options_from_pb
from .auth import TokenInterceptor
from .rpc_metrics import RpcMetricsInterceptor
from .records import RecordSpace, RecordSpaceError, folder_bytes
from .settings import ServiceSettings, is_local_address, settings_summary

log = logging.getLogger(__name__)
_HOST_PORT = re.compile(r"^(?!unix:).*:(\d+)$")  # a TCP listen address, port last
MAX_GAME_ID_CHARS = 128  # this server's game ids are 12 hex digits, "-g" and the game number
SHOWN_CHARS = 100  # of a client's bot text quoted back in an error
# what a client learns of a bot at an address that could not be reached or did not start a
# session, whatever the cause (refused, nothing there, not gRPC, not a bot)
CONNECT_FAILED = "could not connect to the bot at its address, or it did not answer as a bot (the server's log has why)"
_STARTUP = game_pb2.FAILURE_KIND_STARTUP
_POLICIES = {
    referee_pb2.FAILURE_POLICY_UNSPECIFIED: FailurePolicy.FORFEIT,
    referee_pb2.FAILURE_POLICY_FORFEIT: FailurePolicy.FORFEIT,
    referee_pb2.FAILURE_POLICY_RANDOM_MOVE: FailurePolicy.RANDOM_MOVE,
}


class RefereeService(referee_pb2_grpc.RefereeServiceServicer):
    """Thin servicer over ``run_match``; records are kept as JSON files under ``records_dir``."""

    def __init__(self, records_dir: Path, settings: ServiceSettings | None = None,
                 launcher: Launcher | None = None) -> None:
        self.records_dir = records_dir
        self.settings = settings or ServiceSettings()
        self.own_bots = self.settings.bot_names
        self.space = RecordSpace(records_dir, self.settings.max_record_bytes, self.settings.min_free_disk_bytes)
        self.running = 0  # RunMatch calls being played
        self.launcher = launcher  # starts the bots clients name by command (None: the default sandbox)

    def _endpoint(self, text: str) -> BotEndpoint:
        """The bot a client names: one of the server's own, an allowed address, or (only with
        allow_commands) a command. Refused before anything is connected to or looked up, with
        the same words for every address, so a refusal tells nothing about this machine."""
        if (own := self.own_bots.get(text.strip())) is not None:
            return own
        if BotEndpoint.is_address(text):
            endpoint = BotEndpoint.parse(text)  # a malformed address is the request's own error
            if text.strip() not in self.settings.allow_addresses:
                raise EndpointError(
                    f"bot {_shown(text)} is not one of this server's bots or an address it may connect to")
            return endpoint
        if not self.settings.allow_commands:
            raise EndpointError(f"bot {_shown(text)} is not one of this server's bots or an address; "
                                "this server runs no commands clients name (start it with --allow-commands)")
        return BotEndpoint.parse(text)

    def _spec(self, request: referee_pb2.RunMatchRequest) -> MatchSpec:
        bots = [self._endpoint(spec) for spec in request.bots]
        pb_options = game_pb2.RuleOptions()
        pb_options.CopyFrom(request.options)
        if not pb_options.players:
            pb_options.players = len(bots)
        options = options_from_pb(pb_options)
        if not 1 <= (request.games or 1) <= self.settings.max_games:
            raise ValueError(f"games must be 1..{self.settings.max_games}")
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
            auto_forced=not request.ask_forced,
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
        if self.running >= self.settings.max_matches:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                f"this server plays at most {self.settings.max_matches} matches at once; "
                                "try again when one has ended")
        self.running += 1
        try:
            await self._play(spec, context)
        finally:
            self.running -= 1

    async def _play(self, spec: MatchSpec, context: grpc.aio.ServicerContext) -> None:
        """Play an accepted match, streaming its events, while the records folder has room."""
        self.space.used = await asyncio.to_thread(folder_bytes, self.records_dir)  # off the loop: bots are timed on it
        if why := self.space.refusal(1):
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, why)
        hide = _HideConnectionDetail({i for i, bot in enumerate(spec.bots) if not bot.is_process})
        events: asyncio.Queue[referee_pb2.RunMatchResponse | None] = asyncio.Queue()
        task = asyncio.create_task(run_match(spec, lambda event: events.put_nowait(hide.event(event)),
                                             keep_record=functools.partial(self._keep_record, hide),
                                             launcher=self.launcher))
        task.add_done_callback(lambda _: events.put_nowait(None))
        over = False  # the match ended and its outcome was taken here
        try:
            while (event := await events.get()) is not None:
                if not await _send(context, event):
                    return  # the client went away: the finally stops the match and its bots
            over = True
            task.result()  # re-raise a runner error
        except RecordSpaceError as exc:  # the match was stopped (and its bots) before the record was written
            log.warning("a match was stopped: %s", exc)
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        except PlatformFault as exc:  # the platform's, not a bot's: the client may run the match again
            log.error("a match was stopped by a platform fault (%s): %s", exc.condition, exc)
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"platform fault ({exc.condition}): {exc}")
        except Exception as exc:  # the referee's own failure, reported, never a hang
            log.exception("match failed")
            await context.abort(grpc.StatusCode.INTERNAL, f"match failed: {exc}")
        finally:
            if not over:  # cancelled, or the client went away (a failed write)
                task.cancel()
                task.add_done_callback(_log_unheard_error)

    def _keep_record(self, hide: _HideConnectionDetail, report: GameReport) -> None:
        """Write a finished game's record if the records folder has room (else RecordSpaceError)."""
        data = record_json(hide.record(report.record)).encode()
        self.space.take(len(data))
        path = self.records_dir / f"{report.game_id}.json"
        try:
            path.write_bytes(data)
        except OSError as exc:  # a full disk the quota did not foresee: the platform's, not a bot's
            with contextlib.suppress(OSError):
                path.unlink()
            raise platform_fault(exc, f"cannot write the game record {path.name}") from exc

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


class _HideConnectionDetail:
    """Start-up failures of the match's bots at an address (``address_bots``, by index) say only
    CONNECT_FAILED to the client, in events and in records: why a connection failed (refused,
    reset, not gRPC) would tell an open port from a closed one. BotSlot logs the detail."""

    def __init__(self, address_bots: set[int]) -> None:
        self.address_bots = address_bots
        self.seat_bots: list[int] = []  # of the game being played (from its GameStarted)

    def _hides(self, kind: int, seat: int, seat_bots: list[int]) -> bool:
        return kind == _STARTUP and 0 <= seat < len(seat_bots) and seat_bots[seat] in self.address_bots

    def event(self, event: referee_pb2.RunMatchResponse) -> referee_pb2.RunMatchResponse:
        """``event`` as the client may see it (a copy when anything is hidden)."""
        kind = event.WhichOneof("event")
        if kind == "game_started":
            self.seat_bots = list(event.game_started.seat_bots)
        if kind not in ("failure", "game_result"):
            return event
        shown = referee_pb2.RunMatchResponse()
        shown.CopyFrom(event)
        failures = [shown.failure] if kind == "failure" else shown.game_result.failures
        hidden = [f for f in failures if self._hides(f.kind, f.seat, self.seat_bots)]
        for failure in hidden:
            failure.reason, failure.received = CONNECT_FAILED, ""
        return shown if hidden else event

    def record(self, record: dict[str, Any]) -> dict[str, Any]:
        """``record`` as the client may see it (a copy when anything is hidden)."""
        shown = copy.deepcopy(record)
        seat_bots = [seat["bot"] for seat in shown["seats"]]
        hidden = [f for failures in (shown["failures"], (shown.get("result") or {}).get("failures", []))
                  for f in failures
                  if self._hides(game_pb2.FailureKind.Value(f["kind"]), f.get("seat", 0), seat_bots)]
        for failure in hidden:
            failure["reason"], failure["received"] = CONNECT_FAILED, ""
        return shown if hidden else record


def _shown(text: str) -> str:
    """A client's text quoted in an error, cut to SHOWN_CHARS."""
    return repr(text[:SHOWN_CHARS]) + ("..." if len(text) > SHOWN_CHARS else "")


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


async def start_server(settings: ServiceSettings, records_dir: Path,
                       launcher: Launcher | None = None) -> tuple[grpc.aio.Server, int]:
    """Start the service as ``settings`` say (listen address, token, TLS, limits), with health
    checking and, when they allow it, reflection; returns the server and the bound port."""
    listen = settings.listen
    # the metrics' interceptor first: calls the token's refuses are counted too
    interceptors: list[grpc.aio.ServerInterceptor] = [RpcMetricsInterceptor()]
    if settings.token is not None:
        interceptors.append(TokenInterceptor(settings.token))
    # a port in use is an error, not shared
    server = grpc.aio.server(interceptors=interceptors, options=[("grpc.so_reuseport", 0)])
    referee_pb2_grpc.add_RefereeServiceServicer_to_server(RefereeService(records_dir, settings, launcher), server)
    await _add_health(server)
    if settings.reflection_on:
        names = (
            referee_pb2.DESCRIPTOR.services_by_name["RefereeService"].full_name,
            health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
            reflection.SERVICE_NAME,
        )
        reflection.enable_server_reflection(names, server)
    port = _bind(server, listen, settings.tls)
    await server.start()
    return server, port


async def _add_health(server: grpc.aio.Server) -> None:
    """grpc.health.v1 on ``server``: the service and the server as a whole are SERVING."""
    checker = health.aio.HealthServicer()
    for name in ("", "casino.v1.RefereeService"):
        await checker.set(name, health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)


def _bind(server: grpc.aio.Server, listen: str, tls: Any = None) -> int:
    """Add ``listen`` to ``server`` (TLS when ``tls`` is given); the bound port, or ListenError
    with gRPC's own reason."""
    host_port = _HOST_PORT.match(listen)
    if host_port and int(host_port.group(1)) > 65535:  # gRPC would pick a free port instead
        raise ListenError(f"cannot listen on {listen}: port must be 0..65535")
    port = None
    with _stderr_kept() as core_log:  # gRPC's core logs why a bind fails on stderr itself
        try:
            if tls is None:
                port = server.add_insecure_port(listen)
            else:
                credentials = grpc.ssl_server_credentials([(tls.private_key, tls.cert_chain)],
                                                          root_certificates=tls.client_ca,
                                                          require_client_auth=tls.mutual)
                port = server.add_secure_port(listen, credentials)
        except RuntimeError:  # whose message says only "Failed to bind"
            pass
    if port is None:
        raise ListenError(f"cannot listen on {listen}: {_why_not_bound(core_log)}")
    sys.stderr.write(core_log[0])  # whatever it said on a bind that worked
    return port


async def start_health_server(listen: str) -> tuple[grpc.aio.Server, int]:
    """A plaintext server with only grpc.health.v1 (``--health-listen``): for probes that cannot
    speak TLS, such as Kubernetes' native gRPC probes, when the service's own port is TLS."""
    server = grpc.aio.server(interceptors=[RpcMetricsInterceptor()], options=[("grpc.so_reuseport", 0)])
    await _add_health(server)
    port = _bind(server, listen)
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


async def serve(settings: ServiceSettings, records_dir: Path | None = None, launcher: Launcher | None = None,
                health_listen: str | None = None) -> None:
    """Serve until SIGINT/SIGTERM, then stop gracefully (running matches get 5 s); with
    ``health_listen``, health checks on a second, plaintext port too."""
    records = records_dir or Path(tempfile.mkdtemp(prefix="casino-records-"))
    records.mkdir(parents=True, exist_ok=True)
    server, port = await start_server(settings, records, launcher)
    health_server = None
    if health_listen is not None:
        try:
            health_server, health_port = await start_health_server(health_listen)
        except BaseException:
            await server.stop(grace=None)
            raise
    if settings.token is not None and settings.tls is None and not is_local_address(settings.listen):
        sys.stderr.write(f"referee: warning: the token crosses the network in clear text on {settings.listen}: "
                         "give --tls-cert and --tls-key\n")
    print(f"referee listening on {settings.listen} (port {port}; {settings_summary(settings)}); records in {records}",
          flush=True)
    if health_server is not None:
        print(f"referee health checks (plaintext) on {health_listen} (port {health_port})", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    if health_server is not None:
        await health_server.stop(grace=None)
    await server.stop(grace=5)
