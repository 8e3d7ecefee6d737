"""An in-process scripted bot: a real grpc.aio server in the test process, on a unix socket,
whose BotService answers by a script, for fast tests of the referee's side of the protocol
stream (referee/wire/connection.py, referee/bots/slot.py, referee/match/) without a bot process.

Modelled on python-chess's ``MockProtocol``: a test says what the referee should send next and
how the bot replies (``bot.expect("turn", move(0))``), plays, then checks that the whole
conversation happened (``bot.assert_done()``). Only the bot's process is left out: the referee
talks real gRPC over a real socket, with its own deadlines, message limits and stream handling.
Behaviour that needs a process (start-up, crash, hang and restart, signals) stays with the real
scripted bot (tests/bots/scripted_bot.py).

    bot = ScriptedBot()
    bot.expect("handshake", hello(protocol_version="2"))
    async with ScriptedBotServer(bot) as server:   # server.address, server.endpoint
        ...drive a BotConnection or BotSlot on server.address...
    bot.assert_done()

A step is what the bot does with one event: an async generator function of the ``Exchange``
(the request, the servicer context, the bot) that yields the responses to send. The steps below
cover the misbehaviours of docs/protocol.md section 5; a test may pass its own.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from casino.v1 import bot_pb2, bot_pb2_grpc
from referee.bots.endpoint import BotEndpoint
from referee.clock import ManualClock

EVENTS = ("handshake", "game_start", "turn", "play_made", "game_end")
HANG_S = 120.0  # how long a hanging step waits: longer than any test waits for it, still bounded
SERVER_OPTIONS = [("grpc.max_send_message_length", 64 << 20)]  # so a bot can send an oversized answer


@dataclass
class Exchange:
    """One event the bot received, as a step sees it."""

    request: bot_pb2.PlayRequest
    context: grpc.aio.ServicerContext
    bot: ScriptedBot

    @property
    def turn(self) -> bot_pb2.Turn:
        return self.request.turn


Step = Callable[[Exchange], AsyncIterator[bot_pb2.PlayResponse]]


class CloseStream(Exception):
    """Raised by a step to end the bot's response stream (status OK), as a bot that returns."""


@dataclass
class Expectation:
    """The next ``times`` events of ``kind`` (None: every one from now on) get ``steps``."""

    kind: str
    steps: tuple[Step, ...]
    times: int | None = 1
    seen: int = 0


@dataclass
class ScriptedBot(bot_pb2_grpc.BotServiceServicer):
    """A BotService that answers by a script of expectations, matched in order.

    Strict (the default): every event must be the next expectation's kind, else it is a script
    error (kept in ``errors``; the stream is aborted) and ``assert_done`` fails. With
    ``otherwise`` (a step per event kind, e.g. ``PLAYS_WELL``), events that do not match the next
    expectation get that step instead, so a script can say only what is special ("the 3rd turn
    answers twice") and let the bot play well around it.

    Every request is kept in ``received`` and every response in ``sent``; ``streams`` counts the
    streams opened (a reconnection by the referee is a new one) and ``endings`` says how each
    ended: ``half-closed`` (the referee finished writing and the bot returned), ``closed`` (by a
    ``close`` step), ``cancelled`` (by the referee, or the server's stop) or ``aborted`` (with an
    error status)."""

    otherwise: dict[str, Step] | None = None
    expectations: list[Expectation] = field(default_factory=list)
    received: list[bot_pb2.PlayRequest] = field(default_factory=list)
    sent: list[bot_pb2.PlayResponse] = field(default_factory=list)
    held: list[bot_pb2.PlayResponse] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    streams: int = 0
    endings: list[str] = field(default_factory=list)  # per stream: half-closed, closed, cancelled, aborted

    def expect(self, kind: str, *steps: Step, times: int | None = 1) -> ScriptedBot:
        """The next ``times`` events of ``kind`` get ``steps`` (in order, all of them per event);
        no steps: the bot reads the event and sends nothing. Returns the bot, to chain."""
        if kind not in EVENTS:
            raise ValueError(f"unknown event {kind!r}: one of {EVENTS}")
        self.expectations.append(Expectation(kind, steps, times))
        return self

    def assert_done(self) -> None:
        """Every expectation with a count was met, and nothing unexpected came."""
        assert not self.errors, self.errors
        left = [(e.kind, e.times - e.seen) for e in self.expectations if e.times is not None and e.seen < e.times]
        assert not left, f"the referee never sent {left}; it sent {self.kinds()}"

    def kinds(self) -> list[str]:
        """The kind of every event received, in order."""
        return [r.WhichOneof("event") for r in self.received]

    def turns(self) -> list[bot_pb2.Turn]:
        return [r.turn for r in self.received if r.WhichOneof("event") == "turn"]

    @property
    def handshakes(self) -> int:
        return self.kinds().count("handshake")

    def _steps_for(self, kind: str) -> Sequence[Step] | None:
        """The steps for an event of ``kind``, or None when the script did not expect it."""
        while self.expectations and self.expectations[0].times is not None and \
                self.expectations[0].seen >= self.expectations[0].times:
            self.expectations.pop(0)
        head = self.expectations[0] if self.expectations else None
        if head is not None and head.kind == kind:
            head.seen += 1
            return head.steps
        if self.otherwise is not None:
            step = self.otherwise.get(kind)
            return (step,) if step is not None else ()
        return None

    async def Play(self, request_iterator: AsyncIterator[bot_pb2.PlayRequest],  # noqa: N802 - gRPC's name
                   context: grpc.aio.ServicerContext) -> AsyncIterator[bot_pb2.PlayResponse]:
        self.streams += 1
        ending = "aborted"  # by a step or by the script; changed below for the other endings
        try:
            async for request in request_iterator:
                self.received.append(request)
                kind = request.WhichOneof("event")
                steps = self._steps_for(kind)
                if steps is None:
                    expected = self.expectations[0].kind if self.expectations else "nothing"
                    self.errors.append(f"event {len(self.received)}: got {kind}, expected {expected}")
                    await context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"script: unexpected {kind}")
                try:
                    for step in steps:
                        async for response in step(Exchange(request, context, self)):
                            self.sent.append(response)
                            yield response
                except CloseStream:
                    ending = "closed"
                    return
            ending = "half-closed"
        except asyncio.CancelledError:
            ending = "cancelled"
            raise
        finally:
            self.endings.append(ending)

    def moves_sent(self) -> list[bot_pb2.MoveChoice]:
        return [r.move for r in self.sent if r.WhichOneof("reply") == "move"]


