"""The leaderboard, a bot's page and the game list, in HTML and JSON: over the real played
tournament (figures checked against what the Store and current_standings say), over a small
database with forfeits and a hostile bot name (made through the Store), over the audit's 5-3 and
7-1 bots (stored and rated as a run does: provisional marks, why, and the note on their order),
and the migration that adds game_seats to a database stored before it."""

from __future__ import annotations

import re
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from alembic.script import ScriptDirectory
from starlette.testclient import TestClient

import arena.store
from arena.cli.main import build_parser
from arena.cli.web import web_settings
from arena.config import load_config
from arena.play.rate import apply_ratings
from arena.play.runner import current_standings, open_tournament
from arena.rating.standings import seat_result, tally_outcomes
from arena.store.store import Store
from casino.v1 import game_pb2
from tests.web.web_support import TOURNAMENT, client_for, db_path, read_store

HOSTILE = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def truth(played_db: str) -> Iterator[dict[str, Any]]:
    """What the Store says of the played tournament, to check the pages against."""
    store = read_store(played_db)
    try:
        tid = store.tournament_id(TOURNAMENT)
        assert tid is not None
        yield {"standings": current_standings(store, tid), "games": store.games(tid),
               "bots": {b.position: b.name for b in store.bots(tid)}, "history": store.rating_history(tid),
               "outcomes": store.outcomes(tid)}
    finally:
        store.close()


def test_the_leaderboard_shows_the_stored_standings(web: TestClient, truth: dict[str, Any]) -> None:
    answer = web.get(f"/t/{TOURNAMENT}.json").json()
    expected = truth["standings"].rows
    assert [r["name"] for r in answer["standings"]] == [r.name for r in expected]
    for shown, row in zip(answer["standings"], expected):
        assert (shown["rank"], shown["games"], shown["wins"], shown["draws"], shown["losses"]) == (
            row.rank, row.games, row.wins, row.draws, row.losses)
        assert shown["conservative"] == pytest.approx(row.mu - 3 * row.sigma)
        assert (shown["mu"], shown["sigma"], shown["points_per_game"]) == (row.mu, row.sigma, row.points_per_game)
        assert shown["forfeits"] == row.forfeits
        position = next(p for p, n in truth["bots"].items() if n == row.name)
        last = max(g.number for g in truth["games"] if position in g.seat_bots)
        assert shown["last_game"]["number"] == last
    h2h = truth["standings"].head_to_head
    for line in answer["head_to_head"]:
        for cell in line["against"]:
            if cell is not None:
                assert (cell["score"], cell["games"]) == (h2h.score[line["bot"], cell["opponent"]],
                                                           h2h.games[line["bot"], cell["opponent"]])
    assert answer["tournaments"] == [{"name": TOURNAMENT, "url": f"/t/{TOURNAMENT}"}]
    html = web.get(f"/t/{TOURNAMENT}")
    assert html.status_code == 200
    for row in expected:
        assert f'href="/t/{TOURNAMENT}/bots/{row.name}"' in html.text
    assert 'id="head-to-head"' in html.text and "<select" in html.text
    assert f'href="/t/{TOURNAMENT}"' in web.get("/").text  # the front page links to it


# not sigma: in this tournament (every bot plays the same number of games) every σ comes out
# equal, so an order by it could not be told from any other here
@pytest.mark.parametrize("sort, key, reverse", [
    ("mu", "mu", True), ("-mu", "mu", False), ("bot", "name", False), ("-bot", "name", True),
    ("points_per_game", "points_per_game", True),
])
def test_the_leaderboard_sorts_by_a_column(web: TestClient, sort: str, key: str, reverse: bool) -> None:
    rows = web.get(f"/t/{TOURNAMENT}.json", params={"sort": sort}).json()["standings"]
    values = [r[key] for r in rows]
    assert values == sorted(values, reverse=reverse) and len(set(values)) > 1
    html = web.get(f"/t/{TOURNAMENT}", params={"sort": sort}).text
    assert [m for m in re.findall(r'<tr data-bot="([^"]+)"', html)] == [r["name"] for r in rows]


def test_unknown_tournament_bot_or_sort_is_refused_in_the_apps_style(web: TestClient) -> None:
    for path in ("/t/nope", "/t/nope/games", f"/t/{TOURNAMENT}/bots/nobody", f"/t/{TOURNAMENT}/games?bot=nobody"):
        html = web.get(path)
        assert html.status_code == 404 and "Royal Casino Arena" in html.text and "Traceback" not in html.text, path
        assert web.get(path, headers={"accept": "application/json"}).json()["status"] == 404
    for path in (f"/t/{TOURNAMENT}?sort=wat", f"/t/{TOURNAMENT}/games?before=x",
                 f"/t/{TOURNAMENT}/games?result=win", f"/t/{TOURNAMENT}/games?bot=greedy&result=maybe"):
        assert web.get(path).status_code == 400, path


