"""The tournament that tests of whole runs compare: the same bots, seed and schedule everywhere,
so a run in one process, a resumed run and a run by queue workers must store the same games."""

from __future__ import annotations

import asyncio
import io
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from arena.cli.live import run_tournament
from arena.config import load_config
from arena.play.runner import current_standings
from arena.rating.standings import standings_json
from arena.schedule.pairings import round_robin
from arena.store.store import Store
from tests.arena_support import game_results, new_marker, sample_bot_command, wait_no_marked_processes, write_tournament

NAME = "runs"  # the same name everywhere: it is part of every game id, which seeds the random bots
# Generous move and startup limits: eight games at once on two cores must not time out, or
# results would depend on the machine's load.
TIME = {"move_ms": 2000, "startup_ms": 20000}  # a move time no sample bot can miss on a loaded machine
BOTS = [
    {"name": "random-a", "command": sample_bot_command("random_bot.py"), "env": {"CASINO_BOT_SEED": "11"}},
    {"name": "random-b", "command": sample_bot_command("random_bot.py"), "env": {"CASINO_BOT_SEED": "22"}},
    {"name": "greedy", "command": sample_bot_command("greedy_bot.py")},
    {"name": "random-c", "command": sample_bot_command("random_bot.py"), "env": {"CASINO_BOT_SEED": "33"}},
]
SETTINGS = {"name": NAME, "players": 2, "games_per_pairing": 2, "duplicate": True, "seed": 20240611}
SCHEDULE = round_robin(len(BOTS), 2, 2, True, SETTINGS["seed"])
PLAY_TIMEOUT_S = 180


DIES_WITH_PARENT = sys.platform == "linux"  # bots are tied to their referee (referee/bots/die_with_parent.py)


def tournament_file(folder: Path, marker: str, concurrency: int, database: str | None = None) -> Path:
    """The tournament every comparison here uses, with its own database in ``folder`` unless given."""
    folder.mkdir(parents=True, exist_ok=True)
    db = database or f"sqlite:///{folder / 'arena.db'}"
    return write_tournament(folder / "runs.toml", {**SETTINGS, "concurrency": concurrency, "database": db},
                            BOTS, TIME, marker)


def play(path: Path, concurrency: int | None = None) -> int:
    """`arena run` in this process (its output discarded); the exit status."""
    config = load_config(path)
    return asyncio.run(asyncio.wait_for(run_tournament(config, Console(file=io.StringIO()), concurrency),
                                        PLAY_TIMEOUT_S))


@dataclass(frozen=True)
class Outcome:
    """What a finished tournament stored, for comparisons."""

    standings: str  # standings_json
    numbers: list[int]  # every stored game's number, in order (repeats would show)
    games: dict[int, tuple[tuple[int, ...], int, str, dict[str, Any] | None]]
    history_rows: int
    history: tuple[tuple[int, str, float, float], ...] = ()  # (game, bot, mu, sigma) after each rated game


def outcome_of(url: str) -> Outcome:
    store = Store(url)
    try:
        tid = store.tournament_id(NAME)
        assert tid is not None
        history = tuple(store.rating_history(tid))
        return Outcome(standings_json(current_standings(store, tid)), [g.number for g in store.games(tid)],
                       game_results(store, tid), len(history), history)
    finally:
        store.close()


def assert_complete(outcome: Outcome) -> None:
    """Every scheduled game stored once, done, with the scheduled seats and deck, and rated."""
    assert outcome.numbers == [g.number for g in SCHEDULE]
    for g in SCHEDULE:
        seats, deck, status, result = outcome.games[g.number]
        assert (seats, deck, status) == (g.seat_bots, g.deck_seed, "done"), f"game {g.number}"
        assert result is not None and not result.get("failures"), f"game {g.number}: {result}"
    assert outcome.history_rows == SETTINGS["players"] * len(SCHEDULE)  # each game rated once


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    """The tournament played once, one game at a time, uninterrupted, on SQLite."""
    folder = tmp_path_factory.mktemp("reference")
    marker = new_marker()
    path = tournament_file(folder, marker, concurrency=1)
    assert play(path) == 0
    assert wait_no_marked_processes(marker) == []
    outcome = outcome_of(load_config(path).database)
    assert_complete(outcome)
    return outcome
