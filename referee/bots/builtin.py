"""A built-in random bot served over gRPC: the opponent of ``referee check``.

Run as ``python -m referee.bots.builtin [--seed N]``; listens on CASINO_BOT_ADDRESS.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
from collections.abc import AsyncIterator

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from casino.v1 import bot_pb2, bot_pb2_grpc

from ..wire.connection import SERVER_OPTIONS
from ..wire.convert import PROTOCOL_VERSION
from .launcher import ADDRESS_ENV


class RandomBot(bot_pb2_grpc.BotServiceServicer):
    """Answers every turn with a uniformly random index."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    async def Play(  # noqa: N802 - the gRPC method name
        self, request_iterator: AsyncIterator[bot_pb2.PlayRequest], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[bot_pb2.PlayResponse]:
        async for request in request_iterator:
            kind = request.WhichOneof("event")
            if kind == "handshake":
                yield bot_pb2.PlayResponse(hello=bot_pb2.Hello(name="builtin-random", version="1", protocol_version=PROTOCOL_VERSION))
            elif kind == "turn":
                turn = request.turn
                yield bot_pb2.PlayResponse(move=bot_pb2.MoveChoice(turn_id=turn.turn_id, index=self._rng.randrange(len(turn.legal_moves))))


async def serve(address: str, seed: int) -> None:
    server = grpc.aio.server(options=SERVER_OPTIONS)
    bot_pb2_grpc.add_BotServiceServicer_to_server(RandomBot(seed), server)
    checker = health.aio.HealthServicer()
    await checker.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    server.add_insecure_port(address)
    await server.start()
    await server.wait_for_termination()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m referee.bots.builtin", description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    address = os.environ.get(ADDRESS_ENV)
    if not address:
        sys.stderr.write(f"builtin_bot: error: {ADDRESS_ENV} is not set\n")
        return 2
    try:
        asyncio.run(serve(address, args.seed))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
