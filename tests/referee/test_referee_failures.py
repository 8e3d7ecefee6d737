"""Misbehaving bots against the referee: whole matches over real gRPC.

Each test plays a 2-player match between a bot that misbehaves in one way and a well-behaved bot,
with seats rotating between games, and checks the outcome the contract documents
(proto/casino/v1/game.proto: FailureKind, Failure, GameResult; docs/protocol.md section 5): the
failing seat's failure kind and reason, what it sent, a FORFEIT with the failing side ranked last
and the opponent credited, every game reported, and no bot process left running. Then the
random-move policy, the time bank, and the JSON game records.

Behaviour that needs a process runs real bot processes (tests/bots/scripted_bot.py): a bot that
never listens, crashes, hangs or answers late and is restarted, exits between games, or sends an
oversized answer and has its process replaced. Misbehaviour on the stream itself (a bad Hello, a
bad answer, a second answer, a flood, slow answers on the clock) is played against in-process
scripted bots (tests/fake_bot.py) and the built-in random bot served in-process: the same
referee, over real gRPC on a unix socket, without the seconds a process costs to start. The
stream's own handling of each is tested alone in tests/referee/test_connection.py.

No verdict here depends on how fast or busy the machine is: the clock logic (move time, grace,
bank, increment, startup) runs on a ManualClock that in-process bots advance while they "think";
a timeout in real time comes only from a bot that never answers (or answers only after the
referee has moved on), against an opponent whose limit it cannot miss.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from casino.v1 import bot_pb2, bot_pb2_grpc, game_pb2, referee_pb2
from referee.bots.builtin import RandomBot
from referee.bots.endpoint import BotEndpoint
from referee.clock import MONOTONIC, Clock, ManualClock, TimeControl
from referee.match.report import MatchReport
from referee.match.run import run_match
from referee.match.spec import FailurePolicy, MatchSpec
from referee.rules import RuleOptions
from tests.bots.scripted_bot import illegal_notation
from tests.conftest import FAST_TIME, ROOMY_TIME, ROOT, assert_no_bot_processes, builtin_bot_command, python_bot_command
from tests.fake_bot import (
    PLAYS_WELL,
    ScriptedBot,
    ScriptedBotServer,
    Step,
    advance,
    answer,
    call,
    hello,
    hold,
    misbehaves,
    move,
    notation,
    release,
    reply,
    resend,
)

F = game_pb2.FailureKind
FORFEIT = game_pb2.TERMINATION_FORFEIT
NORMAL = game_pb2.TERMINATION_NORMAL
BAD = 0  # the misbehaving bot's index in the match: seat 0 in game 1, seat 1 in game 2
RECORD_KEYS = {"format", "version", "game_id", "seats", "engine", "timings_us", "cpu_us", "failures", "result"}
# for bots that never start; the opponent is already running, so its handshake cannot miss 1.5 s
QUICK_START = TimeControl(move_time_ms=300, grace_ms=50, startup_time_ms=1500)


@dataclass
class Played:
    report: MatchReport
    events: list[referee_pb2.RunMatchResponse]
    seconds: float

    def starts(self, bot: int = BAD) -> int:
        """How many times the referee started bot ``bot``'s process (from its log file)."""
        return (self.report.logs_dir / f"bot{bot}.log").read_text().count("--- starting ")


def endpoint(spec: str) -> BotEndpoint:
    return BotEndpoint.parse(spec, cwd=str(ROOT))


def play(bots: list[str], *, games: int = 2, time_control: TimeControl = ROOMY_TIME, **spec_args) -> Played:
    """Run a whole match in a fresh event loop and keep every streamed event."""
    spec = MatchSpec(bots=[endpoint(b) for b in bots], options=RuleOptions(players=len(bots)), games=games,
                     time_control=time_control, **spec_args)
    events: list[referee_pb2.RunMatchResponse] = []
    start = time.monotonic()
    report = asyncio.run(asyncio.wait_for(run_match(spec, events.append), 120))
    return Played(report, events, time.monotonic() - start)


def opponent(seed: int = 1) -> RandomBot:
    """The built-in random bot (referee/bots/builtin.py) for serving in-process: the same moves as
    ``builtin_bot_command(seed)``, without its process."""
    return RandomBot(seed)