def test_a_bots_page_shows_its_history_opponents_and_games(web: TestClient, truth: dict[str, Any]) -> None:
    name = "greedy"
    answer = web.get(f"/t/{TOURNAMENT}/bots/{name}.json").json()
    history = [(n, mu, sigma) for n, bot, mu, sigma in truth["history"] if bot == name]
    assert [(p["game"], p["mu"], p["sigma"]) for p in answer["history"]["points"]] == history
    row = next(r for r in truth["standings"].rows if r.name == name)
    assert (answer["standing"]["wins"], answer["standing"]["games"], answer["standing"]["mu"]) == (
        row.wins, row.games, row.mu)
    h2h = truth["standings"].head_to_head
    for o in answer["opponents"]:
        assert o["games"] == h2h.games[name, o["opponent"]]
        assert o["score"] * o["games"] == pytest.approx(h2h.score[name, o["opponent"]])
        assert 0 <= o["ci"][0] <= o["score"] <= o["ci"][1] <= 1
    position = next(p for p, n in truth["bots"].items() if n == name)
    played = sorted((g.number for g in truth["games"] if position in g.seat_bots), reverse=True)
    assert [g["number"] for g in answer["recent_games"]] == played
    results = {o.number: seat_result(o, o.seat_bots.index(name)) for o in truth["outcomes"] if name in o.seat_bots}
    assert {g["number"]: g["bot_result"] for g in answer["recent_games"]} == results
    assert answer["failures"] == [] and "logs" not in answer  # a log is its owner's (test_web_security.py)
    html = web.get(f"/t/{TOURNAMENT}/bots/{name}").text
    points = re.findall(r'<circle class="rating-point" data-game="(\d+)"', html)
    assert [int(n) for n in points] == [n for n, _, _ in history]
    assert "<svg" in html and 'class="band"' in html and "<h2>Log" not in html


def test_a_bots_log_is_not_on_its_public_page_even_where_the_app_can_read_it(played_db: str) -> None:
    logs = db_path(played_db).parent / "runs-logs"
    (tail,) = {p.read_text(errors="replace")[-200:] for p in sorted(logs.glob("greedy-*.log"))[:1]}
    for client in client_for(played_db, logs=((TOURNAMENT, str(logs)),)):
        assert "logs" not in client.get(f"/t/{TOURNAMENT}/bots/greedy.json").json()
        html = client.get(f"/t/{TOURNAMENT}/bots/greedy").text
        assert "<h2>Log" not in html and tail.strip().splitlines()[-1] not in html


def test_the_game_list_pages_through_every_game_once(played_db: str, truth: dict[str, Any]) -> None:
    for client in client_for(played_db, page_size=5):
        seen, url, pages = [], f"/t/{TOURNAMENT}/games.json", []
        while url:
            answer = client.get(url).json()
            pages.append(answer)
            seen += [g["number"] for g in answer["games"]]
            url = answer["older_url"] and answer["older_url"].replace("/games?", "/games.json?")
        assert seen == sorted((g.number for g in truth["games"]), reverse=True) and len(pages) == 3
        assert pages[0]["newer_url"] is None and pages[1]["newer_url"] and pages[-1]["older_url"] is None
        back = client.get(pages[-1]["newer_url"].replace("/games?", "/games.json?")).json()
        assert [g["number"] for g in back["games"]] == [g["number"] for g in pages[1]["games"]]
        html = client.get(f"/t/{TOURNAMENT}/games").text
        assert 'rel="next"' in html and 'rel="prev"' not in html
        first = truth["games"][-1]
        row = pages[0]["games"][0]
        assert row["number"] == first.number and row["scores"] == first.result["scores"]
        assert [s["bot"] for s in row["seats"]] == [truth["bots"][p] for p in first.seat_bots]


