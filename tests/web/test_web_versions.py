"""Versions on the web: a user's bot page lists their versions with ratings and which one plays;
its owner rolls back to an earlier clean version or retires the bot with the page's forms (CSRF)
or a bearer token; another user, a rejected version, a stale form and a server that does not take
submissions are refused with a line that says why. The database is real (SQLite), the versions
are made by the store's own submission functions; no game is needed to change the pool."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update
from starlette.testclient import TestClient

from arena.play.archives import CACHE_ENV
from arena.store.models import Bot, Rating, User
from arena.store.store import Store
from arena.store.submissions import accept, new_submission, reject
from arena.store.users import add_user
from tests.web.test_web_submit import LADDER, TIME_CONTROL, bearer, csrf_of, log_in
from tests.web.web_support import client_for


@pytest.fixture
def ladder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A ladder with the operator's bot and alice's versions 1 (rated, out of the pool), 2
    (rejected) and 3 (playing); bob and an operator too."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    url = f"sqlite:///{tmp_path / 'ladder.db'}"
    store = Store(url)
    try:
        tid = store.create_tournament(LADDER, "fingerprint", {"players": 2, "time_control": TIME_CONTROL}, [])
        store.add_bot(tid, "greedy", "python greedy_bot.py")
        tokens = {name: add_user(store, name, operator=name == "op") for name in ("alice", "bob", "op")}
        with store.session() as s:
            alice = s.scalar(select(User.id).where(User.name == "alice"))
        for version in (1, 2, 3):
            row = new_submission(store, alice, tid, f"{version:064x}", b"archive", 1, "package")
            if version == 2:
                reject(store, row.id, "its bot crashed at its first move", None)
            else:
                accept(store, row.id, None)
        with store.session() as s, s.begin():  # v1's rating after its games (they stay whatever plays)
            v1 = s.scalar(select(Bot.id).where(Bot.name == "alice.v1"))
            s.execute(update(Rating).where(Rating.bot_id == v1).values(mu=31.5, sigma=1.5, games=40))
    finally:
        store.close()
    return {"db": url, "tokens": tokens, "tid": tid}


@pytest.fixture
def web(ladder: dict[str, Any]) -> Iterator[TestClient]:
    yield from client_for(ladder["db"], submit=LADDER, check_games=1)


def active(ladder: dict[str, Any]) -> list[str]:
    store = Store(ladder["db"], read_only=True)
    try:
        return [b.name for b in store.bots(ladder["tid"], active_only=True)]
    finally:
        store.close()


def test_the_bot_page_lists_the_versions_with_their_ratings_and_which_plays(web: TestClient,
                                                                            ladder: dict[str, Any]) -> None:
    page = web.get("/t/open/bots/alice.v1.json").json()
    listed = {v["bot"]: v for v in page["versions"]["versions"]}
    assert [v["bot"] for v in page["versions"]["versions"]] == ["alice.v3", "alice.v2", "alice.v1"]
    assert page["versions"]["active"] == "alice.v3" and listed["alice.v3"]["active"]
    assert listed["alice.v1"] == {"version": 1, "bot": "alice.v1", "status": "accepted", "active": False,
                                  "rating": 27.0, "mu": 31.5, "sigma": 1.5, "games": 40,
                                  "url": "/t/open/bots/alice.v1"}
    assert listed["alice.v2"]["status"] == "rejected" and listed["alice.v2"]["url"] is None
    assert page["versions"]["retire_url"] is None and "csrf" not in page, "the public gets no form"
    assert "versions" not in web.get("/t/open/bots/greedy.json").json(), "the operator's bot has no versions"
    mine = web.get("/t/open/bots/alice.v1.json", headers=bearer(ladder["tokens"]["alice"])).json()["versions"]
    assert mine["retire_url"] == "/t/open/owner/alice.v3/retire"
    assert [v.get("activate_url") for v in mine["versions"]] == [None, None, "/t/open/owner/alice.v1/activate"]
    assert "activate_url" not in str(web.get("/t/open/bots/alice.v1.json", headers=bearer(ladder["tokens"]["bob"])).json())


def test_the_owner_rolls_back_and_retires_with_the_pages_forms(web: TestClient, ladder: dict[str, Any]) -> None:
    log_in(web, ladder["tokens"]["alice"])
    html = web.get("/t/open/bots/alice.v1").text
    assert re.search(r'<form method="post" action="/t/open/owner/alice.v1/activate"', html), html
    answer = web.post("/t/open/owner/alice.v1/activate", data={"csrf": csrf_of(html)}, follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/t/open/bots/alice.v1", answer.text
    assert active(ladder) == ["greedy", "alice.v1"]
    html = web.get("/t/open/bots/alice.v1").text
    assert "<strong>playing</strong>" in html and 'action="/t/open/owner/alice.v1/retire"' in html
    assert 'action="/t/open/owner/alice.v3/activate"' in html, "back to the newest is one more click"
    stale = web.post("/t/open/owner/alice.v1/retire", data={"csrf": "not-the-token"})
    assert stale.status_code == 403 and "CSRF" in stale.text
    answer = web.post("/t/open/owner/alice.v1/retire", data={"csrf": csrf_of(html)}, follow_redirects=False)
    assert answer.status_code == 303 and active(ladder) == ["greedy"]
    again = web.post("/t/open/owner/alice.v1/retire", data={"csrf": csrf_of(html)})
    assert again.status_code == 409 and "no version of alice&#39;s is in the pool" in again.text
    store = Store(ladder["db"], read_only=True)
    try:  # every version's rating stays
        ratings = store.ratings(ladder["tid"])
        assert (ratings["alice.v1"].mu, ratings["alice.v1"].sigma) == (31.5, 1.5) and "alice.v3" in ratings
    finally:
        store.close()


def test_the_json_api_answers_the_versions_as_they_now_stand(web: TestClient, ladder: dict[str, Any]) -> None:
    answer = web.post("/t/open/owner/alice.v1/activate", headers=bearer(ladder["tokens"]["alice"]))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["version"] == 1 and body["activated"] == "alice.v1" and body["replaced"] == "alice.v3"
    assert body["active"] == "alice.v1" and [v["active"] for v in body["versions"]] == [False, False, True]
    retired = web.post("/t/open/owner/alice.v1/retire", headers=bearer(ladder["tokens"]["alice"])).json()
    assert retired["retired"] == "alice.v1" and retired["active"] is None
    # an operator may do it for anyone
    back = web.post("/t/open/owner/alice.v3/activate", headers=bearer(ladder["tokens"]["op"]))
    assert back.status_code == 200 and back.json()["active"] == "alice.v3" and active(ladder) == ["greedy", "alice.v3"]


@pytest.mark.parametrize(("who", "path", "status", "says"), [
    ("bob", "/t/open/owner/alice.v1/activate", 403, "another user's bot"),
    ("bob", "/t/open/owner/alice.v3/retire", 403, "another user's bot"),
    ("bob", "/t/open/owner/alice.v2/activate", 404, 'no bot named "alice.v2"'),
    ("alice", "/t/open/owner/alice.v2/activate", 409, "alice.v2 cannot play: its check rejected it"),
    ("alice", "/t/open/owner/alice.v3/activate", 409, "alice.v3 is already the active version"),
    ("alice", "/t/open/owner/alice.v9/activate", 404, "alice has no version 9 in this ladder"),
    ("alice", "/t/open/owner/greedy/retire", 403, "the operator's bot"),
    ("alice", "/t/open/owner/alice.v1/delete", 404, "activate and retire"),
    (None, "/t/open/owner/alice.v1/activate", 401, "log in"),
], ids=["other-user", "other-user-retire", "other-users-rejected", "rejected", "already", "none", "operators-bot",
        "no-such-action", "nobody"])
def test_refusals_say_why_and_change_nothing(web: TestClient, ladder: dict[str, Any], who: str | None, path: str,
                                            status: int, says: str) -> None:
    headers = bearer(ladder["tokens"][who]) if who else {"accept": "application/json"}
    answer = web.post(path, headers=headers)
    assert answer.status_code == status, answer.text
    assert says in answer.json()["error"], answer.json()
    assert active(ladder) == ["greedy", "alice.v3"]


def test_a_server_that_takes_no_submissions_changes_no_version(ladder: dict[str, Any]) -> None:
    for web in client_for(ladder["db"]):
        answer = web.post("/t/open/owner/alice.v1/activate", headers=bearer(ladder["tokens"]["alice"]))
        assert answer.status_code == 404 and "arena web --submit LADDER" in answer.json()["error"]
        assert "activate_url" not in str(web.get("/t/open/bots/alice.v1.json",
                                                 headers=bearer(ladder["tokens"]["alice"])).json())
    assert active(ladder) == ["greedy", "alice.v3"]


def test_the_owners_private_page_offers_the_same_forms(web: TestClient, ladder: dict[str, Any]) -> None:
    page = web.get("/t/open/owner/alice.v3.json", headers=bearer(ladder["tokens"]["alice"])).json()
    assert {v["bot"]: v["activate_url"] for v in page["versions"]} == {
        "alice.v3": None, "alice.v1": "/t/open/owner/alice.v1/activate"}
    assert page["retire_url"] == "/t/open/owner/alice.v3/retire"
    log_in(web, ladder["tokens"]["alice"])
    html = web.get("/t/open/owner/alice.v3").text
    answer = web.post("/t/open/owner/alice.v1/activate", data={"csrf": csrf_of(html)}, follow_redirects=False)
    assert answer.status_code == 303 and active(ladder) == ["greedy", "alice.v1"]