def play_inprocess(*bots: bot_pb2_grpc.BotServiceServicer | str, games: int = 1,
                   time_control: TimeControl = ROOMY_TIME, clock: Clock = MONOTONIC, **spec_args) -> Played:
    """A match between ``bots`` (bot i is seat i in game 1): each servicer is served over real gRPC
    on a unix socket by this test process (an address endpoint: no process), each string is a
    command the referee starts; timed on ``clock``."""

    async def main() -> Played:
        async with ScriptedBotServer(*(b for b in bots if not isinstance(b, str))) as server:
            served = iter(server.endpoints())
            endpoints = [endpoint(b) if isinstance(b, str) else next(served) for b in bots]
            spec = MatchSpec(bots=endpoints, options=RuleOptions(players=len(bots)), games=games,
                             time_control=time_control, **spec_args)
            events: list[referee_pb2.RunMatchResponse] = []
            start = time.monotonic()
            report = await asyncio.wait_for(run_match(spec, events.append, clock), 120)
            return Played(report, events, time.monotonic() - start)

    return asyncio.run(main())


def check_forfeits(played: Played, kind: int, games: int = 2, *, reason: str | None = None,
                   received: bool | None = None) -> list[game_pb2.Failure]:
    """Every game is a forfeit by bot BAD with ``kind``, its side last, the other side credited;
    returns the forfeiting failure of each game."""
    report = played.report
    assert len(report.games) == games, "every game of the match is reported"
    assert [g.seat_bots for g in report.games] == [[0, 1], [1, 0]][:games], "seats rotate between games"
    forfeits = []
    for game in report.games:
        r = game.result
        seat = game.seat_bots.index(BAD)
        other = 1 - seat
        failures = [(f.seat, F.Name(f.kind), f.reason) for f in r.failures]
        assert r.termination == FORFEIT, (game.game_number, r.reason, failures)
        assert r.reason == "forfeit"
        assert len(r.failures) == 1, failures
        failure = r.failures[0]
        assert failure.seat == seat and failure.forfeit, failures
        assert F.Name(failure.kind) == F.Name(kind), (game.game_number, failures)
        if reason is not None:
            assert re.search(reason, failure.reason), (game.game_number, failure.reason)
        if received is True:
            assert failure.received, f"game {game.game_number}: the bot sent something but received is empty"
        elif received is False:
            assert failure.received == "", failure.received
        assert list(r.ranks) == ([1, 2] if seat == 1 else [2, 1]), "the forfeiting side ranks last"
        assert r.winner_side == other, "the opponent's side is credited with the win"
        assert game.record["result"]["termination"] == "TERMINATION_FORFEIT"
        forfeits.append(failure)
    tally = report.tally()
    assert (list(tally.forfeits), list(tally.wins), list(tally.losses)) == ([games, 0], [0, games], [games, 0])
    kinds = [e.WhichOneof("event") for e in played.events]
    assert kinds[0] == "match_started" and kinds[-1] == "match_result"
    assert kinds.count("game_result") == games and kinds.count("failure") == games
    return forfeits


# --- startup failures ----------------------------------------------------------------------------

def test_never_listen_is_a_startup_forfeit(running_builtin_bot: tuple[str, int]) -> None:
    address, pid = running_builtin_bot
    played = play([python_bot_command("never-listen"), address], time_control=QUICK_START)
    failures = check_forfeits(played, F.FAILURE_KIND_STARTUP, reason="^not healthy within the startup time",
                              received=False)
    assert [(f.deal, f.play_number) for f in failures] == [(0, 0), (0, 0)], "0: before the game's first play"
    # started in parallel at the match start, again for game 1 and for game 2, then given up
    assert played.starts() == 3
    assert_no_bot_processes(exclude={pid})


def test_no_hello_is_a_startup_forfeit() -> None:
    # The bot answers every handshake with a move (the scripted bot's no-hello mode), in-process.
    # The script is strict: the referee sends it two handshakes and nothing else.
    bot = ScriptedBot().expect("handshake", reply(bot_pb2.PlayResponse(move=bot_pb2.MoveChoice(turn_id=0, index=0))),
                               times=2)
    played = play_inprocess(bot, opponent())
    (failure,) = check_forfeits(played, F.FAILURE_KIND_STARTUP, games=1, reason="without a Hello", received=True)
    assert "move" in failure.received, "received shows the move it sent instead of a Hello"
    # game.proto: "0 for a failure before the game's first play, e.g. at startup"
    assert (failure.deal, failure.play_number) == (0, 0)
    assert played.report.games[0].record["engine"]["deals"][0]["moves"] == [], "no play was made"
    assert bot.kinds() == ["handshake"] * 2, "tried at the match start and again for game 1, never asked to move"
    bot.assert_done()
    assert played.report.bot_names == ["bot0", "builtin-random"], "a bot that never said Hello is bot<i>"
    assert_no_bot_processes()


