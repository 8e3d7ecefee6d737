"""In-process bots (``inprocess:PATH.py[:CLASS]``, referee/bots/inprocess.py):

* the same games as over gRPC: deterministic bots (greedy, seeded random, one whose ``choose``
  raises) give records equal play by play, failures and the bots' own error reports included,
  against real bot processes with the same seeds;
* time: a call that sleeps past its move time is a timeout forfeit judged when it returns; a call
  that never returns meets the hard cap (a threaded bot's thread is abandoned; an unthreaded one in
  the main thread is interrupted by SIGALRM), and the bot is replaced before its next game;
* answers: garbage from ``choose`` is the SDK's fallback with the error, as over gRPC; an illegal
  notation is the referee's malformed failure; a file with no bot class fails to start;
* refusals: wherever the caller does not vouch for the code (the Referee service, a ladder's
  ``bots add``).
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path
from typing import Any

import grpc
import pytest

from casino.v1 import game_pb2, referee_pb2, referee_pb2_grpc
from referee.bots.endpoint import INPROCESS_REFUSED, BotEndpoint
from referee.bots.inprocess import load_bot_class
from referee.bots.launcher import LOCAL_LAUNCHER
from referee.clock import TimeControl
from referee.errors import EndpointError
from referee.match.run import run_match
from referee.match.spec import FailurePolicy, MatchSpec
from referee.service.settings import ServiceSettings
from tests.conftest import ROOT
from tests.service_support import with_server

F = game_pb2.FailureKind
GREEDY = ROOT / "sample_bots" / "greedy" / "greedy_bot.py"
RANDOM = ROOT / "sample_bots" / "random" / "random_bot.py"
# records differ only in where each bot ran and how long its moves took
WHERE_AND_HOW_LONG = {"seats", "timings_us", "cpu_us"}

RAISES_ON_THIRD = '''
from casino_bot import CasinoBot, run

class Clumsy(CasinoBot):
    name = "clumsy"
    threaded = False
    turns = 0

    def on_game_start(self, start):
        self.turns = 0

    def choose(self, turn):
        self.turns += 1
        if self.turns == 3:
            raise RuntimeError("a bug on the third turn")
        return len(turn.legal_moves) - 1

if __name__ == "__main__":
    run(Clumsy())
'''


def bot_file(folder: Path, name: str, body: str) -> Path:
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def inprocess(path: Path, cls: str = "", **env: str) -> BotEndpoint:
    return BotEndpoint.parse(f"inprocess:{path}{':' + cls if cls else ''}", env=env, trusted=True)


def command(path: Path, **env: str) -> BotEndpoint:
    return BotEndpoint.parse(f"{sys.executable} {path}", env=env)


def play(bots: list[BotEndpoint], games: int = 1, control: TimeControl | None = None,
         policy: FailurePolicy = FailurePolicy.FORFEIT) -> list[dict[str, Any]]:
    spec = MatchSpec(bots=bots, games=games, seed=11, match_id="same", time_control=control or TimeControl(),
                     policy=policy)
    return [game.record for game in asyncio.run(run_match(spec, launcher=LOCAL_LAUNCHER)).games]


def without_where_and_how_long(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in WHERE_AND_HOW_LONG}


@pytest.mark.parametrize("first, second", [(GREEDY, RANDOM), ("clumsy", GREEDY)], ids=["greedy-random", "raises"])
def test_the_same_games_as_over_grpc(tmp_path: Path, first: Path | str, second: Path) -> None:
    first = bot_file(tmp_path, "clumsy", RAISES_ON_THIRD) if first == "clumsy" else first
    seeds = {"CASINO_BOT_SEED": "5"}
    over_grpc = play([command(first, **seeds), command(second, **seeds)], games=2)
    in_process = play([inprocess(first, **seeds), inprocess(second, **seeds)], games=2)
    assert [without_where_and_how_long(r) for r in in_process] == [without_where_and_how_long(r) for r in over_grpc]
    assert [s["bot"] for s in in_process[0]["seats"]] == [s["bot"] for s in over_grpc[0]["seats"]]
    assert all(len(r["cpu_us"]) == len(r["timings_us"]) for r in in_process)  # each move's thread CPU time
    if first.name == "clumsy.py":  # the SDK's fallback and the error it reports, on both roads
        assert any("RuntimeError: a bug on the third turn (choose, clumsy.py:" in report.get("error", "")
                   for r in in_process for report in r.get("bot_reports", []))


def test_a_seeded_random_bot_plays_as_its_seed_says(tmp_path: Path) -> None:
    seeded = play([inprocess(RANDOM, CASINO_BOT_SEED="5"), inprocess(GREEDY)])
    other = play([inprocess(RANDOM, CASINO_BOT_SEED="6"), inprocess(GREEDY)])
    again = play([inprocess(RANDOM, CASINO_BOT_SEED="5"), inprocess(GREEDY)])
    assert seeded[0]["engine"] == again[0]["engine"] and seeded[0]["engine"] != other[0]["engine"]


SLOW = '''
import time
from casino_bot import CasinoBot

class Slow(CasinoBot):
    threaded = {threaded}
    stop = False

    def choose(self, turn):
        if self.turns_seen():
            while not type(self).stop:  # never returns (until the test lets it go)
                time.sleep({nap})
        return 0

    def turns_seen(self):
        self.seen = getattr(self, "seen", 0) + 1
        return self.seen == 2
'''


def failures_of(record: dict[str, Any]) -> list[dict[str, Any]]:
    return record["failures"]


def test_a_call_over_its_time_is_a_forfeit_judged_when_it_returns(tmp_path: Path) -> None:
    slow = bot_file(tmp_path, "sleepy", '''
        import time
        from casino_bot import CasinoBot

        class Sleepy(CasinoBot):
            threaded = False

            def choose(self, turn):
                time.sleep(0.4)
                return 0
    ''')
    [record] = play([inprocess(slow), inprocess(GREEDY)], control=TimeControl(move_time_ms=100, grace_ms=50))
    [failure] = failures_of(record)
    assert failure["kind"] == "FAILURE_KIND_TIMEOUT" and failure["forfeit"] and failure["seat"] == 0
    assert "judged when it returned" in failure["reason"] and failure["reason"].startswith("answered after ")


@pytest.mark.parametrize("threaded, how", [(True, "left running in its thread"), (False, "interrupted")])
def test_a_call_that_never_returns_meets_the_hard_cap(tmp_path: Path, threaded: bool, how: str) -> None:
    path = bot_file(tmp_path, f"stuck_{threaded}", SLOW.format(threaded=threaded, nap=0.01))
    endpoint = inprocess(path)
    try:
        records = play([endpoint, inprocess(GREEDY)], games=2,
                       control=TimeControl(move_time_ms=100, grace_ms=0))
    finally:
        load_bot_class(endpoint).stop = True  # the abandoned thread, if any, ends
    first = failures_of(records[0])
    assert [(f["kind"], f["seat"], f["forfeit"]) for f in first] == [("FAILURE_KIND_TIMEOUT", 0, True)]
    assert "hard cap of 1.2 s" in first[0]["reason"] and how in first[0]["reason"]
    # the next game has a new object, which is stuck on its second turn again, the same way
    assert [f["kind"] for f in failures_of(records[1])] == ["FAILURE_KIND_TIMEOUT"]


def test_garbage_is_the_sdk_fallback_and_an_illegal_notation_is_malformed(tmp_path: Path) -> None:
    garbage = bot_file(tmp_path, "garbage", '''
        from casino_bot import CasinoBot

        class Garbage(CasinoBot):
            threaded = False

            def choose(self, turn):
                return object()
    ''')
    illegal = bot_file(tmp_path, "illegal", '''
        from casino_bot import CasinoBot

        class Illegal(CasinoBot):
            threaded = False

            def choose(self, turn):
                return "not a move"
    ''')
    [record] = play([inprocess(garbage), inprocess(GREEDY)])
    assert failures_of(record) == []
    errors = [r["error"] for r in record["bot_reports"] if "error" in r]
    assert errors and all(e.startswith("TypeError: choose returned object; expected int, str or Move") for e in errors)
    [record] = play([inprocess(illegal), inprocess(GREEDY)])
    assert [(f["kind"], f["forfeit"]) for f in failures_of(record)] == [("FAILURE_KIND_MALFORMED", True)]


def test_a_file_without_one_bot_class_fails_to_start(tmp_path: Path) -> None:
    two = bot_file(tmp_path, "two", '''
        from casino_bot import CasinoBot

        class A(CasinoBot):
            pass

        class B(CasinoBot):
            pass
    ''')
    [record] = play([inprocess(two), inprocess(GREEDY)])
    [failure] = failures_of(record)
    assert failure["kind"] == "FAILURE_KIND_STARTUP" and "2 CasinoBot subclasses (A, B)" in failure["reason"]
    [record] = play([inprocess(two, "B"), inprocess(GREEDY)])  # B chosen by name; it has no choose: fallbacks
    assert failures_of(record) == [] and record["bot_reports"][0]["error"].startswith("NotImplementedError")


def test_refused_unless_the_caller_vouches_for_the_code() -> None:
    with pytest.raises(EndpointError) as refused:
        BotEndpoint.parse(f"inprocess:{GREEDY}")
    assert INPROCESS_REFUSED in str(refused.value) and "\n" not in str(refused.value)
    assert BotEndpoint.parse(f"inprocess:{GREEDY}:GreedyBot", trusted=True).inprocess == str(GREEDY)


def test_the_referee_service_refuses_an_in_process_bot(tmp_path: Path) -> None:
    async def body(channel: grpc.aio.Channel) -> grpc.aio.AioRpcError:
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        request = referee_pb2.RunMatchRequest(bots=[f"inprocess:{GREEDY}", f"inprocess:{RANDOM}"], games=1)
        with pytest.raises(grpc.aio.AioRpcError) as error:
            async for _ in stub.RunMatch(request):
                pass
        return error.value

    error = asyncio.run(with_server(tmp_path, body, ServiceSettings(allow_commands=True, token="t" * 32)))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and INPROCESS_REFUSED in (error.details() or "")
