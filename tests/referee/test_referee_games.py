"""Whole games over real gRPC between real bot processes, and the Referee service end to end.

* Python bots (the built-in random bot and the scripted bot in ``normal`` mode) for 2, 3 and 4
  players, 4 in partnerships and as individuals: every game ends normally, ranks agree with
  the scores.
* A game from an explicit deck with deterministic bots gives a known result: the one the rules
  engine gives when it plays the same two strategies in process, every time.
* Python against the sample Node.js bot (skipped when Node.js or the bot is not there).
* ``RefereeService``: RunMatch streams the match in order, GetGameRecord returns its record,
  command bots are refused unless allowed, health checking and reflection answer.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import signal
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from casino.v1 import game_pb2, referee_pb2, referee_pb2_grpc
from referee.bots.endpoint import BotEndpoint
from referee.clock import TimeControl
from referee.match.report import GameReport, MatchReport
from referee.match.run import run_match
from referee.match.spec import MatchSpec
from referee.rules import RuleOptions, apply, legal_moves, new_game, parse_deck
from referee.service.client import referee_channel
from referee.service.settings import ServiceSettings
from tests.service_support import TOKEN
from tests.service_support import with_server as service_with_server
from tests.conftest import (
    package_endpoint,
    ROOMY_TIME,
    ROOT,
    assert_no_bot_processes,
    bot_processes,
    builtin_bot_command,
    python_bot_command,
)
from tests.support import start_referee

NORMAL = game_pb2.TERMINATION_NORMAL
END_REASONS = {"target_reached", "condition_met", "max_deals"}
DECK_FILE = ROOT / "tests" / "data" / "decks" / "seed-11.txt"


def match(bots: list[str | BotEndpoint], options: RuleOptions, *, games: int = 1,
          time_control: TimeControl = ROOMY_TIME, **spec_args) -> MatchReport:
    spec = MatchSpec(bots=[b if isinstance(b, BotEndpoint) else BotEndpoint.parse(b, cwd=str(ROOT)) for b in bots],
                     options=options, games=games,
                     time_control=time_control, **spec_args)
    return asyncio.run(run_match(spec))


def check_normal_game(game: GameReport, options: RuleOptions) -> None:
    """The game was played to its end, and the ranks follow the result: the winner alone first,
    the other sides by score (equal scores, equal ranks), every seat ranked as its side."""
    r = game.result
    assert r.termination == NORMAL, (game.game_number, r.reason, [(f.seat, f.reason) for f in r.failures])
    assert list(r.failures) == [] and r.reason in END_REASONS and r.deals >= 1
    sides = options.sides
    assert len(r.scores) == sides and len(r.ranks) == options.players
    side_rank = {}
    for seat in range(options.players):
        side = options.side_of(seat)
        assert side_rank.setdefault(side, r.ranks[seat]) == r.ranks[seat], "partners share a rank"
    assert sorted(side_rank) == list(range(sides))
    if r.winner_side >= 0:
        assert side_rank[r.winner_side] == 1
        assert sum(1 for rank in side_rank.values() if rank == 1) == 1, "the winner ranks first alone"
        assert r.reason == "condition_met" or r.scores[r.winner_side] == max(r.scores)
    else:
        assert r.reason == "max_deals" or min(side_rank.values()) == 1
    others = [s for s in range(sides) if s != r.winner_side]
    for a in others:
        for b in others:
            if r.scores[a] > r.scores[b]:
                assert side_rank[a] < side_rank[b], (list(r.scores), list(r.ranks))
            elif r.scores[a] == r.scores[b]:
                assert side_rank[a] == side_rank[b], (list(r.scores), list(r.ranks))
    # competition ranking: a rank is 1 + the number of sides ranked strictly better
    for side, rank in side_rank.items():
        assert rank == 1 + sum(1 for other in side_rank.values() if other < rank)
    assert game.record["result"]["ranks"] == list(r.ranks)


@pytest.mark.parametrize(
    "players, partnerships, games",
    [(2, True, 2), (3, True, 1), (4, True, 1), (4, False, 1)],
    ids=["2p", "3p", "4p-partnerships", "4p-individuals"],
)
def test_python_bots_play_whole_games(players: int, partnerships: bool, games: int) -> None:
    options = RuleOptions(players=players, partnerships=partnerships)
    bots = [python_bot_command("normal")] + [builtin_bot_command(seed) for seed in range(1, players)]
    report = match(bots, options, games=games, seed=20 + players)
    assert len(report.games) == games
    assert report.bot_names == ["scripted-normal"] + ["builtin-random"] * (players - 1)
    for game in report.games:
        check_normal_game(game, options)
        assert sorted(game.seat_bots) == list(range(players))
        assert len(game.record["engine"]["deals"]) == game.result.deals
        assert game.record["engine"]["options"]["partnerships"] == partnerships
    tally = report.tally()
    for bot in range(players):
        assert tally.wins[bot] + tally.draws[bot] + tally.losses[bot] == games
        assert tally.forfeits[bot] == 0
    assert_no_bot_processes()


def expected_game(
    options: RuleOptions, seed: int, deck: tuple[int, ...], random_seed: int, auto_forced: bool = True,
) -> tuple[list[list[str]], Any]:
    """The game the two deterministic bots play, computed with the engine in process: seat 0 plays
    the first legal move (scripted ``normal``), seat 1 a uniformly random index from
    ``random.Random(random_seed)`` (the built-in bot), which it draws only when it is asked: with
    ``auto_forced`` the referee plays a seat's only legal move and asks no one."""
    state = new_game(options, seed=seed, decks=[deck])
    rng = random.Random(random_seed)
    moves: list[list[str]] = []
    while not state.is_over:
        legal = legal_moves(state)
        if auto_forced and len(legal) == 1:
            move = legal[0]
        else:
            move = legal[0] if state.to_move == 0 else legal[rng.randrange(len(legal))]
        while len(moves) <= state.deal:
            moves.append([])
        moves[state.deal].append(str(move))
        state = apply(state, move)
    return moves, state.result


