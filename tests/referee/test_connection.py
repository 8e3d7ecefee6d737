"""One bot's protocol stream, driven directly: BotConnection (referee/wire/connection.py) and
BotSlot (referee/bots/slot.py) against an in-process scripted bot (tests/fake_bot.py) over real
gRPC on a unix socket, no bot process.

Each test scripts what the bot does with each event (docs/protocol.md section 5, "Misbehaviour →
FailureKind": answer, answer twice, answer the wrong turn, never answer, close, abort, flood,
oversize, stop reading, a bad Hello) and checks what the referee's side makes of it, and that the
conversation was the one scripted. Clock verdicts run on a ManualClock the bot advances; the only
real waits are for a bot that never answers (or never reads), bounded by a short limit it cannot
meet, however fast the machine.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2

from casino.v1 import bot_pb2, game_pb2
from referee.bots.endpoint import BotEndpoint
from referee.bots.slot import STARTUP_ATTEMPTS, BotSlot
from referee.clock import MONOTONIC, Clock, ManualClock, TimeControl
from referee.names import MAX_NAME_CHARS
from referee.wire.connection import CHANNEL_OPTIONS, MAX_MESSAGE_BYTES, MAX_QUEUED, BotConnection, StreamFailure
from tests.fake_bot import (
    ScriptedBot,
    ScriptedBotServer,
    abort,
    advance,
    answer,
    close,
    hang,
    hello,
    hold,
    move,
    notation,
    release,
    reply,
    resend,
)

F = game_pb2.FailureKind
HANDSHAKE = bot_pb2.Handshake(protocol_version="1", match_id="m1", games=1)
WAIT_S = 10.0  # for answers that come at once: generous, so a loaded machine never cuts one off
SHORT_S = 0.2  # for answers that never come: the wait the test really sits through
TEST_S = 60.0  # every test's whole bound


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(asyncio.wait_for(coro, TEST_S))


def turn(turn_id: int) -> bot_pb2.PlayRequest:
    return bot_pb2.PlayRequest(turn=bot_pb2.Turn(game_id="g1", turn_id=turn_id, move_time_ms=1000))


GAME_START = bot_pb2.PlayRequest(game_start=bot_pb2.GameStart(game_id="g1", game_number=1))


@contextlib.asynccontextmanager
async def stream(bot: ScriptedBot, clock: Clock = MONOTONIC, *, opened: bool = True) -> AsyncIterator[BotConnection]:
    """A BotConnection to ``bot`` served in-process; opened (handshake and Hello) unless not
    ``opened``; closed, with its channel and server, on the way out."""
    async with ScriptedBotServer(bot) as server:
        channel = grpc.aio.insecure_channel(server.address, options=CHANNEL_OPTIONS)
        connection = BotConnection(channel, clock)
        try:
            if opened:
                got = await connection.open(HANDSHAKE, WAIT_S)
                assert isinstance(got, bot_pb2.Hello), got
            yield connection
        finally:
            await connection.close()
            await channel.close(grace=None)


async def until_broken(connection: BotConnection) -> StreamFailure:
    """The stream's failure, once the connection's reader has seen it (bounded)."""
    for _ in range(int(WAIT_S / 0.01)):
        if connection.broken is not None:
            return connection.broken
        await asyncio.sleep(0.01)
    raise AssertionError(f"the stream did not break within {WAIT_S} s")


def playing() -> ScriptedBot:
    """A strict script that starts with a Hello."""
    return ScriptedBot().expect("handshake", hello())


# --- the handshake -------------------------------------------------------------------------------

def test_open_sends_the_handshake_and_returns_the_hello() -> None:
    bot = ScriptedBot().expect("handshake", hello(name="bob", version="2.1", play_events=True))

    async def main() -> None:
        async with stream(bot, opened=False) as connection:
            got = await connection.open(HANDSHAKE, WAIT_S)
            assert isinstance(got, bot_pb2.Hello)
            assert (got.name, got.version, got.protocol_version, got.play_events) == ("bob", "2.1", "1", True)
            assert connection.broken is None
    run(main())
    assert [r.handshake for r in bot.received] == [HANDSHAKE], "exactly the handshake, once"
    bot.assert_done()


def test_a_handshake_answered_without_a_hello_breaks_the_stream() -> None:
    move_reply = bot_pb2.PlayResponse(move=bot_pb2.MoveChoice(turn_id=0, index=0))
    bot = ScriptedBot().expect("handshake", reply(move_reply))

    async def main() -> None:
        async with stream(bot, opened=False) as connection:
            got = await connection.open(HANDSHAKE, WAIT_S)
            assert isinstance(got, StreamFailure)
            assert (got.kind, got.reason) == (F.FAILURE_KIND_PROTOCOL, "answered the handshake without a Hello")
            assert got.received.startswith("move {"), got.received
            assert connection.broken == got
            assert await connection.send(GAME_START, WAIT_S) == got, "a broken stream sends nothing more"
    run(main())
    assert bot.kinds() == ["handshake"]
    bot.assert_done()


def test_no_hello_in_time_is_a_timeout() -> None:
    stuck = asyncio.Event()
    bot = ScriptedBot().expect("handshake", hang(until=stuck))

    async def main() -> None:
        async with stream(bot, opened=False) as connection:
            got = await connection.open(HANDSHAKE, SHORT_S)
            assert got == StreamFailure(F.FAILURE_KIND_TIMEOUT, f"no answer within {SHORT_S * 1000:.0f} ms")
            stuck.set()  # so the bot reads the end of the stream at once when it is closed
    run(main())
    bot.assert_done()


def test_a_stream_closed_before_the_hello_is_a_disconnect() -> None:
    bot = ScriptedBot().expect("handshake", close())

    async def main() -> None:
        async with stream(bot, opened=False) as connection:
            got = await connection.open(HANDSHAKE, WAIT_S)
            assert got == StreamFailure(F.FAILURE_KIND_DISCONNECT, "the bot closed its stream")
            assert connection.broken == got
    run(main())
    bot.assert_done()


# --- turns ---------------------------------------------------------------------------------------

def test_answers_are_timed_on_the_connections_clock() -> None:
    # The connection reports what the bot took on its clock, exactly; judging it against the time
    # control is the game's (an answer can come in time for the wait and be late by the clock).
    clock = ManualClock()
    bot = playing().expect("turn", advance(clock, 0.25), move(2)).expect("turn", move(0)) \
        .expect("turn", advance(clock, 5.0), move(1))

    async def main() -> None:
        async with stream(bot, clock) as connection:
            assert await connection.ask_move(turn(1), 1, 1.0) == (bot_pb2.MoveChoice(turn_id=1, index=2), 0.25)
            assert await connection.ask_move(turn(2), 2, 1.0) == (bot_pb2.MoveChoice(turn_id=2, index=0), 0.0)
            # 5 s against a 1 s deadline: the ManualClock stretches the real wait, so the answer
            # is read and returned with its 5 s, not cut off as a timeout
            assert await connection.ask_move(turn(3), 3, 1.0) == (bot_pb2.MoveChoice(turn_id=3, index=1), 5.0)
    run(main())
    assert [t.turn_id for t in bot.turns()] == [1, 2, 3]
    bot.assert_done()


def test_a_turn_can_be_sent_as_bytes() -> None:
    bot = playing().expect("turn", move(4))

    async def main() -> None:
        async with stream(bot) as connection:
            choice, _ = await connection.ask_move(turn(7).SerializeToString(), 7, WAIT_S)
            assert choice == bot_pb2.MoveChoice(turn_id=7, index=4)
    run(main())
    assert bot.turns()[0] == turn(7).turn
    bot.assert_done()


def test_no_answer_in_time_is_a_timeout_and_the_stream_stays_usable() -> None:
    bot = playing().expect("turn", hold()).expect("turn", release(), move(1))

    async def main() -> None:
        async with stream(bot) as connection:
            choice, _ = await connection.ask_move(turn(1), 1, SHORT_S)
            assert choice == StreamFailure(F.FAILURE_KIND_TIMEOUT, f"no answer within {SHORT_S * 1000:.0f} ms")
            assert connection.broken is None
            # the bot sends its late answer to turn 1 only now, then answers turn 2: the late one
            # is dropped, not taken for turn 2's
            choice, _ = await connection.ask_move(turn(2), 2, WAIT_S)
            assert choice == bot_pb2.MoveChoice(turn_id=2, index=1)
    run(main())
    assert [m.turn_id for m in bot.moves_sent()] == [1, 2]
    bot.assert_done()


def test_a_late_answer_waiting_before_the_next_turn_is_dropped() -> None:
    # The late answer arrives between turns (sent on a PlayMade): dropped whether the referee
    # reads it before sending the next turn or after.
    bot = playing().expect("turn", hold()).expect("play_made", release()).expect("turn", move(3))
    made = bot_pb2.PlayRequest(play_made=bot_pb2.PlayMade(game_id="g1", seat=1, move="AS trail"))

    async def main() -> None:
        async with stream(bot) as connection:
            choice, _ = await connection.ask_move(turn(1), 1, SHORT_S)
            assert isinstance(choice, StreamFailure) and choice.kind == F.FAILURE_KIND_TIMEOUT
            assert await connection.send(made, WAIT_S) is None
            choice, _ = await connection.ask_move(turn(2), 2, WAIT_S)
            assert choice == bot_pb2.MoveChoice(turn_id=2, index=3)
    run(main())
    bot.assert_done()


def test_a_turn_answered_without_a_move_is_a_protocol_failure() -> None:
    hello_reply = bot_pb2.PlayResponse(hello=bot_pb2.Hello(name="again"))
    bot = playing().expect("turn", reply(hello_reply))

    async def main() -> None:
        async with stream(bot) as connection:
            choice, _ = await connection.ask_move(turn(1), 1, WAIT_S)
            assert isinstance(choice, StreamFailure)
            assert (choice.kind, choice.reason) == (F.FAILURE_KIND_PROTOCOL, "answered a turn without a move")
            assert choice.received == 'hello {   name: "again" }'
    run(main())
    bot.assert_done()


def test_an_answer_to_another_turn_is_malformed() -> None:
    bot = playing().expect("turn", answer(lambda t: bot_pb2.MoveChoice(turn_id=t.turn_id + 1000, index=0)))

    async def main() -> None:
        async with stream(bot) as connection:
            choice, _ = await connection.ask_move(turn(5), 5, WAIT_S)
            assert choice == StreamFailure(F.FAILURE_KIND_MALFORMED, "answered turn 1005, expected 5",
                                           "turn_id: 1005 index: 0")
    run(main())
    bot.assert_done()


def test_a_second_answer_to_an_answered_turn_is_a_protocol_failure() -> None:
    # Turn 1 answered; on turn 2 the bot first sends that answer again.
    bot = playing().expect("turn", move(0)).expect("turn", resend(0), move(0))

    async def main() -> None:
        async with stream(bot) as connection:
            assert (await connection.ask_move(turn(1), 1, WAIT_S))[0] == bot_pb2.MoveChoice(turn_id=1, index=0)
            choice, _ = await connection.ask_move(turn(2), 2, WAIT_S)
            assert choice == StreamFailure(F.FAILURE_KIND_PROTOCOL, "sent a second answer to turn 1",
                                           "turn_id: 1 index: 0")
    run(main())
    bot.assert_done()


@pytest.mark.parametrize("back, failure", [
    (1, StreamFailure(F.FAILURE_KIND_PROTOCOL, "sent a second answer to turn 2", "turn_id: 2 index: 0")),
    (2, StreamFailure(F.FAILURE_KIND_MALFORMED, "answered turn 1, expected 3", "turn_id: 1 index: 0")),
], ids=["last-game", "two-games-back"])
def test_answered_turns_are_remembered_for_this_game_and_the_last(back: int, failure: StreamFailure) -> None:
    # One stream serves many games and remembers two games' answered turns, not every one: in
    # game 3, the last game's answer sent again is a second answer; one from two games back is an
    # answer to the wrong turn.
    bot = playing().expect("turn", move(0), times=2).expect("turn", resend(2 - back), move(0))

    async def main() -> None:
        async with stream(bot) as connection:
            for turn_id in (1, 2):
                connection.begin_game()
                assert (await connection.ask_move(turn(turn_id), turn_id, WAIT_S))[0] == bot_pb2.MoveChoice(
                    turn_id=turn_id, index=0)
            connection.begin_game()
            assert (await connection.ask_move(turn(3), 3, WAIT_S))[0] == failure
    run(main())
    bot.assert_done()


def test_a_message_waiting_unasked_is_a_protocol_failure() -> None:
    # The bot sends a move with the GameStart, unasked, then ends its stream: the move waits in
    # the queue and is judged at the next turn, before the stream's end is.
    unasked = bot_pb2.PlayResponse(move=bot_pb2.MoveChoice(turn_id=77, index=0))
    bot = playing().expect("game_start", reply(unasked), close())

    async def main() -> None:
        async with stream(bot) as connection:
            assert await connection.send(GAME_START, WAIT_S) is None
            assert await until_broken(connection) == StreamFailure(F.FAILURE_KIND_DISCONNECT, "the bot closed its stream")
            choice, elapsed = await connection.ask_move(turn(1), 1, WAIT_S)
            assert choice == StreamFailure(F.FAILURE_KIND_PROTOCOL, "sent a message that was not asked for",
                                           "move {   turn_id: 77   index: 0 }")
            assert elapsed == 0.0, "judged before the turn is sent"
            choice, _ = await connection.ask_move(turn(1), 1, WAIT_S)
            assert choice == connection.broken, "then the stream's end"
    run(main())
    assert bot.kinds() == ["handshake", "game_start"], "no turn was written to a stream that had ended"
    bot.assert_done()


def test_a_flood_stops_the_reading_and_is_a_protocol_failure() -> None:
    bot = playing().expect("turn", move(0, times=100))

    async def main() -> None:
        async with stream(bot) as connection:
            choice, _ = await connection.ask_move(turn(1), 1, WAIT_S)
            assert choice == bot_pb2.MoveChoice(turn_id=1, index=0), "the first answer is the move"
            broken = await until_broken(connection)
            assert (broken.kind, broken.reason) == (
                F.FAILURE_KIND_PROTOCOL, f"flooded the stream: more than {MAX_QUEUED} unrequested messages")
            assert broken.received == "move {   turn_id: 1   index: 0 }"
            # the next turn finds the unread copies waiting: unasked messages
            choice, _ = await connection.ask_move(turn(2), 2, WAIT_S)
            assert isinstance(choice, StreamFailure) and choice.kind == F.FAILURE_KIND_PROTOCOL
            assert choice.reason == "sent a message that was not asked for"
    run(main())
    assert bot.kinds() == ["handshake", "turn"], "nothing more is written to a flooded stream"
    bot.assert_done()


@pytest.mark.parametrize("step, failure", [
    (close(), StreamFailure(F.FAILURE_KIND_DISCONNECT, "the bot closed its stream")),
    (abort(grpc.StatusCode.INTERNAL, "boom"), StreamFailure(F.FAILURE_KIND_DISCONNECT, "stream broke: INTERNAL: boom")),
], ids=["closed", "aborted"])
def test_a_stream_ended_on_a_turn_is_a_disconnect(step: Any, failure: StreamFailure) -> None:
    bot = playing().expect("turn", step)

    async def main() -> None:
        async with stream(bot) as connection:
            choice, _ = await connection.ask_move(turn(1), 1, WAIT_S)
            assert choice == failure
            assert connection.broken == failure
            assert await connection.send(GAME_START, WAIT_S) == failure
            assert await connection.ask_move(turn(2), 2, WAIT_S) == (failure, 0.0)
    run(main())
    bot.assert_done()


def test_an_oversized_answer_is_malformed_and_kills_the_stream() -> None:
    size = 2 * MAX_MESSAGE_BYTES
    bot = playing().expect("turn", notation("X" * size))

    async def main() -> None:
        async with stream(bot) as connection:
            choice, _ = await connection.ask_move(turn(1), 1, WAIT_S)
            assert isinstance(choice, StreamFailure)
            assert choice.kind == F.FAILURE_KIND_MALFORMED
            assert choice.reason.startswith("sent an oversized message (")
            assert f"vs. {MAX_MESSAGE_BYTES})" in choice.reason, choice.reason
            assert choice.received == "", "nothing of it is kept"
            assert connection.broken == choice
    run(main())
    bot.assert_done()


def test_a_bot_that_stops_reading_cannot_hold_the_referee() -> None:
    # The bot reads the GameStart, then neither reads nor answers: writes back up once the
    # transport's buffers are full, and the first one that cannot finish in time breaks the
    # stream. Each event is 2 MB, so that happens within a few of them.
    big = bot_pb2.PlayRequest(game_start=bot_pb2.GameStart(game_id="g1", player_names=["x" * (2 << 20)]))
    bot = playing().expect("game_start", hang())

    async def main() -> None:
        async with stream(bot) as connection:
            for _ in range(50):  # at most 100 MB
                failure = await connection.send(big, SHORT_S)
                if failure is not None:
                    break
            assert failure == StreamFailure(F.FAILURE_KIND_TIMEOUT, "stopped reading its stream")
            assert connection.broken == failure
            assert await connection.ask_move(turn(1), 1, WAIT_S) == (failure, 0.0)
    run(main())
    bot.assert_done()


def test_a_turn_that_cannot_be_written_in_time_breaks_the_stream() -> None:
    big_turn = bot_pb2.PlayRequest(turn=bot_pb2.Turn(game_id="g" * (2 << 20), turn_id=1))
    bot = playing().expect("turn", hang())

    async def main() -> None:
        async with stream(bot) as connection:
            for turn_id in range(1, 50):
                big_turn.turn.turn_id = turn_id
                choice, _ = await connection.ask_move(big_turn, turn_id, SHORT_S)
                assert isinstance(choice, StreamFailure) and choice.kind == F.FAILURE_KIND_TIMEOUT
                if connection.broken is not None:
                    break
            # the turns it could write timed out unanswered; the one it could not broke the stream
            assert choice.reason == "stopped reading its stream"
            assert connection.broken == choice
    run(main())
    bot.assert_done()


def test_close_half_closes_so_the_bot_can_finish() -> None:
    bot = playing().expect("game_start")

    async def main() -> None:
        async with stream(bot) as connection:
            assert await connection.send(GAME_START, WAIT_S) is None
            await connection.close()
            assert bot.endings == ["half-closed"], "the bot saw the end of the requests and returned"
    run(main())
    bot.assert_done()


# --- a bot session: BotSlot with an address, no process ------------------------------------------

CONTROL = TimeControl(move_time_ms=1000, grace_ms=50, startup_time_ms=10_000)
QUICK = TimeControl(move_time_ms=300, grace_ms=50, startup_time_ms=300)  # for bots that never get ready
# for a bot that answers health checks but never gets ready: long enough for its first answer to
# arrive on a loaded machine, so the reason names the status it gave, not a missed deadline
ANSWERS_UNHEALTHY = TimeControl(move_time_ms=300, grace_ms=50, startup_time_ms=3000)


def slot_of(endpoint: BotEndpoint, tmp_path: Path, clock: Clock = MONOTONIC) -> BotSlot:
    """Seat 0's slot for a bot at an address: no process is started."""
    return BotSlot(0, endpoint, tmp_path / "logs", tmp_path, clock=clock)