def test_the_game_list_filters_by_bot_and_result(web: TestClient, truth: dict[str, Any]) -> None:
    name = truth["outcomes"][0].seat_bots[0]
    wins = sorted((o.number for o in truth["outcomes"] if name in o.seat_bots
                   and seat_result(o, o.seat_bots.index(name)) == "win"), reverse=True)
    answer = web.get(f"/t/{TOURNAMENT}/games.json", params={"bot": name, "result": "win"}).json()
    assert [g["number"] for g in answer["games"]] == wins and wins
    assert all(g["bot_result"] == "win" for g in answer["games"])
    assert web.get(f"/t/{TOURNAMENT}/games.json", params={"forfeits": "1"}).json()["games"] == []


# --- a small database with forfeits and a hostile name, through the Store ----------------------


def _result(number: int, scores: list[int], ranks: list[int], winner: int,
            failures: list[game_pb2.Failure]) -> game_pb2.GameResult:
    return game_pb2.GameResult(game_id=f"f-g{number}", reason="forfeit" if failures else "target_reached",
                               winner_side=winner, scores=scores, ranks=ranks, failures=failures, deals=1)


@pytest.fixture(scope="module")
def forfeits_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Three games between "steady" and a bot with a hostile name: it forfeits game 2 by a crash
    and has a move replaced in game 3 (a failure that is not a forfeit)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('forfeits') / 'f.db'}"
    store = Store(url)
    try:
        tid = store.create_tournament("f", "0" * 64, {"players": 2}, [("steady", "x", None, {}),
                                                                      (HOSTILE, "x", None, {})])
        games = [type("G", (), {"number": n, "set_number": n, "deck_seed": n, "seat_bots": seats})()
                 for n, seats in ((1, (0, 1)), (2, (1, 0)), (3, (0, 1)))]
        store.add_games(tid, 1, games)
        crash = game_pb2.Failure(seat=0, kind=game_pb2.FAILURE_KIND_CRASH, deal=0, play_number=7,
                                 reason=f"exited {HOSTILE}", forfeit=True)
        slow = game_pb2.Failure(seat=1, kind=game_pb2.FAILURE_KIND_TIMEOUT, deal=1, play_number=3,
                                reason="no answer in time", forfeit=False)
        results = {1: _result(1, [21, 5], [1, 2], 0, []), 2: _result(2, [0, 4], [2, 1], 1, [crash]),
                   3: _result(3, [9, 21], [2, 1], 1, [slow])}
        for task in store.claim(tid, 3):
            assert store.finish(task, results[task.number], {"format": "test"})
    finally:
        store.close()
    return url


def test_forfeits_only_and_a_bots_failures(forfeits_db: str) -> None:
    for client in client_for(forfeits_db):
        only = client.get("/t/f/games.json", params={"forfeits": "1"}).json()["games"]
        assert [g["number"] for g in only] == [2]
        (forfeit,) = only[0]["forfeits"]
        assert (forfeit["bot"], forfeit["kind"], forfeit["where"]) == (HOSTILE, "crash", "deal 1 play 7")
        mine = client.get("/t/f/games.json", params={"bot": HOSTILE, "forfeits": "1"}).json()["games"]
        assert [g["number"] for g in mine] == [2]
        assert client.get("/t/f/games.json", params={"bot": "steady", "forfeits": "1"}).json()["games"] == []
        losses = client.get("/t/f/games.json", params={"bot": HOSTILE, "result": "loss"}).json()["games"]
        assert [g["number"] for g in losses] == [2, 1]
        failures = client.get(f"/t/f/bots/{HOSTILE}.json").json()["failures"]
        assert [(f["game"], f["kind"], f["forfeit"], f["where"]) for f in failures] == [
            (3, "timeout", False, "at deal 2 play 3"), (2, "crash", True, "at deal 1 play 7")]
        board = client.get("/t/f.json").json()["standings"]
        assert next(r for r in board if r["name"] == HOSTILE)["forfeits"]["crash"] == 1


def test_a_hostile_bot_name_is_escaped_on_every_page(forfeits_db: str) -> None:
    for client in client_for(forfeits_db):
        bot_path = client.get("/t/f.json").json()["standings"]
        url = next(r["url"] for r in bot_path if r["name"] == HOSTILE)
        assert "<" not in url and "/" not in url.removeprefix("/t/f/bots/")
        for path in ("/", "/t/f", "/t/f/games", "/t/f/games?forfeits=1", url, "/t/f/bots/steady"):
            html = client.get(path)
            assert html.status_code == 200, path
            assert HOSTILE not in html.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in html.text or path == "/", path
            assert "<script>alert" not in html.text, path


# --- the audit's case: 5-3 ranked above the 7-1 bot that beat it 3-1 ---------------------------


