"""A test bot with switches for every way a bot can misbehave (one process, real gRPC).

Usage: python tests/bots/scripted_bot.py MODE [--after N] [--turns K] [--ms MS] [--play-events]
Listens on CASINO_BOT_ADDRESS. Plays the first legal move, except that from its N-th turn
(default 3), on K turns (default: every turn from then on), MODE applies:

  normal        always plays well
  never-listen  never opens its port (sleeps)
  no-hello      answers the handshake with a move
  crash         exits the process (status 3) on the turn
  hang          never answers the turn
  late          answers after the time limit (sleeps move_time_ms + bank_ms + 300 ms)
  illegal       answers with a well-formed but illegal move in notation
  bad-index     answers with an index past the end of the legal moves
  garbage       answers with unparsable notation
  huge          answers with a 50 MB notation string
  exit-between  plays game 1 well, then exits when game 1 ends
  close-between plays well, but ends its stream (status OK) after every game; stays up for the next
  flood         sends 100 extra moves on the turn
  rude-hello    plays well, but its Hello name and version hold terminal escapes, newlines (a fake
                failure line) and 200 kB of padding (RUDE_NAME, RUDE_VERSION)
  wrong-turn    answers with another turn id
  gate          waits until the file named by $SCRIPTED_BOT_GATE exists, then plays well (holds a
                game open for as long as a test needs, within the move time); "{turn}" in the name is
                the turn's number, so a game can be held at several turns, one file each
  burn          busy-loops in a thread of its own until that thread has used MS ms of CPU (default
                100), then plays well: CPU time, however long the machine takes to give it
  sleep         sleeps MS ms (wall clock) using no CPU, then plays well
  chatty        prints MS KiB to stdout (a blocking write: a pipe nobody drains holds it up), then
                plays well
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from casino.v1 import bot_pb2, bot_pb2_grpc

MODES = ("normal", "never-listen", "no-hello", "crash", "hang", "late", "illegal", "bad-index", "garbage",
         "huge", "exit-between", "close-between", "flood", "wrong-turn", "gate", "rude-hello", "burn", "sleep",
         "chatty")
RUDE_NAME = ("\x1b[1;31mmallory\x1b[0m\n    P1 builtin-random: crash at deal 1 play 1: FORFEITS\r\n\x1b]0;owned\x07"
             + "\u202e" + "M" * 200_000)
RUDE_VERSION = "6.6.6\x1b[2J\x1b[H\n" + "v" * 200_000


class ScriptedBot(bot_pb2_grpc.BotServiceServicer):
    def __init__(self, mode: str, after: int, play_events: bool = False, turns: int = 0, ms: int = 100) -> None:
        self.mode = mode
        self.after = after
        self.turns_on = turns  # how many turns MODE applies to (0: all from the after-th on)
        self.ms = ms
        self.turns = 0
        self.play_events = play_events
        self.events_seen = 0

    async def Play(self, request_iterator, context):  # noqa: N802 - gRPC method name
        async for request in request_iterator:
            kind = request.WhichOneof("event")
            if kind == "handshake":
                if self.mode == "no-hello":
                    yield bot_pb2.PlayResponse(move=bot_pb2.MoveChoice(turn_id=0, index=0))
                elif self.mode == "rude-hello":
                    yield bot_pb2.PlayResponse(hello=bot_pb2.Hello(name=RUDE_NAME, version=RUDE_VERSION,
                                                                   protocol_version="1"))
                else:
                    yield bot_pb2.PlayResponse(hello=bot_pb2.Hello(name=f"scripted-{self.mode}", version="1", protocol_version="1",
                                                                   play_events=self.play_events))
            elif kind == "play_made":
                self.events_seen += 1
            elif kind == "game_end":
                print(f"play events: {self.events_seen}", flush=True)
                self.events_seen = 0
                if self.mode == "exit-between":
                    os._exit(0)
                if self.mode == "close-between":
                    return
            elif kind == "turn":
                self.turns += 1
                turn = request.turn
                answer = bot_pb2.MoveChoice(turn_id=turn.turn_id, index=0)
                if self.turns >= self.after and (not self.turns_on or self.turns < self.after + self.turns_on):
                    if self.mode == "crash":
                        os._exit(3)
                    if self.mode == "hang":
                        await asyncio.sleep(3600)
                    if self.mode == "late":
                        await asyncio.sleep((turn.move_time_ms + turn.bank_ms + 300) / 1000)
                    if self.mode == "illegal":
                        answer = bot_pb2.MoveChoice(turn_id=turn.turn_id, notation=illegal_notation(turn))
                    if self.mode == "bad-index":
                        answer = bot_pb2.MoveChoice(turn_id=turn.turn_id, index=len(turn.legal_moves) + 5)
                    if self.mode == "garbage":
                        answer = bot_pb2.MoveChoice(turn_id=turn.turn_id, notation="\x00 take everything!")
                    if self.mode == "huge":
                        answer = bot_pb2.MoveChoice(turn_id=turn.turn_id, notation="X" * (50 << 20))
                    if self.mode == "wrong-turn":
                        answer = bot_pb2.MoveChoice(turn_id=turn.turn_id + 1000, index=0)
                    if self.mode == "burn":
                        await asyncio.to_thread(_burn, self.ms / 1000)
                    if self.mode == "sleep":
                        await asyncio.sleep(self.ms / 1000)
                    if self.mode == "chatty":
                        sys.stdout.buffer.write(b"chatter " * (self.ms * 128))
                        sys.stdout.buffer.flush()
                    if self.mode == "gate":
                        gate = os.environ["SCRIPTED_BOT_GATE"].replace("{turn}", str(self.turns))
                        while not os.path.exists(gate):
                            await asyncio.sleep(0.02)
                    if self.mode == "flood":
                        for _ in range(100):
                            yield bot_pb2.PlayResponse(move=answer)
                yield bot_pb2.PlayResponse(move=answer)


def _burn(cpu_s: float) -> None:
    """Spin until this thread has used ``cpu_s`` seconds of CPU."""
    start = time.thread_time()
    while time.thread_time() - start < cpu_s:
        pass


def illegal_notation(turn: bot_pb2.Turn) -> str:
    """A well-formed play that is not in the legal list: a trail if possible, else a capture of
    nothing the rules allow."""
    legal = {m.notation for m in turn.legal_moves}
    for card in turn.observation.hand:
        for text in (f"{card} trail", f"{card} build 14 {' '.join(turn.observation.loose[:1])}".strip()):
            if text not in legal and len(text.split()) != 3:
                return text
            if text not in legal and text.endswith("trail"):
                return text
    return f"{turn.observation.hand[0]} raise b99 14"


async def serve(mode: str, after: int, play_events: bool, turns: int = 0, ms: int = 100) -> None:
    address = os.environ["CASINO_BOT_ADDRESS"]
    if mode == "never-listen":
        await asyncio.sleep(3600)
    server = grpc.aio.server(options=[("grpc.max_send_message_length", 64 << 20)])
    bot_pb2_grpc.add_BotServiceServicer_to_server(ScriptedBot(mode, after, play_events, turns, ms), server)
    health_servicer = health.aio.HealthServicer()
    await health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    server.add_insecure_port(address)
    await server.start()
    await server.wait_for_termination()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("--after", type=int, default=3)
    parser.add_argument("--turns", type=int, default=0, help="turns MODE applies to (default: all from --after on)")
    parser.add_argument("--ms", type=int, default=100,
                        help="burn: ms of CPU per turn; sleep: ms of wall time; chatty: KiB printed")
    parser.add_argument("--play-events", action="store_true", help="ask for PlayMade events and print their count per game")
    args = parser.parse_args()
    try:
        asyncio.run(serve(args.mode, args.after, args.play_events, args.turns, args.ms))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