def test_a_slot_on_an_address_gets_ready_without_a_process(tmp_path: Path) -> None:
    rude = "\x1b[31mmallory\x1b[0m\nFORFEITS" + "M" * 1000
    bot = ScriptedBot().expect("handshake", hello(name=rude, version="3.0\n", play_events=True))

    async def main() -> None:
        async with ScriptedBotServer(bot) as server:
            slot = slot_of(server.endpoint, tmp_path)
            try:
                assert await slot.ensure_ready(HANDSHAKE, CONTROL) is None
                assert slot.ready and slot.process is None and slot.starts == 1
                # cleaned before anything holds it (referee/names.py): no escapes, one line, capped
                name = slot.hello_name
                assert name.startswith("mallory FORFEITSM") and name.endswith("…"), name
                assert len(name) == MAX_NAME_CHARS and name.isprintable()
                assert (slot.version, slot.play_events) == ("3.0", True)
                assert await slot.ensure_ready(HANDSHAKE, CONTROL) is None, "a ready slot is reused"
                assert slot.starts == 1
            finally:
                await slot.shutdown()
            assert not slot.ready
    run(main())
    assert bot.kinds() == ["handshake"] and bot.streams == 1
    assert not (tmp_path / "logs").exists(), "no process, no log"
    bot.assert_done()