def bad_hello(version: str = "1", delay_s: float = 0.0, clock: ManualClock | None = None,
              handshakes: int | None = None) -> ScriptedBot:
    """A bot whose Hello speaks protocol ``version``, after ``delay_s`` on ``clock`` (the
    referee's ManualClock: the bot takes that long without a real wait). Strict: it expects
    ``handshakes`` handshakes (None: any number) and nothing else."""
    return ScriptedBot().expect("handshake", advance(clock or ManualClock(), delay_s),
                                hello(name="bad-hello", protocol_version=version), times=handshakes)


@pytest.mark.parametrize(
    "version, delay_s, games, reason",
    [
        ("2", 0.0, 2, r"^speaks protocol '2', the referee speaks 1$"),
        ("1", 1.6, 1, r"^handshake failed: no Hello within the startup time \(1500 ms\)$"),
    ],
    ids=["other-major-version", "hello-too-late"],
)
def test_bad_hello_is_a_startup_forfeit(version: str, delay_s: float, games: int, reason: str) -> None:
    # The stream of a failed handshake must not be kept: the bot is not ready and forfeits every
    # game (docs/protocol.md listed both as "known problems": it played on with no failure, or
    # failed its first turn instead). The opponent is served in-process, so it is ready at once:
    # the startup time is short.
    clock = ManualClock()
    bot = bad_hello(version, delay_s, clock, handshakes=games + 1)
    played = play_inprocess(bot, opponent(), games=games, time_control=QUICK_START, clock=clock)
    failures = check_forfeits(played, F.FAILURE_KIND_STARTUP, games=games, reason=reason)
    assert [f.play_number for f in failures] == [0] * games
    assert bot.turns() == [], "a bot that failed its handshake is never asked to move"
    # tried at the match start, then before each game, at most 3 times in a row (then given up)
    assert bot.handshakes == games + 1
    bot.assert_done()
    assert_no_bot_processes()


def test_every_seat_that_cannot_start_forfeits() -> None:
    # 3 players: seats 0 and 2 cannot start; both are recorded and both sides rank last
    # (docs/protocol.md listed "only the first seat that fails to start is recorded" as a known problem)
    first, third = bad_hello(version="2", handshakes=2), bad_hello(version="2", handshakes=2)
    played = play_inprocess(first, opponent(), third)
    (game,) = played.report.games
    r = game.result
    assert r.termination == FORFEIT
    assert [(f.seat, f.kind, f.play_number, f.forfeit) for f in r.failures] == [
        (0, F.FAILURE_KIND_STARTUP, 0, True), (2, F.FAILURE_KIND_STARTUP, 0, True)]
    assert list(r.ranks) == [2, 1, 2] and r.winner_side == 1
    tally = played.report.tally()
    assert list(tally.forfeits) == [1, 0, 1] and list(tally.wins) == [0, 1, 0]
    for bot in (first, third):
        bot.assert_done()  # each tried at the match start and for the game
    assert_no_bot_processes()


def test_when_every_seat_forfeits_each_forfeit_is_a_loss() -> None:
    # docs/protocol.md, MatchResult: "a forfeit is counted in forfeits ... **and** as a loss". When
    # every side forfeits they all rank 1 (tied last) with no winner; the referee before 4f425de
    # counted that as a draw for each.
    played = play_inprocess(bad_hello(version="2"), bad_hello(version="2"))
    (game,) = played.report.games
    r = game.result
    assert r.termination == FORFEIT and r.winner_side == -1
    assert [(f.seat, f.kind, f.forfeit) for f in r.failures] == [
        (0, F.FAILURE_KIND_STARTUP, True), (1, F.FAILURE_KIND_STARTUP, True)]
    tally = played.report.tally()
    assert list(tally.forfeits) == [1, 1]
    counted = (list(tally.wins), list(tally.draws), list(tally.losses))
    assert counted == ([0, 0], [0, 0], [1, 1]), f"wins, draws, losses {counted}; ranks {list(r.ranks)}"


