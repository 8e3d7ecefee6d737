"""The plain bot under every hostile bot here: plays the first legal move of every turn; its
attack runs at start (``at_start``) and on its first turn (``on_first_turn``). What an attack
found is printed as one line ``hostile: KEY JSON`` (to the bot's log, where the tests read it)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from casino.v1 import bot_pb2, bot_pb2_grpc


def report(key: str, value: object) -> None:
    print(f"hostile: {key} {json.dumps(value, sort_keys=True)}", flush=True)


def reason(exc: BaseException) -> str:
    """An OSError as its errno name (EACCES, ENOENT, ...), anything else as its type."""
    if isinstance(exc, OSError) and exc.errno is not None:
        import errno

        return errno.errorcode.get(exc.errno, str(exc.errno))
    return type(exc).__name__


class PlainBot(bot_pb2_grpc.BotServiceServicer):
    def __init__(self, on_first_turn: Callable[[], None] | None) -> None:
        self.on_first_turn = on_first_turn
        self.turns = 0

    async def Play(self, request_iterator, context):
        async for request in request_iterator:
            kind = request.WhichOneof("event")
            if kind == "handshake":
                yield bot_pb2.PlayResponse(hello=bot_pb2.Hello(name=os.path.basename(sys.argv[0]), version="1",
                                                               protocol_version="1"))
            elif kind == "turn":
                self.turns += 1
                if self.turns == 1 and self.on_first_turn is not None:
                    self.on_first_turn()
                yield bot_pb2.PlayResponse(move=bot_pb2.MoveChoice(turn_id=request.turn.turn_id, index=0))


async def _serve(on_first_turn: Callable[[], None] | None) -> None:
    server = grpc.aio.server()
    bot_pb2_grpc.add_BotServiceServicer_to_server(PlainBot(on_first_turn), server)
    checker = health.aio.HealthServicer()
    await checker.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    server.add_insecure_port(os.environ["CASINO_BOT_ADDRESS"])
    await server.start()
    await server.wait_for_termination()


def run(at_start: Callable[[], None] | None = None, on_first_turn: Callable[[], None] | None = None) -> None:
    if at_start is not None:
        at_start()
    try:
        asyncio.run(_serve(on_first_turn))
    except KeyboardInterrupt:
        pass
