"""The queue view: `arena status` (text and JSON) and the web's queue page (HTML and JSON) show the
games waiting, in play order, with estimates from the pace of the newest games to end, and the bots
new to the pool waiting for their first games; every number is checked against the database the
test wrote (a real SQLite ladder; the games' ends are set to known times, so the pace is exact)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from arena.config import ChallengeSettings, load_config
from arena.play.runner import open_tournament
from arena.play.waiting import challenges_waiting, waiting
from arena.schedule.pairings import ScheduledGame
from arena.store.challenges import new_challenge
from arena.store.models import Game
from arena.store.store import Store
from tests.arena.test_arena_ladder import write_ladder
from tests.support import arena_here
from tests.web.web_support import client_for

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def queued(tmp_path: Path) -> dict[str, Any]:
    """A ladder of bots a, b, c (the file's) with 11 games ended a minute apart (the last 5 minutes
    ago), one running, 4 waiting; then bot "newbie" added, which has played none."""
    bots = [{"name": name, "command": "python3 -c pass"} for name in ("a", "b", "c")]
    path = write_ladder(tmp_path / "lad.toml", f"sqlite:///{tmp_path / 'lad.db'}", bots,
                        {"interval": "1h", "new_bot_games": 6})
    config = load_config(path, check_programs=False)
    store = Store(config.database)
    try:
        tid = open_tournament(store, config, schedule_games=False)
        seats = [(0, 1), (1, 2), (2, 0)]
        store.add_games(tid, 1, [ScheduledGame(n, seats[n % 3], n, seats[n % 3], n) for n in range(1, 17)])
        for n in range(1, 13):
            (task,) = store.claim(tid, 1)
            assert task.number == n
            if n < 12:  # ended (failed by the referee: its seats count as a played game's)
                assert store.fail(task, "ended by the test", retry=False)
        with store.engine.begin() as conn:
            for n in range(1, 12):
                conn.execute(update(Game).where(Game.tournament_id == tid, Game.number == n)
                             .values(finished_at=NOW - timedelta(minutes=5 + 11 - n)))
        store.add_bot(tid, "newbie", "python3 -c pass")
    finally:
        store.close()
    return {"path": path, "db": config.database, "tid": tid}


def test_the_view_counts_and_estimates_from_the_database(queued: dict[str, Any]) -> None:
    store = Store(queued["db"], read_only=True)
    try:
        view = waiting(store, queued["tid"], 6, now=NOW)
        counts = store.counts(queued["tid"])
        hook = challenges_waiting(store, queued["tid"])  # none asked for here
    finally:
        store.close()
    assert (view["version"], view["tournament"]) == (1, "lad")
    assert view["games"]["waiting"] == counts["pending"] == 4 and view["games"]["running"] == counts["running"] == 1
    assert view["pace"] == {"games_per_hour": 60.0, "measured_games": 11}, "10 gaps of a minute"
    listed = view["games"]["listed"]
    assert [g["number"] for g in listed] == [13, 14, 15, 16]
    assert listed[0]["bots"] == ["b", "c"] and listed[1]["bots"] == ["c", "a"]
    assert [g["starts_in_s"] for g in listed] == [60.0, 120.0, 180.0, 240.0], "the k-th once k + 1 more have ended"
    assert listed[0]["starts_at"] == "2026-12-03T12:01:00+00:00"
    assert view["challenges"] == {"waiting": len(hook), "listed": hook} == {"waiting": 0, "listed": []}
    assert view["new_bots"] == [{"bot": "newbie", "games_since_entry": 0, "first_games_left": 6}]


def test_arena_status_prints_it_as_text_and_json(queued: dict[str, Any]) -> None:
    shown = arena_here("status", str(queued["path"]), "--format", "json")
    assert shown.returncode == 0, shown.stderr
    status = json.loads(shown.stdout)
    w = status["waiting"]
    assert w["games"]["waiting"] == status["games"]["pending"] == 4 and w["pace"]["games_per_hour"] == 60.0
    assert [g["number"] for g in w["games"]["listed"]] == [13, 14, 15, 16]
    assert w["new_bots"] == [{"bot": "newbie", "games_since_entry": 0, "first_games_left": 6}]
    text = arena_here("status", str(queued["path"]))
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[1] == "waiting: 4 game(s), 0 challenge(s); pace 60 games/h (the newest 11 games to end)"
    assert lines[2] == "  next game 13 (b v c) starts in about 1.0 min; game 16 in about 4.0 min"
    assert lines[3] == ("  new in the pool: newbie, 0 game(s) since it entered; its next 6 are played first, from the "
                        "ladder's next round")


def test_the_web_shows_it_with_its_json_twin(queued: dict[str, Any]) -> None:
    for web in client_for(queued["db"]):
        body = web.get("/t/lad/queue.json").json()
        assert body["games"]["waiting"] == 4 and body["pace"]["games_per_hour"] == 60.0
        assert [g["url"] for g in body["games"]["listed"]][:1] == ["/t/lad/games/13"]
        assert body["new_bots"][0]["url"] == "/t/lad/bots/newbie" and body["new_bots"][0]["first_games_left"] == 6
        html = web.get("/t/lad/queue").text
        assert '<a href="/t/lad/games/16">16</a>' in html and "b v c" in html and "60.0 games an hour" in html
        assert '<a href="/t/lad/queue">Queue</a>' in web.get("/t/lad").text
        assert web.get("/t/none/queue.json").status_code == 404


def test_challenges_wait_after_the_games_with_their_games_left(queued: dict[str, Any]) -> None:
    """Two operator's challenges (3 pairs, then until decided): listed oldest first after the 4
    waiting games, each starting once the games ahead of it have ended at the measured pace."""
    store = Store(queued["db"])
    try:
        fixed = new_challenge(store, queued["tid"], None, "a", "b", 3, ChallengeSettings())
        open_ended = new_challenge(store, queued["tid"], None, "b", "c", None, ChallengeSettings())
        view = waiting(store, queued["tid"], 6, now=NOW)
    finally:
        store.close()
    listed = view["challenges"]["listed"]
    assert view["challenges"]["waiting"] == 2
    assert [(c["id"], c["bot"], c["opponent"], c["games_left"]) for c in listed] == [
        (fixed.id, "a", "b", 6), (open_ended.id, "b", "c", None)]
    assert listed[0]["url"] == f"/t/lad/challenges/{fixed.id}"
    assert [c["starts_in_s"] for c in listed] == [300.0, 660.0], "after the 4 games, then after its 6 more"