@pytest.mark.parametrize("step, reason, received", [
    (hello(protocol_version="2"), "speaks protocol '2', the referee speaks 1", ""),
    (hello(protocol_version="2.0\x1b[2J"), "speaks protocol '2.0', the referee speaks 1", ""),
    (reply(bot_pb2.PlayResponse(move=bot_pb2.MoveChoice(turn_id=0, index=0))),
     "handshake failed: answered the handshake without a Hello", "move {   index: 0 }"),
    (close(), "handshake failed: the bot closed its stream", ""),
], ids=["other-major-version", "version-cleaned", "no-hello", "closed"])
def test_a_bad_handshake_is_a_startup_failure_and_the_slot_gives_up(tmp_path: Path, step: Any, reason: str,
                                                                    received: str) -> None:
    bot = ScriptedBot().expect("handshake", step, times=STARTUP_ATTEMPTS)

    async def main() -> None:
        async with ScriptedBotServer(bot) as server:
            slot = slot_of(server.endpoint, tmp_path)
            try:
                for attempt in range(1, STARTUP_ATTEMPTS + 2):
                    failure = await slot.ensure_ready(HANDSHAKE, CONTROL)
                    assert failure == StreamFailure(F.FAILURE_KIND_STARTUP, reason, received), attempt
                    assert not slot.ready and slot.connection is None and slot.channel is None
                # tried STARTUP_ATTEMPTS times, then given up without another try
                assert slot.failed_starts == STARTUP_ATTEMPTS and slot.starts == STARTUP_ATTEMPTS
            finally:
                await slot.shutdown()
    run(main())
    assert bot.kinds() == ["handshake"] * STARTUP_ATTEMPTS and bot.streams == STARTUP_ATTEMPTS
    bot.assert_done()