@pytest.mark.parametrize("auto_forced", [True, False], ids=["forced-plays-by-the-referee", "every-move-asked"])
def test_explicit_deck_gives_a_known_deterministic_game(auto_forced: bool) -> None:
    options = RuleOptions(players=2)
    deck = parse_deck(DECK_FILE.read_text())
    bots = [python_bot_command("normal"), builtin_bot_command(7)]
    want_moves, want = expected_game(options, 5, deck, 7, auto_forced)
    records = []
    for _ in range(2):
        (game,) = match(bots, options, seed=5, decks=[deck], auto_forced=auto_forced).games
        check_normal_game(game, options)
        engine = game.record["engine"]
        assert engine["explicit_decks"] == 1 and engine["seed"] == 5
        assert engine["deals"][0]["deck"].split() == DECK_FILE.read_text().split(), "the first deal uses the given deck"
        assert [d["moves"] for d in engine["deals"]] == want_moves
        r = game.result
        assert (r.winner_side, list(r.scores), r.reason, r.deals) == (
            -1 if want.winner is None else want.winner, list(want.scores), want.reason.value, want.deals)
        records.append((engine, json_format.MessageToDict(r)))
    assert records[0][0] == records[1][0], "the same record both times"
    results = [{k: v for k, v in result.items() if k != "gameId"} for _, result in records]
    assert results[0] == results[1]
    assert_no_bot_processes()


def test_python_against_node(node_bot: str) -> None:
    options = RuleOptions(players=2)
    roomy = TimeControl(move_time_ms=2000, grace_ms=50, startup_time_ms=20_000)
    report = match([builtin_bot_command(4), package_endpoint(node_bot)], options, games=2, time_control=roomy, seed=8)
    assert report.bot_names[0] == "builtin-random" and report.bot_names[1] == "node-bot"
    assert [g.seat_bots for g in report.games] == [[0, 1], [1, 0]]
    for game in report.games:
        check_normal_game(game, options)
    assert_no_bot_processes()
    assert bot_processes(("bot.js",)) == [], "the Node.js bot was stopped"


