"""Bots' unix sockets under a long TMPDIR: a socket's path has at most 107 bytes, and a TMPDIR
that leaves no room for ``<root>/<bot label>/<n>.sock`` puts the sockets' folder in /tmp instead
(referee/bots/sockets.py); before, every bot of a match forfeited its start with a gRPC error."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.bots.sockets import SOCKET_PATH_MAX, fits, label_room, socket_root
from tests.arena_support import sample_bot_command, write_tournament
from tests.conftest import builtin_bot_command
from tests.support import run_arena, run_referee


@pytest.fixture
def long_tmpdir() -> Iterator[Path]:
    """An existing folder whose path leaves no room for a bot's socket below it."""
    top = Path(tempfile.mkdtemp(prefix="long-"))
    folder = top / ("d" * (SOCKET_PATH_MAX - len(str(top)) - 10))
    folder.mkdir()
    folder.chmod(0o755)
    top.chmod(0o755)
    try:
        yield folder
    finally:
        import shutil
        shutil.rmtree(top, ignore_errors=True)


def test_the_sockets_folder_stays_in_tmpdir_where_the_paths_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    short = Path(tempfile.mkdtemp(prefix="t", dir="/tmp"))  # not tmp_path: under xdist it is long
    try:
        monkeypatch.setattr(tempfile, "tempdir", str(short))
        with socket_root("casino-sock-", label_room(4)) as root:
            assert Path(root).parent == short
            assert fits(root + "/bot3/9999.sock")
    finally:
        short.rmdir()


def test_a_tmpdir_without_room_puts_the_sockets_folder_in_tmp(monkeypatch: pytest.MonkeyPatch,
                                                              long_tmpdir: Path) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(long_tmpdir))
    room = label_room(69)  # the arena's longest label: a 64-character bot name and "-<n>"
    with socket_root("arena-sock-", room) as root:
        assert Path(root).parent == Path("/tmp")
        assert fits(root + "/" + "n" * 69 + "/9999.sock")


def test_a_match_plays_under_a_long_tmpdir(long_tmpdir: Path) -> None:
    done = run_referee("match", "--bot", builtin_bot_command(1), "--bot", builtin_bot_command(2), "--games", "2",
                       env={"TMPDIR": str(long_tmpdir)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "forfeit" not in done.stdout.split("\n\n")[0], done.stdout  # the games' lines, before the table
    assert done.stdout.count("game ") == 2, done.stdout


def test_a_tournament_plays_under_a_long_tmpdir_with_the_longest_bot_name(long_tmpdir: Path, tmp_path: Path) -> None:
    name = "b" * 64  # the longest a bot's name may be: its slots' labels are the longest socket folders
    path = write_tournament(tmp_path / "long.toml",
                            {"name": "long", "players": 2, "games_per_pairing": 2, "seed": 7,
                             "database": f"sqlite:///{tmp_path / 'arena.db'}"},
                            [{"name": name, "command": sample_bot_command("greedy_bot.py")},
                             {"name": "random", "command": sample_bot_command("random_bot.py")}],
                            {"move_ms": 2000, "startup_ms": 20000})
    done = run_arena("run", str(path), env={"TMPDIR": str(long_tmpdir)}, timeout=180)
    assert done.returncode == 0, done.stderr
    failed = run_arena("games", str(path), "--failed")
    assert failed.returncode == 0, failed.stderr
    listed = run_arena("games", str(path))
    assert name in listed.stdout and name not in failed.stdout, (listed.stdout, failed.stdout)
