"""``referee health ADDRESS``: one standard gRPC health check (grpc.health.v1), for probes that
run a command (Docker and compose health checks) and for a person asking "is it up?". It checks
a Referee service (its main port, whose health needs no token, or its ``--health-listen`` port)
or a bot. Exit 0 when the answer is SERVING, 1 for any other answer or none, 2 for bad usage."""

from __future__ import annotations

import argparse
import sys

from ..bots.endpoint import BotEndpoint
from ..bots.sockets import SOCKET_PATH_MAX, fits

DEFAULT_TIMEOUT_S = 5.0
MAX_TIMEOUT_S = 300.0


def add_health_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("address", metavar="ADDR", help="host:port or unix:/path")
    p.add_argument("--service", default="", metavar="NAME",
                   help='the service to ask about (default "": the server as a whole)')
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
                   help=f"seconds to wait for the answer (default {DEFAULT_TIMEOUT_S:g}, at most {MAX_TIMEOUT_S:g})")
    p.add_argument("--tls-ca", metavar="FILE",
                   help="check over TLS, trusting this CA (PEM) for the server's certificate")


def usage_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the arguments (one line), before any connection is tried; None if nothing."""
    address = args.address.strip()
    if not BotEndpoint.is_address(address) or address == "unix:":
        return f"bad address {args.address!r}: give host:port or unix:/path"
    if address.startswith("unix:") and not fits(address.removeprefix("unix:")):
        return f"bad address {args.address!r}: a unix socket's path has at most {SOCKET_PATH_MAX} bytes"
    if not 0 < args.timeout <= MAX_TIMEOUT_S:
        return f"--timeout must be more than 0 and at most {MAX_TIMEOUT_S:g} seconds"
    return None


def check_health(args: argparse.Namespace) -> tuple[bool, str]:
    """(SERVING?, the line to print): the answer's status name, or why there was none."""
    import asyncio

    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from ..service.client import ClientTls, referee_channel

    tls = ClientTls.from_files(args.tls_ca) if args.tls_ca else None

    async def ask() -> int:
        async with referee_channel(args.address.strip(), tls=tls) as channel:
            reply = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=args.service), timeout=args.timeout)
            return int(reply.status)

    try:
        status = asyncio.run(ask())
    except grpc.aio.AioRpcError as exc:
        return False, f"{args.address}: no answer: {exc.code().name}: {exc.details()}"
    name = health_pb2.HealthCheckResponse.ServingStatus.Name(status)
    return status == health_pb2.HealthCheckResponse.SERVING, f"{args.address}: {name}"


def cmd_health(args: argparse.Namespace) -> int:
    """Print the answer in one line (stdout when SERVING, else stderr); exit 0 only for SERVING."""
    problem = usage_problem(args)
    if problem:
        sys.stderr.write(f"referee: error: {problem}\n")
        return 2
    serving, line = check_health(args)
    print(line, file=sys.stdout if serving else sys.stderr)
    return 0 if serving else 1
