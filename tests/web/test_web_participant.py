"""The pages a participant lives on, through the ASGI client: times relative to the answer's own
``generated_at`` (a fixed clock) with the exact time on hover, why each game ended in words (one
module, the same words on every page), /live's scores so far, and the nav that says who is
logged in on every page."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from arena.rating.reasons import condition_win, reason_words
from arena.store.store import LiveEntry, Store
from arena.web.app import create_app
from arena.web.replay import replay_views
from arena.web.settings import WebSettings
from arena.web.times import ago
from referee.rules import RuleOptions, apply, game_record, legal_moves, new_game
from tests.web.test_web_replay import running
from tests.web.test_web_submit import LADDER, app, ladder_db, log_in, tokens  # noqa: F401  (fixtures)
from tests.web.web_support import TEST_HOST, TOURNAMENT, client_for, read_store

NOW = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


# --- times ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("before, said", [
    (timedelta(seconds=-30), "just now"), (timedelta(0), "just now"), (timedelta(seconds=9), "just now"),
    (timedelta(seconds=42), "42 s ago"), (timedelta(minutes=3, seconds=59), "3 min ago"),
    (timedelta(hours=5, minutes=59), "5 h ago"), (timedelta(days=1), "1 day ago"), (timedelta(days=29), "29 days ago"),
    (timedelta(days=45), "1 month ago"), (timedelta(days=364), "12 months ago"), (timedelta(days=800), "2 years ago"),
])
def test_a_time_is_said_in_the_largest_whole_unit_and_never_in_the_future(before: timedelta, said: str) -> None:
    assert ago(NOW - before, NOW) == said


def clocked(db: str, now: datetime) -> Iterator[TestClient]:
    """The app over ``db`` whose clock always says ``now`` (every answer's generated_at)."""
    settings = WebSettings(db=db, allowed_hosts=(TEST_HOST,))
    with TestClient(create_app(settings, clock=lambda: now), raise_server_exceptions=False) as client:
        yield client


def time_tag(iso: str, shown: str) -> str:
    exact = datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f'<time datetime="{iso}" title="{exact}">{shown}</time>'


def test_pages_show_times_relative_to_their_generated_at_with_the_exact_time_on_hover(played_db: str) -> None:
    for web in client_for(played_db):  # the newest game, and when it finished (as the JSON says)
        newest = web.get(f"/t/{TOURNAMENT}/games.json").json()["games"][0]
    number, finished = newest["number"], datetime.fromisoformat(newest["finished_at"])
    now = finished + timedelta(minutes=3, seconds=20)
    for web in clocked(played_db, now):
        listed = web.get(f"/t/{TOURNAMENT}/games.json").json()
        assert listed["generated_at"] == now.isoformat(timespec="seconds")
        row = listed["games"][0]
        iso = row["finished_at"]
        assert row["number"] == number and iso == newest["finished_at"]  # the JSON keeps ISO times
        tag = time_tag(iso, "3 min ago")
        games = web.get(f"/t/{TOURNAMENT}/games").text
        found = re.search(rf'<tr data-game="{number}">(.*?)</tr>', games, re.S)
        assert found and tag in found.group(1), found
        # the footer: the last game to finish is the data's freshness (with games played two at a time it
        # may be another than the newest by number)
        latest = max(game["finished_at"] for game in listed["games"] if game["finished_at"])
        latest_tag = time_tag(latest, ago(datetime.fromisoformat(latest), now))
        assert f"data as of {latest_tag}" in games
        for path in (f"/t/{TOURNAMENT}/games/{number}", f"/t/{TOURNAMENT}/bots/{row['seats'][0]['bot']}"):
            assert tag in web.get(path).text, path
        assert latest_tag in web.get("/").text  # the front page: each tournament's last game to finish
    later = now + timedelta(days=2)
    for web in clocked(played_db, later):
        assert time_tag(iso, "2 days ago") in web.get(f"/t/{TOURNAMENT}/games").text


# --- why a game ended, in words ------------------------------------------------------------------


def played(options: RuleOptions, reason: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A game of the engine (each seat plays its last legal move) that ended for ``reason``: its
    result as a referee stores it, and its engine record. The first of 200 seeds that does."""
    for seed in range(200):
        state = new_game(options, seed=seed)
        while not state.is_over:
            state = apply(state, legal_moves(state)[-1])
        assert state.result is not None
        if state.result.reason.value == reason:
            result = {"reason": reason, "scores": list(state.result.scores), "deals": state.result.deals,
                      "winnerSide": -1 if state.result.winner is None else state.result.winner}
            return result, game_record(state)
    raise AssertionError(f"no game of 200 seeds ended by {reason}")


def test_each_reason_reads_as_words_from_the_games_own_data() -> None:
    result, _ = played(RuleOptions(players=2), "target_reached")
    assert reason_words(result) == "reached 21 points"
    result, _ = played(RuleOptions(players=3, max_deals=2), "max_deals")
    assert reason_words(result) == "the deal limit (2 deals)"
    for on_twenty in ("little_casino", "most_spades"):
        options = RuleOptions.from_dict({"players": 2, "on_twenty": on_twenty})
        result, record = played(options, "condition_met")
        sheet = record["deals"][-1]["sheet"]
        side = sheet["condition_winner"]
        on = sheet["scores_after"][side] - sheet["sides"][side]["points"]
        condition = sheet["sides"][side]["restricted"]
        assert condition_win(record) == (condition, on) and on in (18, 19, 20)
        assert condition == {18: "most_cards", 19: "big_casino", 20: on_twenty}[on]
        words = {"most_cards": "most cards", "big_casino": "Big Casino (10♦)", "little_casino": "Little Casino (2♠)",
                 "most_spades": "most spades"}[condition]
        assert reason_words(result, record=record) == f"on {on} points, took {words}"
        assert reason_words(result, record={"wrapped": record}) == "met its condition on 18-20 points"  # no sheet
    forfeit = {"reason": "forfeit", "failures": [{"kind": "FAILURE_KIND_ILLEGAL_MOVE", "forfeit": True},
                                                 {"seat": 1, "kind": "FAILURE_KIND_TIMEOUT", "forfeit": False}]}
    assert reason_words(forfeit, ["alpha", "beta"]) == "alpha forfeited (illegal move)"  # seat 0: left out of JSON
    assert reason_words(None) == "" and reason_words({"reason": "something_new"}) == "something new"


def test_every_page_says_why_a_game_ended_in_the_same_words(played_db: str) -> None:
    for web in client_for(played_db):
        rows = web.get(f"/t/{TOURNAMENT}/games.json").json()["games"]
        assert rows
        html = web.get(f"/t/{TOURNAMENT}/games").text
        for row in rows:
            number = row["number"]
            record = web.get(f"/t/{TOURNAMENT}/games/{number}/record").json()
            expected = reason_words(record["result"], [s["bot"] for s in row["seats"]], record)
            assert row["reason"] == record["result"]["reason"] and row["reason_words"] == expected, number
            assert expected and "_" not in expected
            game = web.get(f"/t/{TOURNAMENT}/games/{number}.json").json()["game"]
            assert game["reason_words"] == expected and game["result"]["reason"] == row["reason"]
            final = web.get(f"/t/{TOURNAMENT}/games/{number}/states").json()["views"][-1]["final"]
            assert final["reason"] == row["reason"] and final["reason_words"] in final["text"]
            assert f'<span class="reason">{expected}</span>' in html.replace("&#39;", "'")
            assert f"</strong>: {expected}" in web.get(f"/t/{TOURNAMENT}/games/{number}").text


# --- /live's scores ------------------------------------------------------------------------------


def test_live_shows_each_running_games_scores_so_far(played_db: str, tmp_path: Path) -> None:
    """Three running games of a new tournament, each with a record so far cut from a played game:
    before its first deal ends (0 each), just after it ends, and in a later deal. /live's scores
    are those the replay viewer shows at that step, in its JSON and its HTML."""
    source = read_store(played_db)
    try:
        tid = source.tournament_id(TOURNAMENT)
        assert tid is not None
        record = max((source.game(tid, g.number)[1] for g in source.games(tid)),
                     key=lambda r: len(r["engine"]["deals"]) if r else 0)
    finally:
        source.close()
    assert record is not None and len(record["engine"]["deals"]) >= 3
    first, second = (len(d["moves"]) for d in record["engine"]["deals"][:2])
    cuts = {1: 5, 2: first, 3: first + second + 3}
    url = f"sqlite:///{tmp_path / 'live.db'}"
    store = Store(url)
    try:
        tid = store.create_tournament("watch", "0" * 64, {"players": 2}, [("a", "x", None, {}), ("b", "x", None, {})])
        games = [type("G", (), {"number": n, "set_number": n, "deck_seed": n, "seat_bots": (0, 1)})() for n in cuts]
        store.add_games(tid, 1, games)
        tasks = store.claim(tid, len(cuts))
        store.put_live([LiveEntry(t.id, t.attempt, cuts[t.number], json.dumps(running(record, cuts[t.number])))
                        for t in tasks])
    finally:
        store.close()
    for web in client_for(url):
        listed = {g["number"]: g for g in web.get("/live.json").json()["games"]}
        assert set(listed) == set(cuts)
        for number, plays in cuts.items():
            view = replay_views(running(record, plays), ["a", "b"])[-1]
            assert (listed[number]["scores"], listed[number]["deal"], listed[number]["plays"]) == (
                view["scores"], view["deal"], plays), number
        assert listed[1]["scores"] == [0, 0] and listed[2]["scores"] == record["engine"]["deals"][0]["sheet"]["scores_after"]
        assert listed[3]["deal"] == 3
        html = web.get("/live").text
        for number, game in listed.items():
            found = re.search(rf'<tr data-game="{number}".*?<td class="num scores">([^<]*)</td>', html, re.S)
            assert found and found.group(1) == "–".join(str(v) for v in game["scores"]), number


# --- the nav --------------------------------------------------------------------------------------


NAV_USER = re.compile(r'<nav class="user" id="nav-user".*?</nav>', re.S)


def nav(html: str) -> str:
    found = NAV_USER.search(html)
    assert found, html[:2000]
    return found.group(0)


def test_the_nav_says_who_is_logged_in_on_every_page_and_logs_out(ladder_db: str, tokens: dict[str, str]) -> None:  # noqa: F811
    for web in app(ladder_db):
        anonymous = web.get("/kits").text
        assert 'id="nav-login"' in nav(anonymous) and "Logged in" not in anonymous
        assert 'id="nav-submit"' in anonymous  # submission is open here
        csrf = log_in(web, tokens["alice"])
        for path in ("/submit", "/", "/kits", "/live", f"/t/{LADDER}", "/login", "/no/such/page"):
            answer = web.get(path)
            shown = nav(answer.text)
            assert 'Logged in as <a href="/me"><strong id="nav-user-name">alice</strong></a>' in shown, path
            assert f'name="csrf" value="{csrf}"' in shown and 'action="/logout"' in shown, path
            assert 'id="nav-login"' not in shown and 'id="nav-submit"' in answer.text, path
        out = web.post("/logout", data={"csrf": csrf}, follow_redirects=False)
        assert out.status_code == 303
        assert 'id="nav-login"' in nav(web.get("/submit", follow_redirects=True).text)


def test_the_nav_has_no_submit_link_where_submission_is_closed(web: TestClient) -> None:
    html = web.get(f"/t/{TOURNAMENT}").text
    assert 'id="nav-submit"' not in html and 'href="/login?next=%2Ft%2Fruns"' in nav(html)
    assert f'<nav class="crumbs" aria-label="tournament"><a href="/t/{TOURNAMENT}"' in html


