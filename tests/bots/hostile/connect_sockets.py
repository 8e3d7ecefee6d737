"""Hostile: open a Play stream on every other bot's unix socket it can find (the globs of
HOSTILE_SOCKETS, separated by ':', and the folder its own socket is in) and take its Hello."""

from __future__ import annotations

import glob
import os

import grpc
from _bot import report, run

from casino.v1 import bot_pb2, bot_pb2_grpc


def attack() -> None:
    own = os.environ["CASINO_BOT_ADDRESS"].removeprefix("unix:")
    patterns = [*os.environ["HOSTILE_SOCKETS"].split(":"), os.path.join(os.path.dirname(own), "*")]
    found = sorted({p for pattern in patterns for p in glob.glob(pattern)} - {own})
    results = {}
    for path in found:
        try:
            with grpc.insecure_channel(f"unix:{path}") as channel:
                stream = bot_pb2_grpc.BotServiceStub(channel).Play(
                    iter([bot_pb2.PlayRequest(handshake=bot_pb2.Handshake(protocol_version="1"))]), timeout=3)
                hello = next(iter(stream)).hello
                results[path] = f"hello from {hello.name}"
        except grpc.RpcError as exc:
            results[path] = exc.code().name
    report("sockets", results)


run(at_start=attack, on_first_turn=attack)  # at its first turn every other bot is listening