# winner, loser of each game in play order: b beats a 3-1, a beats c (who had beaten d and e) 4
# times, b beats e (who loses to everyone) 4 times; a ends 5-3, b 7-1, and μ − 3σ puts a above b
AUDIT_GAMES = [("c", "d"), ("c", "e")] * 3 + [("b", "a")] * 3 + [("a", "b")] + [("a", "c")] * 4 + [("b", "e")] * 4


def audit_file(folder: Path, database: Path, standings: str = "") -> Path:
    """The tournament file of the audit's five bots (never started: their games are stored below)."""
    bots = "".join(f'[[bots]]\nname = "{name}"\ncommand = "python3 {name}.py"\n\n' for name in "abcde")
    path = folder / "audit.toml"
    path.write_text(f'name = "audit"\ndatabase = "sqlite:///{database}"\n{bots}\n{standings}', encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def audit_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The audit's tournament as `arena run` leaves it: opened from its file (no [standings]: the
    defaults), each game stored through Store.finish, rated by apply_ratings. Its file's path."""
    folder = tmp_path_factory.mktemp("audit")
    path = audit_file(folder, folder / "audit.db")
    config = load_config(path, check_programs=False)
    store = Store(config.database)
    try:
        tid = open_tournament(store, config, schedule_games=False)
        position = {name: i for i, name in enumerate("abcde")}
        seats = [(w, l) if n % 2 else (l, w) for n, (w, l) in enumerate(AUDIT_GAMES, start=1)]
        store.add_games(tid, 1, [type("G", (), {"number": n, "set_number": n, "deck_seed": n,
                                                "seat_bots": (position[x], position[y])})()
                                 for n, (x, y) in enumerate(seats, start=1)])
        tasks = store.claim(tid, len(AUDIT_GAMES))
        assert sorted(t.number for t in tasks) == list(range(1, len(AUDIT_GAMES) + 1))
        for task in tasks:
            first_wins = task.number % 2 == 1
            assert store.finish(task, _result(task.number, [21, 9] if first_wins else [9, 21],
                                              [1, 2] if first_wins else [2, 1], 0 if first_wins else 1, []),
                                {"format": "test"})
        assert apply_ratings(store, tid) == len(AUDIT_GAMES)
    finally:
        store.close()
    return path


def test_the_7_1_bot_ranked_below_the_5_3_bot_it_beat_is_marked_and_explained(audit_db: Path) -> None:
    for client in client_for(load_config(audit_db, check_programs=False).database):
        answer = client.get("/t/audit.json").json()
        rows = {r["name"]: r for r in answer["standings"]}
        a, b = rows["a"], rows["b"]
        assert (a["wins"], a["losses"], b["wins"], b["losses"]) == (5, 3, 7, 1)
        assert a["rank"] < b["rank"] and a["conservative"] > b["conservative"]  # the ranking rule stands
        assert b["provisional"] is True and b["provisional_reasons"] == ["8 games of 20", f"σ {b['sigma']:.2f} > 2.5"]
        assert answer["provisional"] == {"games": 20, "sigma": 2.5}
        (note,) = [n for n in answer["rank_notes"] if n["bot"] == "b"]
        assert (note["ranked_below"], note["score"], note["games"]) == ("a", 3.0, 4)
        assert note["text"].startswith("b leads a 3–1 head to head but ranks below it")
        h2h = {line["bot"]: {c["opponent"]: c for c in line["against"] if c} for line in answer["head_to_head"]}
        assert (h2h["b"]["a"]["score"], h2h["b"]["a"]["games"]) == (3.0, 4)

        html = client.get("/t/audit").text
        row = re.search(r'<tr data-bot="b">.*?</tr>', html, flags=re.S)
        assert row and f'title="provisional: 8 games of 20; σ {b["sigma"]:.2f} &gt; 2.5">provisional</abbr>' in row[0]
        assert 'id="provisional-legend"' in html and "under 20 games or σ above 2.5" in html
        assert 'id="rank-notes"' in html and "b leads a 3–1 head to head but ranks below it" in html
        assert 'id="head-to-head"' in html
        assert client.get("/t/audit/bots/b.json").json()["standing"]["provisional_reasons"] == b["provisional_reasons"]