# --- the Referee service -------------------------------------------------------------------------

async def with_server(tmp_path: Path, allow_commands: bool, body) -> object:
    """``body`` with a channel to an in-process server that may connect to 127.0.0.1:1 and, with
    ``allow_commands``, runs commands (so it requires a token, which the channel sends)."""
    settings = ServiceSettings(allow_commands=allow_commands, token=TOKEN if allow_commands else None,
                               allow_addresses=frozenset({"127.0.0.1:1"}))
    return await service_with_server(tmp_path, body, settings)


def test_run_match_streams_the_match_and_keeps_the_record(tmp_path: Path) -> None:
    request = referee_pb2.RunMatchRequest(
        bots=[builtin_bot_command(1), f"cmd:{builtin_bot_command(2)}"],
        options=game_pb2.RuleOptions(players=2), games=2, seed=9, time_control=ROOMY_TIME.to_pb(),
    )

    async def body(channel: grpc.aio.Channel):
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        events = [event async for event in stub.RunMatch(request)]
        records = []
        for event in events:
            if event.HasField("game_result"):
                wanted = referee_pb2.GetGameRecordRequest(game_id=event.game_result.game_id)
                records.append((await stub.GetGameRecord(wanted)).record_json)
        # the same request again: a match of its own id (random: clients' matches never share
        # records or logs, unlike ``referee match``, whose ids follow the seed)
        again = [event async for event in stub.RunMatch(request)]
        assert again[0].match_started.match_id != events[0].match_started.match_id
        codes = []
        for game_id in ("no-such-game", "../etc/passwd", ""):
            with pytest.raises(grpc.aio.AioRpcError) as error:
                await stub.GetGameRecord(referee_pb2.GetGameRecordRequest(game_id=game_id))
            codes.append(error.value.code())
        return events, records, codes

    events, records, codes = asyncio.run(with_server(tmp_path, True, body))
    kinds = [e.WhichOneof("event") for e in events]
    # match_started, then per game: game_started, its plays, game_result; then match_result
    assert kinds[0] == "match_started" and kinds[-1] == "match_result"
    assert kinds.count("game_started") == 2 and kinds.count("game_result") == 2 and "failure" not in kinds
    second = kinds.index("game_started", 2)
    games = [events[1:second], events[second:-1]]
    started = events[0].match_started
    assert list(started.bot_names) == ["builtin-random", "builtin-random"]
    tally = events[-1].match_result
    for number, (game_events, record_json) in enumerate(zip(games, records), start=1):
        game_kinds = [e.WhichOneof("event") for e in game_events]
        assert game_kinds[0] == "game_started" and game_kinds[-1] == "game_result"
        assert set(game_kinds[1:-1]) == {"play"}, "only plays between a game's start and its result"
        game_started, result = game_events[0].game_started, game_events[-1].game_result
        assert game_started.game_number == number and game_started.seed == 9 + number - 1
        assert list(game_started.seat_bots) == [[0, 1], [1, 0]][number - 1], "seats rotate unless fixed_seats"
        assert result.game_id == game_started.game_id == f"{started.match_id}-g{number}"
        assert result.termination == NORMAL
        plays = [e.play for e in game_events[1:-1]]
        assert {p.game_id for p in plays} == {result.game_id} and not any(p.substituted for p in plays)
        record = json.loads(record_json)
        assert record["game_id"] == result.game_id and record["match_id"] == started.match_id
        assert record["result"] == json_format.MessageToDict(result, always_print_fields_with_no_presence=True)
        assert [m for d in record["engine"]["deals"] for m in d["moves"]] == [p.move for p in plays]
        assert [[s, us] for s, us in record["timings_us"]] == [[p.seat, p.elapsed_us] for p in plays]
        assert (tmp_path / f"{result.game_id}.json").is_file()
    assert tally.match_id == started.match_id
    assert list(tally.game_ids) == [f"{started.match_id}-g1", f"{started.match_id}-g2"]
    assert len(list(tmp_path.glob("*.json"))) == 4, "both matches' records kept"
    assert [tally.wins[b] + tally.draws[b] + tally.losses[b] for b in range(2)] == [2, 2]
    assert codes == [grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.INVALID_ARGUMENT]
    assert_no_bot_processes()


