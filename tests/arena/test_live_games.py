"""The live_games table's rules (arena/play/live.py): a row is written only while its game runs with
the writer's attempt, storing or failing the game deletes it, rows a crashed player left are never
shown and are trimmed; the same on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from arena.play.executor import SeatBot
from arena.play.live import LiveWriter
from arena.schedule.pairings import round_robin
from arena.store.store import GameTask, LiveEntry, Store
from referee.bots.endpoint import BotEndpoint
from referee.match.spec import GameSettings, GameSetup
from referee.rules import RuleOptions
from tests.fakes import FakeExecutor


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    url = f"sqlite:///{tmp_path / 'live.db'}" if request.param == "sqlite" else str(request.getfixturevalue("pg_url"))
    opened = Store(url)
    request.addfinalizer(opened.close)
    return opened


def scheduled(store: Store) -> int:
    return store.create_tournament("t", "fp", {"players": 2}, [("a", "x", None, {}), ("b", "y", None, {})],
                                   round_robin(2, 2, 2, False, 7))


def entry(task: GameTask, plays: int) -> LiveEntry:
    return LiveEntry(task.id, task.attempt, plays, json.dumps({"plays": plays}))


def played(task: GameTask):  # type: ignore[no-untyped-def]
    setup = GameSetup.build(GameSettings(RuleOptions(players=2)), match_id="t", game_number=task.number,
                            seat_bots=task.seat_bots, seed=task.deck_seed)
    seats = [SeatBot(n, BotEndpoint.parse("python x.py")) for n in ("a", "b")]
    return asyncio.run(FakeExecutor().play(setup, seats))


def test_a_row_lives_while_its_attempt_plays_and_goes_with_the_stored_game(store: Store) -> None:
    tid = scheduled(store)
    one, two = store.claim(tid, 2)
    assert store.put_live([entry(one, 3), entry(two, 1)]) == 2
    assert store.put_live([entry(one, 5)]) == 1  # replaced, not added
    rows = store.live_games(tid)
    names = [tuple(("a", "b")[p] for p in task.seat_bots) for task in (one, two)]
    assert [(r.number, r.plays, r.seat_names, r.attempt) for r in rows] == [(1, 5, names[0], 1), (2, 1, names[1], 1)]
    assert store.live_record((tid, 1)) == (rows[0], {"plays": 5}) and store.live_plays(tid, 1) == ("running", 5)
    report = played(one)
    assert store.finish(one, report.result, report.record)
    assert [r.number for r in store.live_games()] == [2] and store.live_record(one.id) is None
    assert store.put_live([entry(one, 6)]) == 0, "a stored game never gets its row back"
    assert store.live_plays(tid, 1) == ("done", None) and store.live_plays(tid, 9) is None
    assert store.fail(two, "referee failed", retry=True)
    assert store.live_games() == [] and store.trim_live() == 0


def test_rows_a_crashed_player_left_are_never_shown_and_are_trimmed(store: Store) -> None:
    tid = scheduled(store)
    one, two = store.claim(tid, 2)
    store.put_live([entry(one, 4), entry(two, 2)])
    assert store.requeue_running(tid) == 2  # a resume: none of its games runs now
    assert store.live_games() == []
    again = store.claim(tid, 1)[0]
    assert again.attempt == 2
    # an old attempt's write cannot land, and a row it left behind is invisible, then trimmed
    assert store.put_live([entry(GameTask(again.id, again.number, 1, 1, 1, 0, again.seat_bots), 9)]) == 0
    with store.engine.begin() as conn:  # as a player killed mid-write would leave it
        conn.exec_driver_sql("INSERT INTO live_games (game_id, tournament_id, attempt, plays, updated_at, record) "
                             f"VALUES ({again.id}, {tid}, 1, 9, CURRENT_TIMESTAMP, '{{}}')")
    assert store.live_games() == [] and store.live_record(again.id) is None
    assert store.trim_live() == 1
    assert store.put_live([entry(again, 1)]) == 1 and [r.plays for r in store.live_games()] == [1]


def test_the_writer_batches_a_games_plays_and_writes_nothing_after_done(store: Store) -> None:
    tid = scheduled(store)
    (task,) = store.claim(tid, 1)
    report = played(task)

    class Snapshot:  # what the writer reads of a GameSoFar
        def __init__(self, plays: int) -> None:
            self.plays = plays

        def record(self) -> dict[str, int]:
            return {"plays": self.plays}

    async def follow() -> int:
        async with LiveWriter(store, interval_s=0.05) as live:
            observe = live.observer(task)
            for plays in range(1, 201):  # far faster than the writer: most are never written
                observe(Snapshot(plays))  # type: ignore[arg-type]
                await asyncio.sleep(0)
            while store.live_plays(tid, task.number) != ("running", 200):
                await asyncio.sleep(0.01)
            observe(Snapshot(201))
            await live.done(task)
            assert store.finish(task, report.result, report.record)
            await asyncio.sleep(0.2)  # longer than the interval: a write would have happened
            return live.writes

    writes = asyncio.run(asyncio.wait_for(follow(), 60))
    assert 1 <= writes < 200
    assert store.live_games() == []