# --- failures on a turn --------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["hang", "late"])
def test_turn_failure_forfeits(mode: str) -> None:
    # Real processes: a bot that misses a deadline is restarted (its process replaced) before its
    # next game.
    games = 1 if mode == "hang" else 2  # a hung bot costs a second per stop (and `late` shows the restart)
    played = play([python_bot_command(mode), builtin_bot_command(1)], games=games, time_control=FAST_TIME)
    failures = check_forfeits(played, F.FAILURE_KIND_TIMEOUT, games=games, reason=r"^no answer within 1050 ms$",
                              received=False)
    # game 1: the bot sits first, so its 3rd turn is play 5 (turn 5). Game 2 (seat 1): a bot the
    # referee restarted fails on its 3rd turn again (play 6); one it kept fails on its first (play 2)
    game2 = 6 if played.starts() == 2 else 2
    assert played.starts() in (1, 2)
    assert [(f.deal, f.play_number) for f in failures] == [(0, 5), (0, game2)][:games]
    assert_no_bot_processes()


# The bad answers of tests/bots/scripted_bot.py's modes, as steps of an in-process scripted bot.
BAD_ANSWERS: dict[str, Step] = {
    "illegal": notation(illegal_notation),
    "bad-index": answer(lambda turn: bot_pb2.MoveChoice(turn_id=turn.turn_id, index=len(turn.legal_moves) + 5)),
    "garbage": notation("\x00 take everything!"),
    "wrong-turn": answer(lambda turn: bot_pb2.MoveChoice(turn_id=turn.turn_id + 1000, index=0)),
}


@pytest.mark.parametrize(
    "mode, kind, reason",
    [
        pytest.param(*case, id=case[0]) for case in [
            ("illegal", F.FAILURE_KIND_ILLEGAL_MOVE, r"\(rules? \d+(, \d+)*\)$"),
            ("bad-index", F.FAILURE_KIND_MALFORMED, r"^index \d+ is out of range \(0\.\.\d+\)$"),
            ("garbage", F.FAILURE_KIND_MALFORMED, r"^bad move '\\x00 take everything!': bad card code"),
            ("wrong-turn", F.FAILURE_KIND_MALFORMED, r"^answered turn (\d+), expected (\d+)$"),
        ]
    ],
)
def test_bad_answer_forfeits(mode: str, kind: int, reason: str) -> None:
    # In-process: the bot plays well, then from its 3rd turn on answers badly, as the scripted
    # bot's mode does.
    bot = misbehaves(BAD_ANSWERS[mode], after=3, name=f"scripted-{mode}")
    played = play_inprocess(bot, opponent(), games=2)
    failures = check_forfeits(played, kind, games=2, reason=reason, received=True)
    # game 1: the bot sits first, so its 3rd turn is play 5 (turn 5). A bad answer does not cost
    # the bot its stream: it is kept, and in game 2 (seat 1) fails on its first turn (play 2)
    assert bot.streams == 1, "kept, not restarted"
    assert [(f.deal, f.play_number) for f in failures] == [(0, 5), (0, 2)]
    assert f"turn_id: {1005 if mode == 'wrong-turn' else 5}" in failures[0].received, failures[0].received
    if mode == "illegal":
        move_text = re.search(r'notation: "([^"]+)"', failures[0].received).group(1)
        assert failures[0].reason.startswith(f"{move_text}: "), "the reason names the move, then why it is illegal"
    if mode == "wrong-turn":
        for f in failures:
            sent, expected = map(int, re.match(reason, f.reason).groups())
            assert sent == expected + 1000 and f"turn_id: {sent}" in f.received
    assert_no_bot_processes()


def test_crash_is_a_crash_forfeit_and_the_bot_is_restarted() -> None:
    played = play([python_bot_command("crash"), builtin_bot_command(1)])
    # the process exits on its turn: CRASH ("The bot's process exited"), in every game, also when
    # the broken stream is noticed before the exit
    failures = check_forfeits(played, F.FAILURE_KIND_CRASH, reason="^the bot process exited with status 3$",
                              received=False)
    # restarted for game 2, where the new process crashes on its 3rd turn again (play 6, seat 1)
    assert [(f.deal, f.play_number) for f in failures] == [(0, 5), (0, 6)]
    assert played.starts() == 2
    assert_no_bot_processes()