def test_run_match_four_individuals_fixed_seats(tmp_path: Path) -> None:
    request = referee_pb2.RunMatchRequest(
        bots=[builtin_bot_command(seed) for seed in range(1, 5)],
        options=game_pb2.RuleOptions(players=4, individuals=True), games=1, seed=4,
        time_control=ROOMY_TIME.to_pb(), fixed_seats=True,
    )

    async def body(channel: grpc.aio.Channel):
        return [event async for event in referee_pb2_grpc.RefereeServiceStub(channel).RunMatch(request)]

    events = asyncio.run(with_server(tmp_path, True, body))
    (result,) = [e.game_result for e in events if e.HasField("game_result")]
    assert result.termination == NORMAL and len(result.scores) == 4 and len(result.ranks) == 4, "4 sides"
    record = json.loads((tmp_path / f"{result.game_id}.json").read_text())
    assert record["engine"]["options"]["players"] == 4 and record["engine"]["options"]["partnerships"] is False
    assert_no_bot_processes()


def test_run_match_refuses_commands_unless_allowed(tmp_path: Path) -> None:
    bot_lists = [
        [builtin_bot_command(1), builtin_bot_command(2)],
        ["127.0.0.1:1", f"cmd:{builtin_bot_command(2)}"],
        ["127.0.0.1:1", "no-such-program-here --flag"],  # refused as a command, not looked up
    ]

    async def body(channel: grpc.aio.Channel):
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        errors = []
        for bots in bot_lists:
            request = referee_pb2.RunMatchRequest(bots=bots, options=game_pb2.RuleOptions(players=2))
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                [event async for event in stub.RunMatch(request)]
            errors.append(refused.value)
        return errors

    errors = asyncio.run(with_server(tmp_path, False, body))
    for error in errors:
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, (error.code(), error.details())
        assert "--allow-commands" in error.details(), error.details()
        assert "unknown bot" not in error.details()
    assert_no_bot_processes()


@pytest.mark.parametrize(
    "request_fields, message",
    [
        ({"bots": ["127.0.0.1:1"], "options": game_pb2.RuleOptions(players=2)}, "2 players need 2 bots, got 1"),
        ({"bots": ["127.0.0.1:1"] * 5}, "players must be 2, 3 or 4"),
        ({"bots": ["127.0.0.1:1"] * 2, "games": 10_001}, "games must be 1..10000"),
        ({"bots": ["127.0.0.1:1"] * 2, "decks": [referee_pb2.Deck(cards=["AS"] * 52)]},
         "card AS appears more than once"),
        ({"bots": ["127.0.0.1:1"] * 2, "options": game_pb2.RuleOptions(on_twenty="most_hearts")}, "on_twenty"),
        ({"bots": ["127.0.0.1:70000", "127.0.0.1:1"]}, "port must be 1..65535"),
        ({"bots": ["127.0.0.1:1"] * 2, "time_control": game_pb2.TimeControl(move_time_ms=4_000_000_000)},
         "move_time_ms must be at most 3600000 ms (one hour), not 4000000000"),
        ({"bots": ["127.0.0.1:1"] * 2, "time_control": game_pb2.TimeControl(startup_time_ms=3_600_001)},
         "startup_time_ms must be at most 3600000 ms"),
        ({"bots": ["127.0.0.1:1"] * 2, "seed": 2**64 - 1, "games": 2},
         "seed must be 0 to 18446744073709551614 for 2 game(s)"),
        ({"bots": ["127.0.0.1:1"] * 2, "time_control": game_pb2.TimeControl(cpu_time_ms=100)},
         "a CPU-time limit needs bots the referee starts: bot 1 ('127.0.0.1:1') is an address"),
        ({"bots": ["127.0.0.1:1"] * 2, "time_control": game_pb2.TimeControl(move_time_ms=100, cpu_time_ms=200)},
         "cpu_time_ms (200) must be at most move_time_ms (100)"),
    ],
    ids=["too-few-bots", "five-bots", "too-many-games", "bad-deck", "bad-on-twenty", "bad-port", "move-time-huge",
         "startup-huge", "seed-overflows", "cpu-limit-for-an-address", "cpu-limit-over-move-time"],
)
def test_run_match_rejects_a_bad_request(tmp_path: Path, request_fields: dict, message: str) -> None:
    async def body(channel: grpc.aio.Channel):
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            [event async for event in stub.RunMatch(referee_pb2.RunMatchRequest(**request_fields))]
        return refused.value

    error = asyncio.run(with_server(tmp_path, False, body))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, (error.code(), error.details())
    assert message in error.details(), error.details()


