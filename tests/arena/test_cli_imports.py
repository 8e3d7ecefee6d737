"""Commands that answer at once: which modules a real ``arena``/``referee`` process imports.

`arena --help` took 0.9 s when every command imported SQLAlchemy, Alembic, procrastinate, rich,
gRPC and prometheus_client; now each command imports what it uses (docs/benchmarks.md, "Commands
that answer at once"). These tests keep it so without timing anything: the interpreter's own
import log (``PYTHONPROFILEIMPORTTIME``, the same as ``python -X importtime``) of a real process
says which modules it loaded, whatever the machine's speed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import run_arena, run_referee

IMPORT_LOG = {"PYTHONPROFILEIMPORTTIME": "1"}
_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \| *(\S+)\s*$", re.MULTILINE)

DATABASE = ("sqlalchemy", "alembic", "procrastinate", "psycopg", "psycopg_pool", "apscheduler")
WEB = ("starlette", "uvicorn", "jinja2", "multipart")
GAMES = ("grpc", "google.protobuf", "casino", "prometheus_client", "trueskill")  # the referee's machinery
TERMINAL = ("rich",)


def imported(done: subprocess.CompletedProcess[str]) -> set[str]:
    """The modules a finished process imported, from its import log on stderr."""
    names = set(_LINE.findall(done.stderr))
    assert "arena" in names or "referee" in names, f"no import log in stderr:\n{done.stderr[-2000:]}"
    return names


def loaded(names: set[str], packages: tuple[str, ...]) -> list[str]:
    """Which of ``packages`` (or a module of theirs) are among ``names``."""
    return sorted(p for p in packages if any(n == p or n.startswith(p + ".") for n in names))


@pytest.mark.parametrize("argv", [
    ("--help",), ("compare", "--help"), ("gauntlet", "--help"), ("run", "--help"), ("web", "--help"),
    ("users", "add", "--help"), ("migrate", "--help"),
])
def test_arena_help_imports_no_database_web_games_or_rich(argv: tuple[str, ...]) -> None:
    """Every `arena ... --help` only builds the parser: none of the heavy libraries is loaded."""
    done = run_arena(*argv, env=IMPORT_LOG)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage: arena" in done.stdout
    assert loaded(imported(done), DATABASE + WEB + GAMES + TERMINAL) == []


def test_arena_compare_imports_no_database_or_web() -> None:
    """`arena compare` needs the games' machinery but never the database or the web app (its
    --sprt-estimate runs the command's imports and plays nothing)."""
    done = run_arena("compare", "--candidate", "x", "--baseline", "y", "--sprt-estimate", "--true-effect", "0.5",
                     "--variance", "4", env=IMPORT_LOG)
    assert done.returncode == 0, done.stderr[-2000:]
    names = imported(done)
    assert loaded(names, DATABASE + WEB) == []
    assert loaded(names, ("grpc", "rich")) == ["grpc", "rich"]  # the command's own: the log is of the command


@pytest.mark.parametrize("argv", [("--help",), ("check", "--help"), ("replay", "--help")])
def test_referee_help_imports_no_database_web_grpc_metrics_or_rich(argv: tuple[str, ...]) -> None:
    """`referee ... --help` builds the parser (which needs the protobuf enums of its choices) and
    loads neither gRPC nor prometheus_client."""
    done = run_referee(*argv, env=IMPORT_LOG)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage: referee" in done.stdout
    assert loaded(imported(done), DATABASE + WEB + TERMINAL + ("grpc", "prometheus_client")) == []


def test_referee_play_and_replay_import_no_grpc_or_metrics(tmp_path: Path) -> None:
    """The engine's commands (play a game, replay a record) load neither gRPC nor
    prometheus_client: only the commands that talk to bots do."""
    record = tmp_path / "game.json"
    for argv in (("play", "--seed", "3", "--record", str(record)), ("replay", str(record))):
        done = run_referee(*argv, env=IMPORT_LOG)
        assert done.returncode == 0, done.stderr[-2000:]
        assert loaded(imported(done), DATABASE + WEB + TERMINAL + ("grpc", "prometheus_client")) == [], argv
    assert "record checked" in done.stdout


def test_import_log_sees_a_heavy_import() -> None:
    """The check above can fail: a process that does import SQLAlchemy shows it in the log."""
    done = subprocess.run([sys.executable, "-c", "import referee.errors, sqlalchemy"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **IMPORT_LOG})
    assert done.returncode == 0, done.stderr[-2000:]
    assert loaded(imported(done), DATABASE) == ["sqlalchemy"]