def test_huge_answer_is_malformed_oversized() -> None:
    # Building and sending 50 MB takes the bot longer than a fast move limit: give it 5 s so the
    # answer is judged, not timed out.
    roomy = TimeControl(move_time_ms=5000, grace_ms=50, startup_time_ms=10_000)
    played = play([python_bot_command("huge"), builtin_bot_command(1)], time_control=roomy)
    failures = check_forfeits(played, F.FAILURE_KIND_MALFORMED,
                              reason=r"^sent an oversized message .*\(52428\d+ vs\. 1048576\)")
    # the stream is dead after an oversized message: the bot is restarted for game 2, where the
    # new process fails on its 3rd turn (play 6 from seat 1)
    assert [(f.deal, f.play_number) for f in failures] == [(0, 5), (0, 6)]
    assert played.starts() == 2
    assert_no_bot_processes()


def test_flood_is_a_protocol_forfeit() -> None:
    # The bot answers its 3rd turn (turn 5) 101 times: the first answer is its move, the other 100
    # are unrequested moves, a PROTOCOL failure however the referee notices them (waiting when the
    # next turn is due, a flood of the queue, or a second answer to turn 5).
    bot = misbehaves(move(0, times=101), after=3, name="scripted-flood")
    played = play_inprocess(bot, opponent(), games=2)
    failures = check_forfeits(
        played, F.FAILURE_KIND_PROTOCOL, received=True,
        reason=r"^(flooded the stream|sent a message that was not asked for|sent a second answer to turn \d+$)")
    assert "turn_id: 5" in failures[0].received
    assert_no_bot_processes()


def test_second_answer_to_an_answered_turn_is_a_protocol_failure() -> None:
    # Turn 1 is answered, then, on its 2nd turn, the bot first sends that answer again, which the
    # referee reads only after it has sent turn 3. It is an unrequested move (PROTOCOL), not an
    # answer to turn 3 with a wrong id (MALFORMED): otherwise the kind would depend on when the
    # copy is read, and the flood test above would be flaky (the referee at 35cf0df did exactly that).
    bot = ScriptedBot(otherwise=PLAYS_WELL).expect("turn", move(0)).expect("turn", resend(0), move(0))
    played = play_inprocess(bot, opponent())
    (game,) = played.report.games
    (failure,) = game.result.failures
    assert failure.seat == 0 and failure.play_number == 3 and "turn_id: 1" in failure.received
    assert F.Name(failure.kind) == "FAILURE_KIND_PROTOCOL", failure.reason
    assert failure.reason == "sent a second answer to turn 1"
    bot.assert_done()
    assert_no_bot_processes()


def replays_from_an_earlier_game(back: int) -> tuple[ScriptedBot, list[int]]:
    """A bot that plays the first legal move, and on its first turn of game ``1 + back`` first
    sends its final answer of game 1 again; with how many moves it had sent as each game began."""
    sent_before_game: list[int] = []
    bot = ScriptedBot(otherwise=PLAYS_WELL)
    bot.expect("game_start", call(lambda x: sent_before_game.append(len(x.bot.moves_sent()))), times=1 + back)
    bot.expect("turn", resend(lambda b: sent_before_game[1] - 1), move(0))
    return bot, sent_before_game


@pytest.mark.parametrize("back,kind,reason", [
    (1, "FAILURE_KIND_PROTOCOL", "sent a second answer to turn {turn}"),
    (2, "FAILURE_KIND_MALFORMED", "answered turn {turn}, expected"),
])
def test_an_answer_repeated_from_an_earlier_game(back: int, kind: str, reason: str) -> None:
    # One stream serves every game. The referee remembers the answered turns of this game and the
    # last one (its memory must not grow with a tournament), so a copy of the last game's final
    # answer is a second answer, and one from two games back an answer to the wrong turn.
    bot, sent_before_game = replays_from_an_earlier_game(back)
    played = play_inprocess(bot, opponent(), games=1 + back)
    assert bot.handshakes == 1, "one stream for the whole match"
    games = played.report.games
    assert all(not g.result.failures for g in games[:-1])
    (failure,) = games[-1].result.failures
    replayed = bot.moves_sent()[sent_before_game[1] - 1]
    assert bot.moves_sent().count(replayed) == 2, "game 1's final answer, sent again"
    assert f"turn_id: {replayed.turn_id}" in failure.received
    assert F.Name(failure.kind) == kind, failure.reason
    assert failure.reason.startswith(reason.format(turn=replayed.turn_id)), failure.reason
    bot.assert_done()
    assert_no_bot_processes()


