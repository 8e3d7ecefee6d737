"""One bot's protocol stream for a match: handshake, events, and move requests with deadlines.

Everything the bot sends is read by a background task into a small queue, so the referee always
sees what arrived and when, and a bot cannot block it: unrequested messages are a protocol
failure, a flood stops the reading, and every wait is bounded.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from dataclasses import dataclass

import grpc

from casino.v1 import bot_pb2, game_pb2

from ..clock import MONOTONIC, Clock
from .convert import serialize_request

MAX_MESSAGE_BYTES = 1 << 20  # 1 MiB: a move is a few hundred bytes; bigger answers are refused
# No BDP probes: HTTP/2's bandwidth-delay probing pings along with the data to grow the flow-control
# window for big transfers; a game's messages are a few hundred bytes on a local socket, and the
# pings cost each side CPU on every turn (the referee's CPU per asked turn -14%, bench_protocol
# alternated, docs/benchmarks.md "A cheaper gRPC path").
NO_BDP_PROBE = ("grpc.http2.bdp_probe", 0)
CHANNEL_OPTIONS = [  # every channel to a bot: answers over MAX_MESSAGE_BYTES are refused, no retries
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", 16 << 20),
    ("grpc.enable_retries", 0),
    NO_BDP_PROBE,
]
SERVER_OPTIONS = [NO_BDP_PROBE]  # a bot's own server (the Python SDK's, the built-in bot's)

F = game_pb2.FailureKind
MAX_QUEUED = 8  # unanswered messages from a bot before the referee stops reading it
RECEIVED_PREVIEW = 200  # characters of a bad answer kept in records
_PLAY_METHOD = f"/{bot_pb2.DESCRIPTOR.services_by_name['BotService'].full_name}/Play"
# What an await on the stream (write, read, done_writing) raises when the stream has ended: the
# status (AioRpcError), or, when the call finished before our reader saw it (a bot that closed its
# stream or exited between games), "RPC already finished" (InvalidStateError) and the like.
STREAM_ERRORS = (grpc.aio.AioRpcError, asyncio.InvalidStateError, grpc.aio.UsageError, RuntimeError)


@dataclass(frozen=True, slots=True)
class StreamFailure:
    """Why a stream can no longer be used, or why an answer was rejected."""

    kind: int  # a casino.v1.FailureKind value
    reason: str
    received: str = ""


def preview(message: object) -> str:
    """A short one-line rendering of what a bot sent, for records."""
    text = str(message).replace("\n", " ").strip()
    return text if len(text) <= RECEIVED_PREVIEW else text[:RECEIVED_PREVIEW] + "..."


class BotConnection:
    """The Play stream to one bot (one per seat per match)."""

    def __init__(self, channel: grpc.aio.Channel, clock: Clock = MONOTONIC) -> None:
        self._clock = clock  # times every answer; its real_wait_s bounds every wait
        self._play = channel.stream_stream(
            _PLAY_METHOD, request_serializer=serialize_request, response_deserializer=bot_pb2.PlayResponse.FromString
        )
        self._call: grpc.aio.StreamStreamCall | None = None
        self._queue: collections.deque[bot_pb2.PlayResponse] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None  # woken when a message arrives or the stream breaks
        self._reader: asyncio.Task[None] | None = None
        self.broken: StreamFailure | None = None
        self._answered_turns: set[int] = set()  # this game's; the last game's below (see begin_game)
        self._answered_last_game: set[int] = set()
        self._late_turns: set[int] = set()

    def begin_game(self) -> None:
        """A new game on this stream. Answered turns are remembered for this game and the last
        one, so a stream that serves a whole tournament holds two games' turn ids, not every id
        it ever answered. A copy of the last game's final answer read during this game is still a
        second answer; an answer repeated from two games back is an answer to the wrong turn."""
        self._answered_last_game = self._answered_turns
        self._answered_turns = set()

    async def open(self, handshake: bot_pb2.Handshake, timeout_s: float) -> bot_pb2.Hello | StreamFailure:
        """Open the stream, send the handshake and wait for the Hello."""
        self._call = self._play()
        self._reader = asyncio.create_task(self._read_loop())
        failure = await self.send(bot_pb2.PlayRequest(handshake=handshake), timeout_s)
        if failure:
            return failure
        reply = await self._next(timeout_s)
        if isinstance(reply, StreamFailure):
            return reply
        if reply.WhichOneof("reply") != "hello":
            return self._break(StreamFailure(F.FAILURE_KIND_PROTOCOL, "answered the handshake without a Hello", preview(reply)))
        return reply.hello

    async def _read_loop(self) -> None:
        assert self._call is not None
        try:
            while True:
                message = await self._call.read()
                if message is grpc.aio.EOF:
                    self._break(StreamFailure(F.FAILURE_KIND_DISCONNECT, "the bot closed its stream"))
                    return
                self._queue.append(message)
                self._wake()
                if len(self._queue) > MAX_QUEUED:
                    self._break(
                        StreamFailure(F.FAILURE_KIND_PROTOCOL, f"flooded the stream: more than {MAX_QUEUED} unrequested messages", preview(message))
                    )
                    self._call.cancel()
                    return
        except STREAM_ERRORS as exc:
            self._break(_stream_failure(exc))
        except asyncio.CancelledError:
            if asyncio.current_task().cancelling():  # type: ignore[union-attr]  # we are being stopped
                raise
            # the call itself was cancelled (reading a locally cancelled call raises this)
            self._break(StreamFailure(F.FAILURE_KIND_DISCONNECT, "the stream was cancelled"))

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _break(self, failure: StreamFailure) -> StreamFailure:
        if self.broken is None:
            self.broken = failure
        self._wake()
        return failure

    async def send(self, request: bot_pb2.PlayRequest, timeout_s: float) -> StreamFailure | None:
        """Write one message; a bot that stops reading its stream cannot hold the referee."""
        if self.broken:
            return self.broken
        assert self._call is not None
        try:
            async with asyncio.timeout(self._clock.real_wait_s(timeout_s)):
                await self._call.write(request)
        except TimeoutError:
            return self._break(StreamFailure(F.FAILURE_KIND_TIMEOUT, "stopped reading its stream"))
        except STREAM_ERRORS as exc:
            return self._break(_stream_failure(exc))
        return None

    async def _next(self, timeout_s: float) -> bot_pb2.PlayResponse | StreamFailure:
        """The next message from the bot, or why none came in time."""
        try:
            async with asyncio.timeout(self._clock.real_wait_s(timeout_s)):
                return await self._receive()
        except TimeoutError:
            return StreamFailure(F.FAILURE_KIND_TIMEOUT, f"no answer within {timeout_s * 1000:.0f} ms")

    async def _receive(self) -> bot_pb2.PlayResponse | StreamFailure:
        """The next message from the bot, or why the stream can give none; waits unbounded, so
        callers bound it."""
        if self._queue:
            return self._queue.popleft()
        if self.broken:
            return self.broken
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None
        if self._queue:
            return self._queue.popleft()
        return self.broken or StreamFailure(F.FAILURE_KIND_DISCONNECT, "the stream ended")

    def _unrequested(self) -> StreamFailure | None:
        """Messages waiting before a turn was sent: late answers to turns that timed out are
        dropped; anything else is a protocol failure."""
        while self._queue:
            message = self._queue.popleft()
            if message.WhichOneof("reply") == "move" and message.move.turn_id in self._late_turns:
                self._late_turns.discard(message.move.turn_id)
                continue
            return StreamFailure(F.FAILURE_KIND_PROTOCOL, "sent a message that was not asked for", preview(message))
        return None

    async def ask_move(
        self, request: bot_pb2.PlayRequest | bytes, turn_id: int, timeout_s: float,
        give_up: Callable[[], str | None] | None = None, poll_s: float = 0.01,
    ) -> tuple[bot_pb2.MoveChoice | StreamFailure, float]:
        """Send a turn (a ``PlayRequest`` or its serialized bytes, for turn ``turn_id``) and wait
        for the answer, all within ``timeout_s``. Returns the choice (or failure) and the seconds
        from sending the turn to receiving the answer, on this connection's clock (the caller
        judges it against the time control: an answer may arrive in time for the wait and still be
        late by the clock).

        ``give_up``, polled every ``poll_s`` while the answer is awaited, ends the wait early
        when it returns a reason (a bot over its CPU limit): a TIMEOUT with that reason, and the
        answer, should it come, is dropped as late."""
        failure = self._unrequested()
        if failure:
            return failure, 0.0
        if self.broken:
            return self.broken, 0.0
        assert self._call is not None
        written = False
        gave_up: list[str] = []  # the reason, once give_up said so
        clock = self._clock
        start = clock.now()
        try:
            # one deadline for writing the turn and reading its answer: a bot that stops reading
            # its stream cannot hold the referee either
            async with asyncio.timeout(clock.real_wait_s(timeout_s)) as deadline:
                await self._call.write(request)
                written = True
                watch = asyncio.create_task(_watch(give_up, poll_s, deadline, gave_up)) if give_up else None
                try:
                    while True:
                        reply = await self._receive()
                        if (
                            isinstance(reply, bot_pb2.PlayResponse)
                            and reply.WhichOneof("reply") == "move"
                            and reply.move.turn_id in self._late_turns
                        ):
                            self._late_turns.discard(reply.move.turn_id)  # a late answer to an earlier turn
                            continue
                        break
                finally:
                    if watch is not None:
                        watch.cancel()
        except TimeoutError:
            elapsed = clock.now() - start
            if not written:
                return self._break(StreamFailure(F.FAILURE_KIND_TIMEOUT, "stopped reading its stream")), elapsed
            self._late_turns.add(turn_id)
            if gave_up:
                return StreamFailure(F.FAILURE_KIND_TIMEOUT, gave_up[0]), elapsed
            return StreamFailure(F.FAILURE_KIND_TIMEOUT, f"no answer within {timeout_s * 1000:.0f} ms"), elapsed
        except STREAM_ERRORS as exc:
            return self._break(_stream_failure(exc)), clock.now() - start
        elapsed = clock.now() - start
        if isinstance(reply, StreamFailure):
            return reply, elapsed
        if reply.WhichOneof("reply") != "move":
            return StreamFailure(F.FAILURE_KIND_PROTOCOL, "answered a turn without a move", preview(reply)), elapsed
        if reply.move.turn_id in self._answered_turns or reply.move.turn_id in self._answered_last_game:
            return StreamFailure(
                F.FAILURE_KIND_PROTOCOL, f"sent a second answer to turn {reply.move.turn_id}", preview(reply.move)
            ), elapsed
        if reply.move.turn_id != turn_id:
            return StreamFailure(
                F.FAILURE_KIND_MALFORMED, f"answered turn {reply.move.turn_id}, expected {turn_id}", preview(reply.move)
            ), elapsed
        self._answered_turns.add(turn_id)
        return reply.move, elapsed

    async def close(self) -> None:
        """Half-close the stream so the bot can finish, then cancel it and the reader."""
        call = self._call
        if call is not None and self.broken is None:
            try:
                await asyncio.wait_for(call.done_writing(), 1.0)
            except (asyncio.TimeoutError, *STREAM_ERRORS):
                pass
        if self._reader is not None:
            if not self._reader.done() and self.broken is None:
                try:
                    await asyncio.wait_for(asyncio.shield(self._reader), 1.0)
                except (asyncio.TimeoutError, Exception):
                    pass
            self._reader.cancel()
        if call is not None:
            call.cancel()


async def _watch(give_up: Callable[[], str | None], poll_s: float, deadline: asyncio.Timeout,
                 gave_up: list[str]) -> None:
    """Poll ``give_up`` until it gives a reason; then keep it and end the wait at once."""
    while True:
        await asyncio.sleep(poll_s)
        if (reason := give_up()) is not None:
            break
    gave_up.append(reason)
    deadline.reschedule(asyncio.get_running_loop().time())


def _stream_failure(exc: BaseException) -> StreamFailure:
    """Why the stream is unusable, from one of STREAM_ERRORS."""
    if not isinstance(exc, grpc.aio.AioRpcError):
        return StreamFailure(F.FAILURE_KIND_DISCONNECT, f"stream broke: {exc}")  # e.g. "RPC already finished."
    code = exc.code()
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return StreamFailure(F.FAILURE_KIND_MALFORMED, f"sent an oversized message ({exc.details()})")
    if code == grpc.StatusCode.CANCELLED:
        return StreamFailure(F.FAILURE_KIND_DISCONNECT, "the stream was cancelled")
    return StreamFailure(F.FAILURE_KIND_DISCONNECT, f"stream broke: {code.name}: {exc.details()}")