# --- steps ---------------------------------------------------------------------------------------

def hello(name: str = "scripted", version: str = "1", protocol_version: str = "1", play_events: bool = False) -> Step:
    """Answer with a Hello."""
    message = bot_pb2.PlayResponse(hello=bot_pb2.Hello(name=name, version=version, protocol_version=protocol_version,
                                                       play_events=play_events))

    async def step(x: Exchange) -> AsyncIterator[bot_pb2.PlayResponse]:
        yield message
    return step


def answer(choice: Callable[[bot_pb2.Turn], bot_pb2.MoveChoice], times: int = 1) -> Step:
    """Answer the turn with ``choice(turn)``, ``times`` times (more than once: a flood)."""

    async def step(x: Exchange) -> AsyncIterator[bot_pb2.PlayResponse]:
        message = bot_pb2.PlayResponse(move=choice(x.turn))
        for _ in range(times):
            yield message
    return step


def move(index: int = 0, times: int = 1) -> Step:
    """Answer the turn with legal move ``index`` (``times`` times)."""
    return answer(lambda turn: bot_pb2.MoveChoice(turn_id=turn.turn_id, index=index), times)


def notation(text: str | Callable[[bot_pb2.Turn], str]) -> Step:
    """Answer the turn with a move in notation (a fixed text, or one made from the turn)."""
    return answer(lambda turn: bot_pb2.MoveChoice(turn_id=turn.turn_id,
                                                  notation=text(turn) if callable(text) else text))


def reply(message: bot_pb2.PlayResponse) -> Step:
    """Send ``message`` whatever the event (e.g. a move for a handshake, a Hello for a turn)."""

    async def step(x: Exchange) -> AsyncIterator[bot_pb2.PlayResponse]:
        yield message
    return step


def resend(which: int | Callable[[ScriptedBot], int] = -1) -> Step:
    """Send again a move the bot already sent (``which``: its index among the moves sent, or a
    function of the bot that says it when the step runs)."""

    async def step(x: Exchange) -> AsyncIterator[bot_pb2.PlayResponse]:
        yield bot_pb2.PlayResponse(move=x.bot.moves_sent()[which(x.bot) if callable(which) else which])
    return step


def hold(index: int = 0) -> Step:
    """Keep the answer (legal move ``index``) to this turn instead of sending it; ``release``
    sends it later: an answer the referee receives only after it gave up on the turn."""

    async def step(x: Exchange) -> AsyncIterator[bot_pb2.PlayResponse]:
        x.bot.held.append(bot_pb2.PlayResponse(move=bot_pb2.MoveChoice(turn_id=x.turn.turn_id, index=index)))
        return
        yield  # an async generator that sends nothing
    return step


def release() -> Step:
    """Send every answer ``hold`` kept, oldest first."""

    async def step(x: Exchange) -> AsyncIterator[bot_pb2.PlayResponse]:
        while x.bot.held:
            yield x.bot.held.pop(0)
    return step


