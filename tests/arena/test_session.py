"""A tournament run through play/session.py, the entry every front end uses (cli/live.py today; a
web app and a queue worker later): its callbacks report the start once and every game in order,
``stop`` ends the run after the running games, a second run resumes, and ``RunEnded`` says how it
ended. Games are played by tests/fakes.py's FakeExecutor, the database is real."""

from __future__ import annotations

import asyncio
from pathlib import Path

from arena.config import load_config
from arena.play.session import GameFinished, RunEnded, RunStarted, TournamentSession
from arena.rating.standings import standings_json
from tests.arena_support import write_tournament
from tests.fakes import FakeExecutor

BOTS = [{"name": name, "address": f"unix:/nonexistent/{name}.sock"} for name in ("a", "b", "c")]
GAMES = 12  # 3 pairings x 4


class Recorder:
    """Callbacks that keep what they hear; ``stop_after``: ask the session to stop after that many games."""

    def __init__(self, session: TournamentSession | None = None, stop_after: int = 0) -> None:
        self.session = session
        self.stop_after = stop_after
        self.starts: list[RunStarted] = []
        self.games: list[GameFinished] = []

    def started(self, event: RunStarted) -> None:
        self.starts.append(event)

    def game_finished(self, event: GameFinished) -> None:
        self.games.append(event)
        if self.session is not None and len(self.games) == self.stop_after:
            self.session.stop()


def config_in(folder: Path):  # type: ignore[no-untyped-def]
    path = write_tournament(folder / "s.toml", {"name": "s", "players": 2, "games_per_pairing": 4, "seed": 3,
                                                "concurrency": 2, "database": f"sqlite:///{folder / 's.db'}"}, BOTS)
    return load_config(path)


def run_session(config, stop_after: int = 0) -> tuple[RunEnded, Recorder]:  # type: ignore[no-untyped-def]
    session = TournamentSession(config, executor=FakeExecutor())
    recorder = Recorder(session, stop_after)
    session.events = recorder
    return asyncio.run(session.run()), recorder


def test_a_session_reports_its_start_and_every_game_then_how_it_ended(tmp_path: Path) -> None:
    ended, seen = run_session(config_in(tmp_path))
    assert [(s.name, s.bots, s.total, s.settled, s.concurrency) for s in seen.starts] == [("s", 3, GAMES, 0, 2)]
    assert [g.finished for g in seen.games] == list(range(1, GAMES + 1))
    assert all(g.total == GAMES and g.rate > 0 and g.done.report is not None for g in seen.games)
    assert sorted(g.done.task.number for g in seen.games) == list(range(1, GAMES + 1))
    assert ended.counts["done"] == GAMES and ended.pending == 0
    assert not ended.stopped and not ended.abandoned and ended.failures == ()
    assert sum(row.games for row in ended.standings.rows) == 2 * GAMES


def test_stop_finishes_the_running_games_and_a_second_session_resumes(tmp_path: Path) -> None:
    config = config_in(tmp_path)
    first, seen = run_session(config, stop_after=3)
    assert first.stopped and not first.abandoned
    assert 3 <= first.counts["done"] < GAMES, first.counts  # the games running at the stop were finished
    assert first.counts["running"] == 0 and first.pending == GAMES - first.counts["done"]
    second, seen_again = run_session(config)
    assert seen_again.starts[0].settled == first.counts["done"]
    assert len(seen_again.games) == first.pending and second.pending == 0 and not second.stopped
    (tmp_path / "whole").mkdir()
    whole, _ = run_session(config_in(tmp_path / "whole"))
    assert standings_json(second.standings) == standings_json(whole.standings), "resuming changes nothing"