def test_a_protocol_with_the_same_major_version_is_accepted(tmp_path: Path) -> None:
    bot = ScriptedBot().expect("handshake", hello(protocol_version="1.7"))

    async def main() -> None:
        async with ScriptedBotServer(bot) as server:
            slot = slot_of(server.endpoint, tmp_path)
            try:
                assert await slot.ensure_ready(HANDSHAKE, CONTROL) is None
            finally:
                await slot.shutdown()
    run(main())
    bot.assert_done()


def test_a_hello_late_by_the_clock_is_a_startup_failure(tmp_path: Path) -> None:
    clock = ManualClock()
    control = TimeControl(move_time_ms=300, grace_ms=50, startup_time_ms=1500)
    bot = ScriptedBot().expect("handshake", advance(clock, 1.6), hello()).expect("handshake", advance(clock, 1.5), hello())

    async def main() -> None:
        async with ScriptedBotServer(bot) as server:
            slot = slot_of(server.endpoint, tmp_path, clock)
            try:
                assert await slot.ensure_ready(HANDSHAKE, control) == StreamFailure(
                    F.FAILURE_KIND_STARTUP, "handshake failed: no Hello within the startup time (1500 ms)")
                assert await slot.ensure_ready(HANDSHAKE, control) is None, "exactly the startup time is in time"
                assert slot.failed_starts == 0, "a good start forgets the failed ones"
            finally:
                await slot.shutdown()
    run(main())
    bot.assert_done()