def test_exit_between_games_is_restarted_without_a_failure(tmp_path: Path) -> None:
    played = play([python_bot_command("exit-between"), builtin_bot_command(1)], logs_dir=tmp_path)
    report = played.report
    assert len(report.games) == 2
    for game in report.games:
        assert game.result.termination == NORMAL, (game.game_number, game.result.reason, list(game.result.failures))
        assert list(game.result.failures) == []
        assert game.result.reason in ("target_reached", "condition_met", "max_deals")
    assert report.logs_dir == tmp_path / report.match_id, "bot logs in a folder per match under logs_dir"
    log = (report.logs_dir / "bot0.log").read_text()
    assert log.count("--- starting ") == 2, log
    assert played.starts(1) == 1
    assert report.bot_names == ["scripted-exit-between", "builtin-random"]
    assert_no_bot_processes()


# --- the random-move policy ----------------------------------------------------------------------

def test_random_move_policy_substitutes_until_the_strike_limit(tmp_path: Path) -> None:
    # in-process: the bot answers every turn with an illegal move (the scripted bot's mode)
    bot = misbehaves(BAD_ANSWERS["illegal"], after=1, name="scripted-illegal")
    # every move asked (auto_forced off): the play numbers below count the bot's turns
    played = play_inprocess(bot, opponent(), policy=FailurePolicy.RANDOM_MOVE, max_strikes=2, records_dir=tmp_path,
                            auto_forced=False)
    (game,) = played.report.games
    r = game.result
    assert r.termination == FORFEIT and r.reason == "forfeit"
    assert [(f.seat, f.kind, f.forfeit) for f in r.failures] == [(0, F.FAILURE_KIND_ILLEGAL_MOVE, False)] * 2 + [
        (0, F.FAILURE_KIND_ILLEGAL_MOVE, True)], "two strikes get random moves, the third forfeits"
    assert [f.play_number for f in r.failures] == [1, 3, 5], "the bot sits first and fails every turn"
    assert list(r.ranks) == [2, 1] and r.winner_side == 1
    plays = [e.play for e in played.events if e.WhichOneof("event") == "play"]
    assert [(p.seat, p.play_number, p.substituted) for p in plays] == [
        (0, 1, True), (1, 2, False), (0, 3, True), (1, 4, False)]
    streamed = [e.failure for e in played.events if e.WhichOneof("event") == "failure"]
    assert streamed == list(r.failures), "each failure is streamed as it happens"
    # the record has the substituted plays among the moves, and the strikes as non-forfeit failures
    path = tmp_path / f"{game.game_id}.json"
    record = json.loads(path.read_text())
    assert record["engine"]["deals"][0]["moves"] == [p.move for p in plays]
    assert [f["forfeit"] for f in record["failures"]] == [False, False, True]
    assert record["failure_policy"] == "random_move" and record["max_strikes"] == 2
    assert [t[0] for t in record["timings_us"]] == [0, 1, 0, 1]
    replay = subprocess.run([sys.executable, "-m", "referee.cli", "replay", str(path)],
                            cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert replay.returncode == 0, replay.stderr
    assert "ended early: forfeit" in replay.stdout
    assert_no_bot_processes()


# --- the clock: move time, grace, bank, increment ----------------------------------------------

def slow_bot(clock: ManualClock, take_s: float, slow_turns: int | None = None) -> ScriptedBot:
    """A bot that takes ``take_s`` on the referee's ManualClock on each of its first
    ``slow_turns`` turns (None: every turn; it advances the clock, nothing really waits) and
    plays the first legal move."""
    return ScriptedBot(otherwise=PLAYS_WELL).expect("turn", advance(clock, take_s), move(0), times=slow_turns)


def time_on_turns(bot: ScriptedBot) -> list[tuple[int, int]]:
    """(move_time_ms, bank_ms) of each Turn the bot was sent."""
    return [(turn.move_time_ms, turn.bank_ms) for turn in bot.turns()]


BANK = TimeControl(move_time_ms=100, grace_ms=50, bank_initial_ms=1000, startup_time_ms=10_000)


def play_on_manual_clock(take_s: float, control: TimeControl, *, slow_turns: int | None = None,
                         **spec_args) -> tuple[Played, ScriptedBot]:
    """A match of one game between a slow bot (seat 0, moves first) and the built-in bot, timed on
    a ManualClock: the built-in bot takes no time on it, the slow bot what it is told."""
    clock = ManualClock()
    bot = slow_bot(clock, take_s, slow_turns)
    return play_inprocess(bot, opponent(), time_control=control, clock=clock, **spec_args), bot


def slow_plays(played: Played, seat: int = 0) -> list[referee_pb2.PlayEvent]:
    return [e.play for e in played.events if e.WhichOneof("event") == "play" and e.play.seat == seat]


def test_time_bank_covers_slow_moves() -> None:
    # 4 moves of 250 ms: 150 ms over the 100 ms move time each, out of the 1000 ms bank
    played, bot = play_on_manual_clock(0.25, BANK, slow_turns=4, auto_forced=False)  # every move asked
    (game,) = played.report.games
    assert game.result.termination == NORMAL, list(game.result.failures)
    assert list(game.result.failures) == []
    assert [p.elapsed_us for p in slow_plays(played)][:5] == [250_000] * 4 + [0]
    assert [p.elapsed_us for p in slow_plays(played, 1)] == [0] * len(slow_plays(played, 1)), "the opponent took no time"
    # bot.proto, Turn: move_time_ms is the move time, bank_ms the bank left; the bot may take
    # their sum. Each slow move takes what it used beyond the move time out of the bank; fast
    # moves neither use nor add to it.
    assert {move_time for move_time, _ in time_on_turns(bot)} == {100}
    banks = [bank for _, bank in time_on_turns(bot)]
    assert banks == [1000, 850, 700, 550] + [400] * (len(banks) - 4)
    assert_no_bot_processes()


def test_time_bank_runs_out() -> None:
    # always 250 ms, 150 over: the bank goes 1000, 850, ..., 100; the 7th move is 150 over with
    # 100 left, within the 50 ms grace, and empties the bank; the 8th (play 15) is 150 over an
    # empty bank: a timeout
    played, bot = play_on_manual_clock(0.25, BANK, auto_forced=False)  # every move asked: play 15 is its 8th
    (game,) = played.report.games
    r = game.result
    assert r.termination == FORFEIT and list(r.ranks) == [2, 1] and r.winner_side == 1
    (failure,) = r.failures
    assert (failure.seat, failure.kind, failure.forfeit, failure.play_number) == (0, F.FAILURE_KIND_TIMEOUT, True, 15)
    assert [bank for _, bank in time_on_turns(bot)] == [1000, 850, 700, 550, 400, 250, 100, 0]
    assert failure.reason == "answered after 250 ms, limit 100 ms"
    assert_no_bot_processes()


@pytest.mark.parametrize("take_ms, timed_out", [(100, False), (150, False), (151, True)],
                         ids=["move-time", "within-grace", "past-grace"])
def test_grace_is_slack_for_transport_not_time_to_think(take_ms: int, timed_out: bool) -> None:
    # No bank: an answer within move time + grace counts as in time (docs/protocol.md, "Time
    # limits"); one millisecond more is a timeout, and the reason names the move time alone.
    control = TimeControl(move_time_ms=100, grace_ms=50, startup_time_ms=10_000)
    played, bot = play_on_manual_clock(take_ms / 1000, control, slow_turns=1)
    (game,) = played.report.games
    failures = [(f.seat, F.Name(f.kind), f.reason, f.play_number) for f in game.result.failures]
    if timed_out:
        assert failures == [(0, "FAILURE_KIND_TIMEOUT", f"answered after {take_ms} ms, limit 100 ms", 1)]
    else:
        assert failures == [] and game.result.termination == NORMAL
        assert {bank for _, bank in time_on_turns(bot)} == {0}, "grace never adds to a bank"
    assert_no_bot_processes()


def test_bank_increment_is_added_after_every_move_in_time() -> None:
    # 180 ms moves against 100 ms + an increment of 50: each move costs 80 ms of the bank and
    # earns 50, so the bank falls by 30 a move; fast moves (from the 5th) only earn the increment.
    control = TimeControl(move_time_ms=100, grace_ms=50, bank_initial_ms=200, bank_increment_ms=50,
                          startup_time_ms=10_000)
    played, bot = play_on_manual_clock(0.18, control, slow_turns=4)
    (game,) = played.report.games
    assert list(game.result.failures) == [] and game.result.termination == NORMAL
    banks = [bank for _, bank in time_on_turns(bot)]
    assert banks[:6] == [200, 170, 140, 110, 80, 130]
    assert banks == banks[:5] + [80 + 50 * k for k in range(1, len(banks) - 4)]
    assert_no_bot_processes()


def test_an_answer_late_by_the_clock_gets_a_random_move_under_that_policy() -> None:
    # 600 ms against 300: a strike (the answer itself is not played), a random move for it, and
    # the bot stays in play: its later, fast answers are its moves.
    control = TimeControl(move_time_ms=300, grace_ms=50, startup_time_ms=10_000)
    played, _ = play_on_manual_clock(0.6, control, slow_turns=1, policy=FailurePolicy.RANDOM_MOVE)
    (game,) = played.report.games
    assert [(f.seat, f.kind, f.play_number, f.forfeit, f.reason) for f in game.result.failures] == [
        (0, F.FAILURE_KIND_TIMEOUT, 1, False, "answered after 600 ms, limit 300 ms")]
    assert game.result.termination == NORMAL
    plays = slow_plays(played)
    assert [(p.play_number, p.substituted) for p in plays][:3] == [(1, True), (3, False), (5, False)]
    assert_no_bot_processes()


def test_random_move_policy_after_a_timeout() -> None:
    # The bot's first answer comes only after the referee timed the turn out: a strike, a random
    # move for it, and the late answer is dropped when it arrives. It stays in play for the rest
    # of the game (a timed-out bot stays in play for the rest of the game under random_move and
    # is restarted before the next), so its later answers are its moves; it is restarted (a new
    # stream and Handshake) before game 2, which it plays cleanly.
    # The bot does not answer the match's first turn until the referee has moved on: it sends
    # that answer (now late) when its next turn arrives, then answers the new turn. No real wait
    # decides anything: the late answer is sent only after the referee gave up on it.
    bot = ScriptedBot(otherwise=PLAYS_WELL).expect("turn", hold()).expect("turn", release(), move(0))
    played = play_inprocess(bot, opponent(), games=2, time_control=FAST_TIME, policy=FailurePolicy.RANDOM_MOVE)
    first, second = played.report.games
    assert [(f.seat, f.kind, f.play_number, f.forfeit, f.reason) for f in first.result.failures] == [
        (0, F.FAILURE_KIND_TIMEOUT, 1, False, "no answer within 1050 ms")]
    assert first.result.termination == NORMAL, list(first.result.failures)
    plays = [e.play for e in played.events if e.WhichOneof("event") == "play" and e.play.game_id == first.game_id]
    assert [(p.play_number, p.substituted) for p in plays if p.seat == 0][:3] == [(1, True), (3, False), (5, False)]
    assert not any(p.substituted for p in plays[1:])
    assert second.result.termination == NORMAL and list(second.result.failures) == []
    assert bot.handshakes == 2, "restarted (reconnected) before game 2"
    bot.assert_done()
    assert_no_bot_processes()


# --- game records --------------------------------------------------------------------------------

def test_records_are_written_and_replay(tmp_path: Path) -> None:
    played = play([python_bot_command("normal"), builtin_bot_command(2)], records_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{g.game_id}.json" for g in played.report.games)
    for game in played.report.games:
        path = tmp_path / f"{game.game_id}.json"
        record = json.loads(path.read_text())
        assert RECORD_KEYS <= record.keys(), RECORD_KEYS - record.keys()
        assert record["format"] == "royal-casino-game" and record["version"] == 1
        assert record["game_id"] == game.game_id
        assert [s["bot"] for s in record["seats"]] == game.seat_bots
        names = ["scripted-normal", "builtin-random"]
        assert [s["name"] for s in record["seats"]] == [names[b] for b in game.seat_bots]
        assert record["engine"]["format"] == "royal-casino-record"
        assert record["failures"] == []
        moves = sum(len(d["moves"]) for d in record["engine"]["deals"])
        assert len(record["timings_us"]) == moves
        assert record["result"]["termination"] == "TERMINATION_NORMAL"
        assert record["result"]["scores"] == list(game.result.scores)
        assert record["result"]["ranks"] == list(game.result.ranks)
        assert record["engine"]["result"]["scores"] == list(game.result.scores)
        done = subprocess.run([sys.executable, "-m", "referee.cli", "replay", str(path)], cwd=ROOT,
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        assert "record checked" in done.stdout
    assert_no_bot_processes()