def advance(clock: ManualClock, seconds: float) -> Step:
    """Take ``seconds`` on the referee's ManualClock (nothing really waits)."""

    async def step(x: Exchange) -> AsyncIterator[bot_pb2.PlayResponse]:
        clock.advance(seconds)
        return
        yield
    return step


def close() -> Step:
    """End the response stream (status OK): a bot that returns from Play."""

    async def step(x: Exchange) -> AsyncIterator[bot_pb2.PlayResponse]:
        raise CloseStream
        yield
    return step


def abort(code: grpc.StatusCode = grpc.StatusCode.INTERNAL, details: str = "scripted abort") -> Step:
    """End the stream with an error status."""

    async def step(x: Exchange) -> AsyncIterator[bot_pb2.PlayResponse]:
        await x.context.abort(code, details)
        yield
    return step


def hang(until: asyncio.Event | None = None) -> Step:
    """Neither answer nor read the stream any more (until ``until`` is set, else HANG_S): a bot
    that is stuck; the referee's deadlines must end the wait, or cancel the stream."""

    async def step(x: Exchange) -> AsyncIterator[bot_pb2.PlayResponse]:
        try:
            await asyncio.wait_for((until or asyncio.Event()).wait(), HANG_S)
        except TimeoutError:
            pass
        return
        yield
    return step


def call(action: Callable[[Exchange], Awaitable[Any] | Any]) -> Step:
    """Run ``action(exchange)`` (awaited when it is a coroutine) and send nothing."""

    async def step(x: Exchange) -> AsyncIterator[bot_pb2.PlayResponse]:
        done = action(x)
        if asyncio.iscoroutine(done):
            await done
        return
        yield
    return step


# A bot that plays well around what its script says: Hello to every handshake (a reconnection
# included), legal move 0 to every turn, and reads every other event.
PLAYS_WELL: dict[str, Step] = {"handshake": hello(), "turn": move(0)}


def misbehaves(step: Step, after: int = 3, name: str = "scripted") -> ScriptedBot:
    """A bot that plays well until its ``after``-th turn, then does ``step`` on that turn and
    every later one (across games and reconnections): the modes of tests/bots/scripted_bot.py."""
    bot = ScriptedBot(otherwise={"handshake": hello(name), "turn": move(0)})
    if after > 1:
        bot.expect("turn", move(0), times=after - 1)
    return bot.expect("turn", step, times=None)


class ScriptedBotServer:
    """Serves BotServices (ScriptedBots or any other servicer, e.g. the built-in RandomBot) over
    real gRPC from this test process, each on its own unix socket in a new temporary folder, with
    the standard health service reporting ``health_status`` (None: no health service). Use as
    ``async with``; ``addresses`` / ``endpoints()`` say where each listens (``address`` and
    ``endpoint``: the first)."""

    def __init__(self, *bots: bot_pb2_grpc.BotServiceServicer,
                 health_status: int | None = health_pb2.HealthCheckResponse.SERVING) -> None:
        self.bots = bots
        self._health_status = health_status
        self._servers: list[grpc.aio.Server] = []
        self._directory: Path | None = None
        self.addresses: list[str] = []

    @property
    def address(self) -> str:
        return self.addresses[0]

    @property
    def endpoint(self) -> BotEndpoint:
        return BotEndpoint.parse(self.address)

    def endpoints(self) -> list[BotEndpoint]:
        return [BotEndpoint.parse(a) for a in self.addresses]

    async def start(self) -> Self:
        # a short path: a unix socket path has at most 107 bytes (tempfile's folder is the
        # session's, set by tests/conftest.py)
        self._directory = Path(tempfile.mkdtemp(prefix="fb"))
        for i, bot in enumerate(self.bots):
            server = grpc.aio.server(options=SERVER_OPTIONS)
            self._servers.append(server)
            bot_pb2_grpc.add_BotServiceServicer_to_server(bot, server)
            if self._health_status is not None:
                checker = health.aio.HealthServicer()
                await checker.set("", self._health_status)
                health_pb2_grpc.add_HealthServicer_to_server(checker, server)
            address = f"unix:{self._directory / f'bot{i}.sock'}"
            server.add_insecure_port(address)
            await server.start()
            self.addresses.append(address)
        return self

    async def stop(self) -> None:
        """Stop every server at once (open streams are cancelled) and remove their sockets."""
        await asyncio.gather(*(s.stop(grace=None) for s in self._servers))
        self._servers.clear()
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)

    async def __aenter__(self) -> Self:
        try:
            return await self.start()
        except BaseException:
            await self.stop()  # the servers started before the one that failed
            raise

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
