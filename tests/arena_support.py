"""Helpers for the arena's integration tests: tournament files, the `arena` command as a real
process, and the bot processes a tournament started (found by an environment marker)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arena.store.store import Store
from tests.conftest import sample_bot_path
from tests.support import run_arena  # noqa: F401  (one helper for every test module; re-exported)

ROOT = Path(__file__).resolve().parent.parent
MARKER_ENV = "ARENA_TEST_MARKER"  # given to every bot of a test's tournament, to find its processes


def sample_bot_command(script: str) -> str:
    """The command line of a sample Python bot (``random_bot.py``, ``greedy_bot.py``, ...)."""
    return shlex.join([sys.executable, str(sample_bot_path(script))])


def new_marker() -> str:
    """A fresh value for MARKER_ENV: one per tournament run whose processes a test checks."""
    return uuid.uuid4().hex


def toml_value(value: Any) -> str:
    """A TOML value: strings as basic strings (JSON escapes are valid TOML ones), tables and arrays inline."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)):
        return json.dumps(value)
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML for {value!r}")


def write_tournament(path: Path, top: Mapping[str, Any], bots: Sequence[Mapping[str, Any]],
                     time_control: Mapping[str, int] | None = None, marker: str | None = None,
                     ladder: Mapping[str, Any] | None = None) -> Path:
    """Write a tournament file: top-level keys, an optional [time] table, the [[bots]] and an
    optional [ladder] table; with ``marker``, every bot's env gets MARKER_ENV=marker."""
    lines = [f"{key} = {toml_value(value)}" for key, value in top.items()]
    if time_control:
        lines += ["", "[time]", *(f"{key} = {toml_value(value)}" for key, value in time_control.items())]
    for bot in bots:
        entry = dict(bot)
        if marker is not None:
            entry["env"] = {**entry.get("env", {}), MARKER_ENV: marker}
        lines += ["", "[[bots]]", *(f"{key} = {toml_value(value)}" for key, value in entry.items())]
    if ladder is not None:
        lines += ["", "[ladder]", *(f"{key} = {toml_value(value)}" for key, value in ladder.items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def arena_argv(*args: str) -> list[str]:
    """The `arena` command as this interpreter runs it."""
    return [sys.executable, "-m", "arena.cli", *args]


# a database back after an outage is seen within this by the tests' arena processes (5 s by default:
# a coordinator or a worker waiting that long for it only made fault tests longer)
DB_RETRY_MAX_S = "1"


def arena_env() -> dict[str, str]:
    """The environment of an `arena` process a test starts: this checkout's code, quick retries in an outage."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "ARENA_DB_RETRY_MAX_S": DB_RETRY_MAX_S}


def marked_processes(marker: str) -> list[tuple[int, str]]:
    """Live processes whose environment holds MARKER_ENV=marker: (pid, command line); zombies excluded."""
    wanted = f"{MARKER_ENV}={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if cmdline and wanted in environ.split(b"\0"):
            found.append((int(entry.name), cmdline))
    return found


def wait_no_marked_processes(marker: str, wait_s: float = 10.0) -> list[tuple[int, str]]:
    """Poll until no process carries ``marker`` (up to ``wait_s``); the ones still alive."""
    deadline = time.monotonic() + wait_s
    while True:
        left = marked_processes(marker)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


def kill_marked_processes(marker: str) -> None:
    """SIGKILL the process group of every process carrying ``marker`` (bots lead their own group)."""
    for pid, _ in marked_processes(marker):
        for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
            try:
                kill()
            except (ProcessLookupError, PermissionError):
                pass


def game_results(store: Store, tid: int) -> dict[int, tuple[tuple[int, ...], int, str, dict[str, Any] | None]]:
    """Every game by number: (seat bots, deck seed, status, result)."""
    return {g.number: (g.seat_bots, g.deck_seed, g.status, g.result) for g in store.games(tid)}