@pytest.mark.parametrize("status, why", [
    (health_pb2.HealthCheckResponse.NOT_SERVING, "health status NOT_SERVING"),
    (health_pb2.HealthCheckResponse.SERVICE_UNKNOWN, "health status SERVICE_UNKNOWN"),
], ids=["not-serving", "service-unknown"])
def test_a_bot_not_serving_is_a_startup_failure(tmp_path: Path, status: int, why: str) -> None:
    bot = ScriptedBot()

    async def main() -> None:
        async with ScriptedBotServer(bot, health_status=status) as server:
            slot = slot_of(server.endpoint, tmp_path)
            try:
                assert await slot.ensure_ready(HANDSHAKE, ANSWERS_UNHEALTHY) == StreamFailure(
                    F.FAILURE_KIND_STARTUP, f"not healthy within the startup time ({why})")
            finally:
                await slot.shutdown()
    run(main())
    assert bot.streams == 0, "no handshake before the bot is healthy"
    bot.assert_done()


def test_nothing_listening_is_a_startup_failure(tmp_path: Path) -> None:
    async def main() -> None:
        slot = slot_of(BotEndpoint.parse(f"unix:{tmp_path / 'nobody.sock'}"), tmp_path)
        try:
            failure = await slot.ensure_ready(HANDSHAKE, QUICK)
            assert failure is not None and failure.kind == F.FAILURE_KIND_STARTUP
            assert failure.reason.startswith("not healthy within the startup time (UNAVAILABLE: "), failure.reason
        finally:
            await slot.shutdown()
    run(main())


