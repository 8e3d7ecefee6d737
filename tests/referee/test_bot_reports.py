"""A bot's own word on its answers (protocol 1.2, MoveChoice.error and .note): the SDK reports the
exception behind its fallback, the referee records errors and notes per play (cleaned and
capped, never in another bot's Turn), `referee check` is not clean with a reported error and names
it, and a check whose own opponent cannot start says it could not run. Real bot processes over
real gRPC, in the real sandbox."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, assert_no_bot_processes
from tests.support import run_referee

CHECK_TIMEOUT_S = 300
CRASHING = '''from casino_bot import CasinoBot, legal_moves, run


class Broken(CasinoBot):
    name = "broken"

    def choose(self, turn):
        moves = legal_moves(turn)
        return moves[0].cards_taken  # no such field: an AttributeError on every move


if __name__ == "__main__":
    run(Broken())
'''
NOTING = '''from casino_bot import CasinoBot, run, with_note


class Noting(CasinoBot):
    name = "noting"

    def choose(self, turn):
        return with_note(0, f"\\x1b[31mplay {turn.turn_id}\\x1b[0m\\n" + "x" * 5000)


if __name__ == "__main__":
    run(Noting())
'''
HUGE_NOTE = '''import asyncio, os
import grpc
from casino.v1 import bot_pb2, bot_pb2_grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc


class Huge(bot_pb2_grpc.BotServiceServicer):
    async def Play(self, requests, context):
        async for request in requests:
            kind = request.WhichOneof("event")
            if kind == "handshake":
                yield bot_pb2.PlayResponse(hello=bot_pb2.Hello(name="huge", version="1", protocol_version="1.2"))
            elif kind == "turn":  # a 10 MB note, past what the referee reads of an answer
                yield bot_pb2.PlayResponse(move=bot_pb2.MoveChoice(turn_id=request.turn.turn_id, index=0,
                                                                  note="n" * (10 << 20)))


async def main():
    server = grpc.aio.server(options=[("grpc.max_send_message_length", 32 << 20)])
    bot_pb2_grpc.add_BotServiceServicer_to_server(Huge(), server)
    checker = health.aio.HealthServicer()
    await checker.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    server.add_insecure_port(os.environ["CASINO_BOT_ADDRESS"])
    await server.start()
    await server.wait_for_termination()

asyncio.run(main())
'''


def package(folder: Path, source: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "my_bot.py").write_text(source, encoding="utf-8")
    (folder / "bot.toml").write_text('runtime = "python"\nrun = "python my_bot.py"\n', encoding="utf-8")
    return folder


@pytest.fixture
def caches(tmp_path: Path) -> dict[str, str]:
    return {"ARENA_ARCHIVE_CACHE": str(tmp_path / "archives"), "CASINO_BUILD_CACHE": str(tmp_path / "builds")}


def records_of(folder: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]


def test_a_bot_whose_choose_raises_is_not_clean_and_the_check_names_the_error(tmp_path: Path,
                                                                             caches: dict[str, str]) -> None:
    """The new user's bot: its choose() raised AttributeError on every move, the SDK played the
    first legal move instead, and the check said "clean". Now it says what, and where."""
    bot = package(tmp_path / "broken", CRASHING)
    verdict = tmp_path / "verdict.json"
    done = run_referee("check", str(bot), "--games", "1", "--verdict", str(verdict), timeout=CHECK_TIMEOUT_S,
                       env=caches)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr
    said = "bot error: AttributeError: 'Move' object has no attribute 'cards_taken' (choose, my_bot.py:9)"
    assert "NOT CLEAN: " in done.stdout and f" x {said}" in done.stdout, done.stdout[-2000:]
    assert "bot error at play 1: AttributeError" in done.stdout
    data = json.loads(verdict.read_text())
    assert data["clean"] is False and data["problems"][0]["problem"] == said and data["could_not_run"] is None
    assert_no_bot_processes()


def test_errors_and_notes_reach_the_record_cleaned_and_capped_and_no_other_bots_turn(tmp_path: Path,
                                                                                   caches: dict[str, str]) -> None:
    noting, broken = package(tmp_path / "noting", NOTING), package(tmp_path / "broken", CRASHING)
    done = run_referee("match", "--bot", str(noting), "--bot", str(broken), "--games", "2", "--records",
                       str(tmp_path / "rec"), "--move-time", "2000", timeout=CHECK_TIMEOUT_S, env=caches)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    for record in records_of(tmp_path / "rec"):
        reports = record["bot_reports"]
        notes = [r for r in reports if "note" in r]
        errors = [r for r in reports if "error" in r]
        assert notes and errors
        hello = {s["seat"]: s["hello_name"] for s in record["seats"]}
        assert {hello[r["seat"]] for r in notes} == {"noting"} and {hello[r["seat"]] for r in errors} == {"broken"}
        for r in notes:
            assert r["note"].startswith("play ") and "\x1b" not in r["note"] and "\n" not in r["note"]
            assert len(r["note"]) <= 1000
        assert all(r["error"].startswith("AttributeError: ") for r in errors)
        # the plays the bots see (each Turn's public plays) come from the record's moves: no note in them
        assert "note" not in json.dumps(record["engine"])


def test_an_answer_too_large_for_its_note_is_a_failure_not_a_record_of_10_mb(tmp_path: Path) -> None:
    huge = tmp_path / "huge.py"
    huge.write_text(HUGE_NOTE, encoding="utf-8")
    done = run_referee("match", "--bot", f"{sys.executable} {huge}", "--bot",
                       f"{sys.executable} -m referee.bots.builtin --seed 1", "--games", "1", "--records",
                       str(tmp_path / "rec"), "--move-time", "2000", timeout=CHECK_TIMEOUT_S, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    (record,) = records_of(tmp_path / "rec")
    assert record["failures"] and "note" not in json.dumps(record.get("bot_reports", []))
    assert sum(p.stat().st_size for p in (tmp_path / "rec").iterdir()) < 1 << 20


def test_a_check_whose_own_opponent_cannot_start_says_it_could_not_run(tmp_path: Path,
                                                                      caches: dict[str, str]) -> None:
    """The built-in opponent runs in the folder the check is started in: a folder its uid may not
    read (0700) stops it. The check cannot judge the bot: one line, exit 2, never "clean"."""
    if os.geteuid() != 0:
        pytest.skip("needs root: bots then run as uids of their own, which a 0700 folder keeps out")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    verdict = tmp_path / "verdict.json"
    done = run_referee("check", str(ROOT / "sample_bots" / "random"), "--games", "1", "--verdict", str(verdict),
                       timeout=CHECK_TIMEOUT_S, env=caches, cwd=private)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(
        "referee: error: the check could not run: its built-in opponent could not be started: "), done.stderr
    assert "clean" not in done.stdout.splitlines()[-1]
    assert json.loads(verdict.read_text())["could_not_run"].startswith("the check could not run")
