"""`arena --log-format json`: real `arena run`, `arena worker` and `arena web` processes write one
JSON object per stderr line, and the lines that matter carry the documented keys with the values
the database stored (docs/operations.md, "Logs"). The text form and the usage error are checked too."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from arena.rating.failures import kind_name
from arena.store.store import Store
from referee.logs import FIELDS
from tests.arena.queue_support import WORKER_TIMING, query, run_queued, wait_for, wait_settled
from tests.arena_support import ROOT, arena_argv, arena_env, write_tournament
from tests.conftest import python_bot_command
from tests.support import assert_usage_error, run_arena

RUN_TIMEOUT_S = 120
BASE_KEYS = ["time", "level", "logger", "message"]
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
TEXT_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) ([\w.]+): (.*)$")


def tournament(folder: Path, database: str | None = None, name: str = "logs") -> Path:
    """Two games between a bot that answers an illegal move on its third turn and the built-in random bot."""
    folder.mkdir(parents=True, exist_ok=True)
    top: dict[str, Any] = {"name": name, "players": 2, "games_per_pairing": 2, "seed": 11, "concurrency": 1}
    if database is not None:
        top["database"] = database
    return write_tournament(folder / f"{name}.toml", top, [
        {"name": "illegal", "command": python_bot_command("illegal", after=3)},
        {"name": "random", "command": python_bot_command("normal")},
    ], {"move_ms": 2000, "startup_ms": 10_000})


def json_lines(stderr: str) -> list[dict[str, Any]]:
    """Every stderr line as a JSON object (the test fails on the first line that is not one), each
    checked for the base keys first, in order, and no keys but the documented ones."""
    records = []
    for line in stderr.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            raise AssertionError(f"not a JSON line: {line!r}\n{stderr[-3000:]}") from None
        assert isinstance(record, dict), line
        assert list(record)[:4] == BASE_KEYS, line
        assert TIME.match(record["time"]), line
        assert record["level"] in ("debug", "info", "warning", "error", "critical"), line
        assert set(record) <= {*BASE_KEYS, *FIELDS, "exc_info", "stack_info"}, line
        records.append(record)
    return records


@dataclass(frozen=True)
class Played:
    """The module's `arena -v --log-format json run`: its file, database and stderr as records."""

    file: Path
    database: str
    records: list[dict[str, Any]]


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    folder = tmp_path_factory.mktemp("log-format")
    path = tournament(folder)
    done = run_arena("-v", "--log-format", "json", "run", str(path), timeout=RUN_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return Played(path, f"sqlite:///{folder / 'logs.db'}", json_lines(done.stderr))


def stored_games(database: str, name: str) -> tuple[int, dict[int, Any], dict[int, str]]:
    """(tournament id, its games by number, bot names by position) as the Store has them."""
    store = Store(database, read_only=True)
    try:
        tid = store.tournament_id(name)
        assert tid is not None
        return tid, {g.number: g for g in store.games(tid)}, {b.position: b.name for b in store.bots(tid)}
    finally:
        store.close()


def test_a_run_logs_each_failure_with_the_stored_failure(played: Played) -> None:
    tid, games, names = stored_games(played.database, "logs")
    stored = {(g.result["gameId"], names[g.seat_bots[int(f.get("seat", 0))]], int(f.get("seat", 0)),
               kind_name(f["kind"]), f["reason"])
              for g in games.values() for f in g.result.get("failures", [])}
    assert len(stored) == 2, stored  # the illegal bot fails once in each game
    logged = {(r["game_id"], r["bot"], r["seat"], r["failure_kind"], r["reason"]) for r in played.records
              if r["logger"] == "referee.match.game" and r["level"] == "warning"}
    assert logged == stored
    # the game-end line says why the game ended and who forfeited
    ends = {r["game_id"]: r for r in played.records if r["logger"] == "referee.match.game"
            and r.get("reason") == "forfeit"}
    assert {gid: (r["bot"], r["seat"], r["failure_kind"]) for gid, r in ends.items()} == {
        gid: (bot, seat, kind) for gid, bot, seat, kind, _ in stored}


def test_a_run_logs_each_stored_game_with_its_ids_attempt_and_why_it_ended(played: Played) -> None:
    tid, games, _ = stored_games(played.database, "logs")
    logged = {r["game"]: r for r in played.records if r["logger"] == "arena.play.runner" and "game" in r}
    assert sorted(logged) == sorted(games) == [1, 2]
    for number, record in logged.items():
        game = games[number]
        assert (record["game_id"], record["tournament"], record["attempt"], record["reason"]) == (
            game.result["gameId"], tid, game.attempt, game.result["reason"])
        assert record["message"] == f"game {number} stored (attempt {game.attempt}): {game.result['reason']}"


def test_the_web_app_and_uvicorn_log_json_too(played: Played, tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port free now (the server binds it a moment later)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    with (tmp_path / "web.err").open("w+", encoding="utf-8") as err:
        web = subprocess.Popen(arena_argv("--log-format", "json", "web", "--db", played.database, "--listen",
                                          f"127.0.0.1:{port}"), cwd=ROOT, env=arena_env(), stdout=subprocess.DEVNULL,
                               stderr=err, stdin=subprocess.DEVNULL)
        try:
            def listening() -> bool:  # uvicorn's own line says it is
                assert web.poll() is None, Path(err.name).read_text()
                return f"Uvicorn running on {base}" in Path(err.name).read_text()
            wait_for(listening, "arena web to listen", timeout_s=60, poll_s=0.1)
            with urllib.request.urlopen(base + "/", timeout=10) as answer:
                assert answer.status == 200
            with pytest.raises(urllib.error.HTTPError):
                urllib.request.urlopen(base + "/no-such-page", timeout=10)
            wait_for(lambda: Path(err.name).read_text().count("uvicorn.access") >= 2, "two access lines", 30, 0.05)
        finally:
            web.send_signal(signal.SIGTERM)
            web.wait(timeout=30)
        records = json_lines(Path(err.name).read_text())
    access = [r["message"] for r in records if r["logger"] == "uvicorn.access"]
    assert any(m.endswith('"GET / HTTP/1.1" 200') for m in access), access
    assert any(m.endswith('"GET /no-such-page HTTP/1.1" 404') for m in access), access
    assert any(r["logger"] == "uvicorn.error" and r["message"].startswith("Uvicorn running on") for r in records)


def test_a_worker_logs_its_jobs_with_job_game_tournament_and_attempt(pg_url: str, tmp_path: Path) -> None:
    path = tournament(tmp_path, database=pg_url, name="logs-queue")
    queued = run_queued(path, "--detach")
    assert queued.returncode == 0, queued.stderr
    tid, _, _ = stored_games(pg_url, "logs-queue")
    err = tmp_path / "worker.err"
    with err.open("wb") as out:
        worker = subprocess.Popen(arena_argv("-v", "--log-format", "json", "worker", "--db", pg_url, *WORKER_TIMING),
                                  cwd=ROOT, env=arena_env(), stdout=subprocess.DEVNULL, stderr=out)
    try:
        store = Store(pg_url, read_only=True)
        try:
            counts = wait_settled(store, tid, timeout_s=RUN_TIMEOUT_S)
        finally:
            store.close()
        assert counts["done"] == 2, (counts, err.read_text()[-3000:])
        # the worker logs each stored game just after its transaction: wait for the second line
        wait_for(lambda: err.read_text().count("stored (attempt") >= 2, "the worker's stored lines", 30)
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=30) == 0, err.read_text()[-3000:]
    records = json_lines(err.read_text())
    _, games, _ = stored_games(pg_url, "logs-queue")
    jobs = {number: job for number, job in query(pg_url, "SELECT number, job_id FROM games")}
    stored = {r["game"]: r for r in records if r["logger"] == "arena.play.worker" and "stored" in r["message"]}
    assert sorted(stored) == [1, 2]
    for number, record in stored.items():
        game = games[number]
        assert (record["job_id"], record["game_id"], record["tournament"], record["attempt"], record["reason"]) == (
            jobs[number], game.result["gameId"], tid, game.attempt, game.result["reason"])
    # procrastinate's own line for each finished job carries the job's id and game too
    outcomes = {r["job_id"]: r for r in records if r["logger"].startswith("procrastinate")
                and "ended with status: Success" in r["message"] and "game" in r}
    assert {job: (r["game"], r["tournament"], r["game_id"]) for job, r in outcomes.items()} == {
        jobs[n]: (n, tid, games[n].result["gameId"]) for n in (1, 2)}


def test_the_text_form_is_as_before_and_says_what_the_json_says(tmp_path: Path) -> None:
    # the default: a readable line per record (time, level, logger: message), the messages the
    # JSON lines carry; `bots list` on a new database logs its migration (no bot is started)
    messages = {}
    for log_format in ("text", "json"):
        folder = tmp_path / log_format
        path = tournament(folder)
        done = run_arena("-v", "--log-format", log_format, "bots", "list", "-f", str(path))
        assert done.returncode == 0, done.stderr
        if log_format == "json":
            messages[log_format] = [(r["level"].upper(), r["logger"], r["message"]) for r in json_lines(done.stderr)]
            continue
        records: list[tuple[str, str, str]] = []
        for line in done.stderr.splitlines():  # a message of several lines goes on without a prefix
            if match := TEXT_LINE.match(line):
                records.append(match.groups())  # type: ignore[arg-type]
            else:
                assert records, done.stderr
                records[-1] = (*records[-1][:2], records[-1][2] + "\n" + line)
        messages[log_format] = records
    assert messages["text"] == messages["json"]
    assert any("Running upgrade" in m for _, _, m in messages["text"])
    assert any("\n" in m for _, _, m in messages["json"]), "a message of two lines is one JSON line"


def test_without_v_json_logs_only_errors(tmp_path: Path) -> None:
    # -v chooses the level in either form: a new database's migration logs at info, unseen here
    done = run_arena("--log-format", "json", "bots", "list", "-f", str(tournament(tmp_path)))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "active" in done.stdout


def test_a_bad_log_format_is_a_usage_error() -> None:
    line = assert_usage_error(run_arena("--log-format", "yaml", "games", "x.toml"), "arena")
    assert "--log-format" in line and "'text', 'json'" in line, line


def test_a_ladder_logs_its_rounds_with_the_tournament(tmp_path: Path) -> None:
    path = write_tournament(tmp_path / "ladder.toml", {"name": "ladder", "players": 2, "seed": 11},
                            [{"name": "a", "command": python_bot_command("normal")},
                             {"name": "b", "command": python_bot_command("normal")}],
                            {"move_ms": 2000, "startup_ms": 10_000}, ladder={"interval": "1h", "pairings_per_bot": 1})
    done = run_arena("-v", "--log-format", "json", "serve", str(path), "--rounds", "1", timeout=RUN_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    tid, games, _ = stored_games(f"sqlite:///{tmp_path / 'ladder.db'}", "ladder")
    rounds = [r for r in json_lines(done.stderr) if r["logger"] == "arena.play.ladder"]
    assert [r["tournament"] for r in rounds] == [tid, tid]
    # the same lines as the console's on stdout, for people
    printed = [line for line in done.stdout.splitlines() if line.startswith("round 1: ")]
    assert [r["message"] for r in rounds] == printed, (rounds, printed)
    assert printed[0] == f"round 1: 2 bots, {len(games)} games"