def test_a_database_served_alone_marks_bots_as_its_files_last_run_stored(audit_db: Path, tmp_path: Path) -> None:
    """`arena web --db` has no file: the thresholds stored by the last run (or bots command) apply;
    `arena web FILE` takes the file's. Changing them resumes the same tournament."""
    copy = tmp_path / "audit.db"
    shutil.copy(audit_db.with_name("audit.db"), copy)
    strict = load_config(audit_file(tmp_path, copy, "[standings]\nprovisional_games = 5\nprovisional_sigma = 5"),
                         check_programs=False)
    store = Store(strict.database)
    try:
        tid = store.tournament_id("audit")
        assert open_tournament(store, strict, schedule_games=False) == tid  # not refused: not a game setting
        assert store.tournament(tid).settings["standings"] == {"provisional_games": 5, "provisional_sigma": 5.0}
    finally:
        store.close()
    for client in client_for(strict.database):  # no file: as stored
        rows = {r["name"]: r for r in client.get("/t/audit.json").json()["standings"]}
        assert rows["b"]["provisional"] is False and rows["a"]["provisional"] is False
        assert rows["d"]["provisional_reasons"] == ["3 games of 5", f"σ {rows['d']['sigma']:.2f} > 5"]
    served = web_settings(build_parser().parse_args(["web", str(audit_file(tmp_path, copy))]))  # the defaults
    assert served.db == strict.database
    for client in client_for(served.db, standings=served.standings):  # the file given: its [standings]
        rows = {r["name"]: r for r in client.get("/t/audit.json").json()["standings"]}
        assert rows["b"]["provisional_reasons"][0] == "8 games of 20"


# --- the migration ------------------------------------------------------------------------------


LATER_TABLES = ("challenges", "live_games", "submissions", "notification_deliveries", "notification_events",
                "notify_settings", "webhooks", "users", "worker_pauses")
LATER_COLUMNS = (("games", "platform_faults"), ("bots", "entered_after"))  # columns the revisions after 0004_web_games add
HEAD_REVISION = ScriptDirectory(str(Path(arena.store.__file__).parent / "migrations")).get_current_head()


def test_the_migration_fills_game_seats_for_games_stored_before_it(played_db: str, tmp_path: Path) -> None:
    """A copy of the played database taken back to revision 0003 (no game_seats) gets, on upgrade,
    exactly the rows Store.finish wrote while the games were played."""
    copy = tmp_path / "old.db"
    shutil.copy(db_path(played_db), copy)
    with sqlite3.connect(copy) as conn:
        written = sorted(conn.execute("SELECT * FROM game_seats"))
        conn.execute("DROP TABLE game_seats")
        conn.execute("DROP INDEX ix_rating_history_bot")
        conn.execute("DROP INDEX ix_games_finished")
        conn.execute("DROP INDEX ix_games_tournament_status")
        for later in LATER_TABLES:  # the tables of the revisions after 0004_web_games
            conn.execute(f"DROP TABLE IF EXISTS {later}")
        for table, column in LATER_COLUMNS:
            conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        conn.execute("UPDATE alembic_version SET version_num = '0003'")
    assert len(written) == 24
    Store(f"sqlite:///{copy}").close()
    with sqlite3.connect(copy) as conn:
        assert sorted(conn.execute("SELECT * FROM game_seats")) == written
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone()[0] == HEAD_REVISION


def test_paging_links_keep_the_filters(played_db: str) -> None:
    for client in client_for(played_db, page_size=2):
        answer = client.get(f"/t/{TOURNAMENT}/games.json", params={"bot": "greedy", "result": "win"}).json()
        query = parse_qs(urlsplit(answer["older_url"]).query)
        assert query["bot"] == ["greedy"] and query["result"] == ["win"] and "before" in query


def test_the_databases_standings_sums_equal_the_sums_over_every_outcome(played_db: str) -> None:
    """current_standings sums game_seats in SQL; tally_outcomes sums the stored results one by one."""
    store = read_store(played_db)
    try:
        tid = store.tournament_id(TOURNAMENT)
        assert tid is not None
        names = [b.name for b in store.bots(tid)]
        by_database, by_outcomes = store.standings_tally(tid), tally_outcomes(names, store.outcomes(tid))
        assert by_database == by_outcomes
        assert sum(r.games for r in by_database.records.values()) == 24 and sum(by_database.met.values()) == 24
    finally:
        store.close()


def test_the_databases_standings_sums_count_forfeits_as_the_outcomes_do(forfeits_db: str) -> None:
    store = read_store(forfeits_db)
    try:
        tid = store.tournament_id("f")
        assert tid is not None
        names = [b.name for b in store.bots(tid)]
        tally = store.standings_tally(tid)
        assert tally == tally_outcomes(names, store.outcomes(tid)) and tally.forfeits[HOSTILE]["crash"] == 1
    finally:
        store.close()