def test_get_game_record_refuses_ids_no_record_can_have(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # a 5000-character id used to reach the file system: "UNKNOWN: Unexpected OSError [Errno 36]"
    # and a traceback in the server's log
    ids = ["a" * 5000, "x" * 129, "\u4e2d" * 100, "g 1", "x" * 128]

    async def body(channel: grpc.aio.Channel):
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        errors = []
        for game_id in ids:
            with pytest.raises(grpc.aio.AioRpcError) as error:
                await stub.GetGameRecord(referee_pb2.GetGameRecordRequest(game_id=game_id))
            errors.append((error.value.code(), error.value.details()))
        return errors

    errors = asyncio.run(with_server(tmp_path, False, body))
    assert [code for code, _ in errors] == [grpc.StatusCode.INVALID_ARGUMENT] * 4 + [grpc.StatusCode.NOT_FOUND]
    assert errors[0][1] == "bad game id: 5000 characters, at most 128" and len(errors[1][1]) < 100
    assert "only letters, digits and '-'" in errors[2][1] and "only letters, digits and '-'" in errors[3][1]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_cancelled_run_match_stops_its_bots(tmp_path: Path) -> None:
    # the client goes away in the middle of a match (one bot hangs on its first turn, with a 20 s
    # limit): the referee stops the match and every bot process it started
    request = referee_pb2.RunMatchRequest(
        bots=[python_bot_command("hang", after=1), builtin_bot_command(1)], options=game_pb2.RuleOptions(players=2),
        time_control=game_pb2.TimeControl(move_time_ms=20_000, startup_time_ms=10_000),
    )

    async def body(channel: grpc.aio.Channel):
        call = referee_pb2_grpc.RefereeServiceStub(channel).RunMatch(request)
        seen = []
        async for event in call:
            seen.append(event.WhichOneof("event"))
            if seen[-1] == "game_started":
                break
        running = len(bot_processes())
        call.cancel()
        for _ in range(200):  # up to 10 s, with the server's event loop running
            if not bot_processes():
                break
            await asyncio.sleep(0.05)
        return seen, running, bot_processes()

    seen, running, left = asyncio.run(with_server(tmp_path, True, body))
    assert seen == ["match_started", "game_started"]
    assert running == 2, "both bots were running when the client cancelled"
    assert left == [], f"bot processes left running after the cancelled match: {left}"


def test_a_match_cancelled_again_while_it_stops_its_bots_still_stops_them(tmp_path: Path) -> None:
    # A server that stops after its client left cancels the match's task a second time, while the
    # match is stopping its bots: the hanging bot's stream takes up to a second to close, and a
    # second cancellation there used to leave the bot process running. Here the task is cancelled
    # every 50 ms until it ends, so some cancellations land in that second whatever the machine's speed.
    spec = MatchSpec(bots=[BotEndpoint.parse(b, cwd=str(ROOT)) for b in
                           (python_bot_command("hang", after=1), builtin_bot_command(1))],
                     options=RuleOptions(players=2), logs_dir=tmp_path,
                     time_control=TimeControl(move_time_ms=20_000, grace_ms=50, startup_time_ms=10_000))

    async def body() -> tuple[int, int, bool]:
        started = asyncio.Event()
        task = asyncio.create_task(run_match(spec, emit=lambda e: e.HasField("game_started") and started.set()))
        await asyncio.wait_for(started.wait(), 60)
        await asyncio.sleep(0.2)  # the hanging bot has its turn
        running = len(bot_processes())
        cancels = 0
        while not task.done():
            task.cancel()
            cancels += 1
            await asyncio.wait([task], timeout=0.05)
        return running, cancels, task.cancelled()

    running, cancels, cancelled = asyncio.run(body())
    assert running == 2, "both bots were running when the match was cancelled"
    assert cancelled, "the match ends cancelled"
    assert cancels >= 2, "the match was cancelled again while it stopped its bots"
    assert_no_bot_processes()


def test_a_client_that_cancels_while_replies_wait_stops_the_match_quietly(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    # A real `referee serve`. The client reads one reply and then nothing (a 1 KiB receive window),
    # so the server's replies wait for the network while games pile up; then it cancels. The match
    # used to go on in the background with its bots (the cancel reached gRPC's write, never the
    # match), and an error it met later was "Task exception was never retrieved" on stderr.
    folder = tmp_path_factory.mktemp("serve")  # short: unix socket paths are limited to 107 bytes
    socket, records = folder / "referee.sock", folder / "records"
    request = referee_pb2.RunMatchRequest(
        bots=[builtin_bot_command(1), builtin_bot_command(2)], options=game_pb2.RuleOptions(players=2),
        games=5000, time_control=ROOMY_TIME.to_pb())
    slow_client = [("grpc.http2.lookahead_bytes", 1024), ("grpc.http2.bdp_probe", 0)]

    def games_recorded() -> int:
        return len(list(records.glob("*.json")))

    async def client() -> tuple[int, list[tuple[int, str]]]:
        async with referee_channel(f"unix:{socket}", token=TOKEN, options=slow_client) as channel:
            async with asyncio.timeout(60):
                await channel.channel_ready()
                call = referee_pb2_grpc.RefereeServiceStub(channel).RunMatch(request)
                assert (await call.read()).HasField("match_started")
                while games_recorded() < 3:  # far more replies than the window holds
                    await asyncio.sleep(0.05)
                running = len(bot_processes())
                call.cancel()
            for _ in range(400):  # up to 20 s
                if not bot_processes():
                    break
                await asyncio.sleep(0.05)
            return running, bot_processes()

    (folder / "token").write_text(TOKEN + "\n")
    with open(folder / "stderr.txt", "w+") as stderr:
        server = start_referee("serve", "--allow-commands", "--token-file", str(folder / "token"),
                               "--listen", f"unix:{socket}", "--records", str(records), stderr=stderr)
        try:
            running, left = asyncio.run(client())
        finally:
            server.send_signal(signal.SIGTERM)
            status = server.wait(timeout=30)
        stderr.seek(0)
        errors = stderr.read()
    assert running == 2, "both bots were playing when the client cancelled"
    assert left == [], f"the match went on after its client cancelled: {left}"
    assert status == 0 and errors == "", errors


def test_health_and_reflection(tmp_path: Path) -> None:
    async def body(channel: grpc.aio.Channel):
        health = health_pb2_grpc.HealthStub(channel)
        statuses = [(await health.Check(health_pb2.HealthCheckRequest(service=name))).status
                    for name in ("", "casino.v1.RefereeService")]
        reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        replies = [r async for r in reflection.ServerReflectionInfo(iter([request]))]
        return statuses, [s.name for r in replies for s in r.list_services_response.service]

    statuses, services = asyncio.run(with_server(tmp_path, False, body))
    assert statuses == [health_pb2.HealthCheckResponse.SERVING] * 2
    assert "casino.v1.RefereeService" in services
    assert "grpc.health.v1.Health" in services
