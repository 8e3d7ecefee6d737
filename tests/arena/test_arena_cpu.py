"""The arena and CPU time (docs/tournaments.md, ``[time] cpu_ms``): the key in a tournament file,
who it is refused for, fingerprints that stay as they were without it, and a real run whose
`arena games` and `arena show` give each move's CPU time and the CPU-limit timeout.

The busy loop burns CPU time, not wall time (tests/bots/scripted_bot.py ``burn``), against a
limit it exceeds 10x, beside a wall backstop 100x that limit: no verdict depends on the machine."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from arena.config import ConfigError, parse_config
from referee.bots.cpu import proc_metering_problem
from tests.conftest import SCRIPTED_BOT, sample_bot_path
from tests.support import arena_here, run_arena

ROOT = Path(__file__).resolve().parents[2]
PYTHON = json.dumps(shlex.join([sys.executable, "bot.py"]))
COMMAND_BOTS = f'[[bots]]\nname = "a"\ncommand = {PYTHON}\n\n[[bots]]\nname = "b"\ncommand = {PYTHON}\n'
ADDRESS_BOT = '[[bots]]\nname = "remote"\naddress = "localhost:50051"\n'


def cup(time: str, bots: str = COMMAND_BOTS) -> str:
    return f'name = "cup"\n\n{bots}\n[time]\n{time}\n'


def test_cpu_ms_is_read_with_the_wall_limit_kept(tmp_path: Path) -> None:
    config = parse_config(cup("move_ms = 3000\ncpu_ms = 250"), tmp_path / "cup.toml")
    assert (config.time_control.cpu_time_ms, config.time_control.move_time_ms) == (250, 3000)
    assert parse_config(cup("move_ms = 3000"), tmp_path / "cup.toml").time_control.cpu_time_ms == 0


@pytest.mark.parametrize("time, bots, message", [
    ("cpu_ms = 100", COMMAND_BOTS + ADDRESS_BOT,
     ('cup.toml: [time] cpu_ms needs bots the arena starts: [[bots]] #3 ("remote") is an address, '
      "and its CPU time cannot be measured")),
    ("move_ms = 500\ncpu_ms = 600", COMMAND_BOTS,
     "cup.toml: [time] cpu_time_ms (600) must be at most move_time_ms (500), the wall-clock backstop"),
    ("cpu_ms = -5", COMMAND_BOTS, "cup.toml: [time] cpu_ms must be a whole number from 0 to 3600000, not -5"),
])
def test_cpu_ms_refused_where_it_cannot_apply(tmp_path: Path, time: str, bots: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(cup(time, bots), tmp_path / "cup.toml")
    assert caught.value.errors == (message,)


def test_without_cpu_ms_the_fingerprint_is_what_it_was_before_cpu_ms_existed(tmp_path: Path) -> None:
    """Tournaments stored before the key existed must still open: their fingerprint hashed the
    five wall-clock fields only; so does a file without cpu_ms (or with cpu_ms = 0)."""
    config = parse_config(cup("move_ms = 700"), tmp_path / "cup.toml")
    time_control = dataclasses.asdict(config.time_control)
    del time_control["cpu_time_ms"]
    old = {"players": 2, "bots": ["a", "b"], "games_per_pairing": 2, "duplicate": True,
           "rules": config.rules.to_dict(), "time_control": time_control, "policy": "forfeit", "max_strikes": 3,
           "seed": 1}
    old_hash = hashlib.sha256(json.dumps(old, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert config.settings_fingerprint() == old_hash
    assert parse_config(cup("move_ms = 700\ncpu_ms = 0"), tmp_path / "cup.toml").settings_fingerprint() == old_hash
    assert parse_config(cup("move_ms = 700\ncpu_ms = 70"), tmp_path / "cup.toml").settings_fingerprint() != old_hash


needs_proc = pytest.mark.skipif(proc_metering_problem() is not None, reason=str(proc_metering_problem()))


@needs_proc
def test_a_run_under_a_cpu_limit_shows_cpu_times_and_the_cpu_timeout(tmp_path: Path) -> None:
    """Two games of a burner (2 s of CPU on its 2nd turn; limit 200 ms) against the greedy bot,
    with a 20 s wall backstop: each game a timeout naming the CPU time; `arena games` says so,
    `--times` and `arena show` give every seat's wall and CPU times."""
    burner = shlex.join([sys.executable, str(SCRIPTED_BOT), "burn", "--after", "2", "--turns", "1", "--ms", "2000"])
    greedy = shlex.join([sys.executable, str(sample_bot_path("greedy_bot.py"))])
    file = tmp_path / "cpu.toml"
    file.write_text(f'name = "cpu"\nplayers = 2\ngames_per_pairing = 2\nconcurrency = 1\n\n'
                    f'[[bots]]\nname = "burner"\ncommand = {json.dumps(burner)}\n\n'
                    f'[[bots]]\nname = "greedy"\ncommand = {json.dumps(greedy)}\n\n'
                    "[time]\nmove_ms = 20000\ncpu_ms = 200\nstartup_ms = 20000\n", encoding="utf-8")
    done = run_arena("run", str(file), timeout=300)
    assert done.returncode == 0, done.stderr

    games = arena_here("games", str(file))
    assert games.returncode == 0, games.stderr
    timeouts = re.findall(r"^ +burner \(seat \d\): timeout at deal 1 play \d+: used (\d+) ms of CPU time"
                          r"(?: without answering, limit 200 ms|, limit 200 ms \(answered after \d+ ms\)) -> forfeit$",
                          games.stdout, re.MULTILINE)
    assert len(timeouts) == 2 and all(int(ms) > 250 for ms in timeouts), games.stdout
    assert "seat 0" not in games.stdout.replace("(seat 0)", "")  # move times only with --times

    timed = arena_here("games", str(file), "--times")
    assert timed.returncode == 0, timed.stderr
    seat_line = r"^ +seat (\d) (burner|greedy): \d+ moves, median [\d.]+ ms, max [\d.]+ ms, CPU median [\d.]+ ms, " \
                r"max [\d.]+ ms$"
    assert sorted(re.findall(seat_line, timed.stdout, re.MULTILINE)) == [
        ("0", "burner"), ("0", "greedy"), ("1", "burner"), ("1", "greedy")], timed.stdout

    shown = arena_here("show", str(file), "1")
    assert shown.returncode == 0, shown.stderr
    assert len(re.findall(seat_line.replace(r"^ +", "^"), shown.stdout, re.MULTILINE)) == 2, shown.stdout


@needs_proc
def test_bots_add_refuses_an_address_under_a_cpu_limit(tmp_path: Path) -> None:
    greedy = shlex.join([sys.executable, str(sample_bot_path("greedy_bot.py"))])
    file = tmp_path / "ladder.toml"
    file.write_text(f'name = "ladder"\n\n[[bots]]\nname = "g1"\ncommand = {json.dumps(greedy)}\n\n'
                    f'[[bots]]\nname = "g2"\ncommand = {json.dumps(greedy)}\n\n[time]\ncpu_ms = 100\n\n'
                        '[ladder]\ninterval = "1h"\n', encoding="utf-8")
    done = arena_here("bots", "add", "remote", "127.0.0.1:50061", "-f", str(file))
    assert done.returncode == 2
    assert done.stderr == ('arena: error: cannot add remote: [time] cpu_ms needs bots the arena starts, and '
                           '"127.0.0.1:50061" is an address (its CPU time cannot be measured)\n')
