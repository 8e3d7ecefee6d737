"""Waiting for a started bot: the standard gRPC health check, bounded by the start-up deadline."""

from __future__ import annotations

import asyncio

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from .faults import descriptors_fault
from .launcher import BotProcess


async def wait_healthy(channel: grpc.aio.Channel, deadline: float, process: BotProcess | None) -> str | None:
    """Wait until the bot answers the standard health check (or, when it has no health service,
    until its channel is ready). Returns None when healthy, else the reason it is not.
    PlatformFault("descriptors") when the bot is unreachable because the referee has no file
    descriptor left for the connection (a bot's startup failure it would otherwise be)."""
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
            # a check that ran out of time after the bot had answered says less than that answer
            # (on a loaded machine the last check is often cut short by the startup deadline)
            if not (exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED and last.startswith("health status")):
                last = f"{exc.code().name}: {exc.details()}"
            if exc.code() == grpc.StatusCode.UNAVAILABLE and (fault := descriptors_fault("cannot reach a bot")):
                raise fault
        await asyncio.sleep(min(0.05, max(0.0, deadline - loop.time())))
