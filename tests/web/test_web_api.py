"""The participant API (docs/api.md) through the ASGI client: a user's page, their games, the
owner's page, their submission and their webhook as JSON with their bearer token; refused without
one (401) and, for what is another user's, told apart from nothing (404 or an empty list); a
webhook URL pointing at the server's own networks refused unless the operator allows it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select
from starlette.testclient import TestClient

from arena.store import notices
from arena.store.models import User
from arena.store.store import Store
from arena.store.submissions import accept, new_submission
from arena.store.users import add_user
from tests.notify.test_notify import result_of
from tests.web.test_web_submit import LADDER, TIME_CONTROL, app, csrf_of, log_in

GAMES = 4  # alice.v1 against the operator's bot "house"


@pytest.fixture
def api_db(tmp_path: Any) -> tuple[str, dict[str, str]]:
    """A ladder where alice's accepted submission (alice.v1) played the operator's "house" GAMES
    times; bob has nothing. (The database, the users' tokens.)"""
    url = f"sqlite:///{tmp_path / 'api.db'}"
    store = Store(url)
    try:
        tid = store.create_tournament(LADDER, "f" * 64, {"players": 2, "time_control": TIME_CONTROL},
                                      [("house", "unix:/nowhere/house", None, {})])
        tokens = {name: add_user(store, name) for name in ("alice", "bob")}
        with store.session() as s:
            alice = s.scalar(select(User.id).where(User.name == "alice"))
        row = new_submission(store, alice, tid, "a" * 64, b"archive", 0, "package")
        assert accept(store, row.id, "clean") == "alice.v1"
        store.add_games(tid, 1, [game(n) for n in range(1, GAMES + 1)])
        while tasks := store.claim(tid, 1):
            assert store.finish(tasks[0], result_of(tasks[0], None), {})
    finally:
        store.close()
    return url, tokens


def game(number: int) -> Any:
    from arena.schedule.pairings import ScheduledGame

    seats = (number % 2, 1 - number % 2)
    return ScheduledGame(number=number, set_number=number, deck_seed=number, seat_bots=seats, pairing=(0, 1))


@pytest.fixture
def web(api_db: tuple[str, dict[str, str]]) -> Iterator[TestClient]:
    yield from app(api_db[0])


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def test_a_users_page_lists_their_bots_submissions_and_webhook(web: TestClient, api_db: tuple[str, dict[str, str]]
                                                               ) -> None:
    _, tokens = api_db
    me = web.get("/me.json", headers=bearer(tokens["alice"]))
    assert me.status_code == 200, me.text
    data = me.json()
    assert (data["version"], data["user"], data["operator"], data["webhook"]) == (1, "alice", False, None)
    [bot] = data["bots"]
    assert (bot["bot"], bot["tournament"], bot["active"], bot["version"]) == ("alice.v1", LADDER, True, 1)
    assert bot["rating"]["games"] == 0 and bot["rating"]["mu"] == 25.0  # not rated yet: no rating pass here
    [sub] = data["submissions"]
    assert sub["status"] == "accepted" and sub["url"] == f"/submissions/{sub['id']}" and "report" not in sub
    assert web.get("/me.json").status_code == 401
    assert web.get("/me.json", headers=bearer(tokens["alice"] + "x")).status_code == 401
    other = web.get("/me.json", headers=bearer(tokens["bob"])).json()
    assert other["user"] == "bob" and other["bots"] == [] and other["submissions"] == []
    assert web.get(sub["url"] + ".json", headers=bearer(tokens["alice"])).json()["version"] == 1
    assert web.get(sub["url"] + ".json", headers=bearer(tokens["bob"])).status_code == 404


def test_a_users_games_are_theirs_alone_newest_first(web: TestClient, api_db: tuple[str, dict[str, str]]) -> None:
    _, tokens = api_db
    games = web.get(f"/t/{LADDER}/me/games.json", headers=bearer(tokens["alice"]))
    assert games.status_code == 200, games.text
    rows = games.json()["games"]
    assert [g["number"] for g in rows] == list(range(GAMES, 0, -1))
    assert {g["bot"] for g in rows} == {"alice.v1"} and {g["outcome"] for g in rows} <= {"win", "loss"}
    assert rows[0]["url"] == f"/t/{LADDER}/games/{GAMES}"
    assert rows[0]["owner_url"] == f"/t/{LADDER}/owner/alice.v1/games/{GAMES}"
    older = web.get(f"/t/{LADDER}/me/games.json?before=3", headers=bearer(tokens["alice"])).json()
    assert [g["number"] for g in older["games"]] == [2, 1]
    assert web.get(f"/t/{LADDER}/me/games.json", headers=bearer(tokens["bob"])).json()["games"] == []
    assert web.get(f"/t/{LADDER}/me/games.json").status_code == 401
    assert web.get(f"/t/{LADDER}/me/games.json?before=x", headers=bearer(tokens["alice"])).status_code == 400
    assert web.get("/t/nowhere/me/games.json", headers=bearer(tokens["alice"])).status_code == 404
    # the owner's page, the same way: hers, and nobody else's
    assert web.get(f"/t/{LADDER}/owner/alice.v1.json", headers=bearer(tokens["alice"])).status_code == 200
    assert web.get(f"/t/{LADDER}/owner/alice.v1.json", headers=bearer(tokens["bob"])).status_code == 404


def test_a_webhook_is_set_with_the_secret_shown_once_and_private_addresses_refused(
        web: TestClient, api_db: tuple[str, dict[str, str]]) -> None:
    db, tokens = api_db
    hook = "http://127.0.0.1:9/hook"
    refused = web.post("/me/webhook.json", json={"url": hook}, headers=bearer(tokens["alice"]))
    assert refused.status_code == 400 and "own networks" in refused.json()["error"]
    assert web.post("/me/webhook.json", json={"url": "ftp://x/"}, headers=bearer(tokens["alice"])).status_code == 400
    assert web.post("/me/webhook.json", json={"url": hook}).status_code in (401, 403)
    store = Store(db)
    try:
        with store.engine.begin() as conn:
            notices.set_settings(conn, notices.Settings(allow_private=True))
    finally:
        store.close()
    made = web.post("/me/webhook.json", json={"url": hook}, headers=bearer(tokens["alice"]))
    assert made.status_code == 201, made.text
    assert made.json()["new_webhook"]["url"] == hook and len(made.json()["new_webhook"]["secret"]) == 64
    again = web.get("/me.json", headers=bearer(tokens["alice"])).json()
    assert again["webhook"]["url"] == hook and "secret" not in again["webhook"] and again["new_webhook"] is None
    assert web.get("/me.json", headers=bearer(tokens["bob"])).json()["webhook"] is None
    # a browser's form needs the session's CSRF token
    log_in(web, tokens["alice"])
    assert web.post("/me/webhook", data={"url": ""}, follow_redirects=False).status_code == 403
    csrf = csrf_of(web.get("/me").text)
    cleared = web.post("/me/webhook", data={"url": "", "csrf": csrf}, follow_redirects=False)
    assert cleared.status_code == 200 and "Your webhook: none" in cleared.text


def test_an_accepted_submission_enqueued_its_verdict_for_its_user(api_db: tuple[str, dict[str, str]]) -> None:
    store = Store(api_db[0])
    try:
        with store.engine.connect() as conn:
            [event] = notices.events_of(conn, ["submission.verdict"])
            alice = conn.scalar(select(User.id).where(User.name == "alice"))
    finally:
        store.close()
    assert event["user_id"] == alice
    assert {k: event["data"][k] for k in ("status", "bot", "tournament", "version")} == {
        "status": "accepted", "bot": "alice.v1", "tournament": LADDER, "version": 1}


def test_an_upload_with_a_bearer_token_is_answered_as_json_even_without_asking(
        web: TestClient, api_db: tuple[str, dict[str, str]]) -> None:
    _, tokens = api_db
    refused = web.post("/submit", files={"archive": ("bot.tar.gz", b"not gzip", "application/gzip")},
                       headers=bearer(tokens["bob"]))
    assert refused.status_code == 400 and refused.headers["content-type"] == "application/json"
    assert refused.json()["error"].startswith("the archive ")
    page = web.get("/submit", headers=bearer(tokens["bob"]))  # a page read stays HTML unless JSON is asked for
    assert page.headers["content-type"].startswith("text/html")