def test_a_bot_without_a_health_service_is_ready_once_reachable(tmp_path: Path) -> None:
    bot = ScriptedBot().expect("handshake", hello())

    async def main() -> None:
        async with ScriptedBotServer(bot, health_status=None) as server:
            slot = slot_of(server.endpoint, tmp_path)
            try:
                assert await slot.ensure_ready(HANDSHAKE, CONTROL) is None
            finally:
                await slot.shutdown()
    run(main())
    bot.assert_done()


@pytest.mark.parametrize("cause", ["needs-restart", "broken-stream"])
def test_a_slot_reconnects_after_a_timeout_or_a_broken_stream(tmp_path: Path, cause: str) -> None:
    bot = ScriptedBot().expect("handshake", hello())
    if cause == "broken-stream":
        bot.expect("turn", close())
    bot.expect("handshake", hello())

    async def main() -> None:
        async with ScriptedBotServer(bot) as server:
            slot = slot_of(server.endpoint, tmp_path)
            try:
                assert await slot.ensure_ready(HANDSHAKE, CONTROL) is None
                if cause == "needs-restart":
                    slot.needs_restart = True  # what play_game sets after a timeout: its state is unknown
                else:
                    choice, _ = await slot.connection.ask_move(turn(1), 1, WAIT_S)  # type: ignore[union-attr]
                    assert isinstance(choice, StreamFailure) and not slot.ready
                assert await slot.ensure_ready(HANDSHAKE, CONTROL) is None
                assert slot.ready and not slot.needs_restart and slot.starts == 2
            finally:
                await slot.shutdown()
    run(main())
    assert bot.streams == 2 and bot.handshakes == 2
    assert bot.endings[0] == ("half-closed" if cause == "needs-restart" else "closed"), bot.endings
    bot.assert_done()
