"""The runner's own logic, fast, with tests/fakes.py's FakeExecutor (games played by the rules
engine in-process): the same standings at any concurrency, a game the referee fails to play is
retried and stored once, and one that keeps failing is marked failed without stopping the rest.
The same properties with real bot processes are in test_arena_runs.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

from arena.config import load_config
from arena.play.runner import MAX_ATTEMPTS, TournamentRunner, current_standings, open_tournament
from arena.rating.standings import standings_json
from arena.store.store import Store
from tests.arena_support import write_tournament
from tests.fakes import FakeExecutor

BOTS = [{"name": name, "address": f"unix:/nonexistent/{name}.sock"} for name in ("a", "b", "c", "d")]


def run(folder: Path, concurrency: int, executor: FakeExecutor) -> tuple[str, dict[int, tuple[str, int]]]:
    """A 4-bot round robin (24 games) played through ``executor``: its standings and each game's
    (status, attempt)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = write_tournament(folder / "fake.toml", {"name": "fake", "players": 2, "games_per_pairing": 4, "seed": 9,
                                                   "database": f"sqlite:///{folder / 'fake.db'}"}, BOTS)
    config = load_config(path)
    store = Store(config.database)
    try:
        tid = open_tournament(store, config)
        asyncio.run(TournamentRunner(store, tid, config, executor, concurrency).run())
        return (standings_json(current_standings(store, tid)),
                {g.number: (g.status, g.attempt) for g in store.games(tid)})
    finally:
        store.close()


def test_standings_are_the_same_at_any_concurrency(tmp_path: Path) -> None:
    one, games_one = run(tmp_path / "c1", 1, FakeExecutor())
    eight, games_eight = run(tmp_path / "c8", 8, FakeExecutor())
    assert len(games_one) == 24 and set(games_one.values()) == {("done", 1)}
    assert games_eight == games_one
    assert eight == one


def test_a_referee_failure_is_retried_and_the_game_stored_once(tmp_path: Path) -> None:
    reference, _ = run(tmp_path / "ref", 2, FakeExecutor())
    executor = FakeExecutor(fail_first=[3, 17])
    standings, games = run(tmp_path / "retry", 2, executor)
    assert games[3] == ("done", 2) and games[17] == ("done", 2)
    assert all(v == ("done", 1) for n, v in games.items() if n not in (3, 17))
    assert sorted(executor.played) == sorted([*range(1, 25), 3, 17]), "each failed game played once more"
    assert standings == reference, "ratings are applied in game order whatever failed on the way"


def test_a_game_that_keeps_failing_is_marked_failed_and_the_rest_go_on(tmp_path: Path) -> None:
    class AlwaysFails(FakeExecutor):
        async def play(self, setup, seats, observe=None):  # type: ignore[no-untyped-def]
            if setup.game_number == 5:
                self.played.append(5)
                raise RuntimeError("never")
            return await super().play(setup, seats, observe)

    executor = AlwaysFails()
    _, games = run(tmp_path / "fails", 2, executor)
    assert games[5] == ("failed", MAX_ATTEMPTS)
    assert executor.played.count(5) == MAX_ATTEMPTS
    assert all(v == ("done", 1) for n, v in games.items() if n != 5)
