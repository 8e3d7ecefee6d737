"""Challenges through the web app (arena/web/pages/challenges.py, docs/challenges.md), over a real
SQLite ladder through the ASGI client: a bearer token's JSON request answered 201 with the agreed
JSON, its page and JSON twin; the bot page's form for the bot's owner alone, the one-click challenge
of their previous version through a real login session and its CSRF token; every refusal one line
(not one's bot, an inactive stranger's bot, bad pairs, the quotas with Retry-After), and the
challenge's games left off the front page. The games themselves: tests/arena/test_challenges.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from arena.config import ChallengeSettings
from arena.play.archives import CACHE_ENV
from arena.store.models import Submission, SubmissionStatus, User
from arena.store.store import BotSpec, Store
from arena.store.users import add_user
from tests.web.web_support import client_for

LADDER = "open"
SETTINGS = ChallengeSettings(in_flight=2, games_per_day=20, max_pairs=8)
TIME_CONTROL = {"move_time_ms": 2000, "grace_ms": 50, "startup_time_ms": 10_000, "cpu_time_ms": 0,
                "bank_initial_ms": 0, "bank_increment_ms": 0}


@pytest.fixture
def ladder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A ladder where alice submitted two versions (v1 retired, v2 in the pool) beside "random";
    bob has no bot. The database's URL and the users' tokens."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    url = f"sqlite:///{tmp_path / 'ladder.db'}"
    store = Store(url)
    try:
        names = ("alice.v1", "alice.v2", "random")
        tid = store.create_tournament(LADDER, "fingerprint", {"players": 2, "time_control": TIME_CONTROL,
                                                              "challenges": SETTINGS.to_stored()},
                                      [BotSpec(name, "python bot.py", None, {}) for name in names])
        tokens = {name: add_user(store, name) for name in ("alice", "bob")}
        bots = {b.name: b for b in store.bots(tid)}
        store.remove_bot(tid, "alice.v1")
        with store.session() as s, s.begin():
            alice = s.query(User).filter(User.name == "alice").one()
            for version in (1, 2):
                s.add(Submission(user_id=alice.id, tournament_id=tid, version=version, archive="0" * 64,
                                 command="package", status=SubmissionStatus.ACCEPTED.value,
                                 bot_id=bots[f"alice.v{version}"].id))
    finally:
        store.close()
    return {"db": url, "tokens": tokens}


@pytest.fixture
def web(ladder: dict[str, Any]) -> Iterator[TestClient]:
    yield from client_for(ladder["db"], submit=LADDER)


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}", "accept": "application/json"}


def ask(web: TestClient, token: str, **fields: Any) -> Any:
    return web.post(f"/t/{LADDER}/challenges", json=fields, headers=bearer(token))


def test_a_bearer_request_makes_a_challenge_answered_with_its_json(web: TestClient, ladder: dict[str, Any]) -> None:
    answer = ask(web, ladder["tokens"]["alice"], bot="alice.v2", opponent="random", pairs=2)
    assert answer.status_code == 201, answer.text
    made = answer.json()
    assert answer.headers["location"] == f"/t/{LADDER}/challenges/{made['id']}" == made["url"]
    expected = {"version": 1, "id": 1, "tournament": LADDER, "bot": "alice.v2", "opponent": "random",
                "status": "waiting", "pairs_asked": 2, "games_played": 0, "games_failed": 0, "verdict": None,
                "margin": None, "interval": None, "games": [], "finished_at": None}
    assert {k: made[k] for k in expected} == expected and made["created_at"]
    again = web.get(f"/t/{LADDER}/challenges/1.json")
    assert again.status_code == 200
    assert {k: again.json()[k] for k in expected} == expected
    page = web.get(f"/t/{LADDER}/challenges/1")
    assert page.status_code == 200 and 'http-equiv="refresh"' in page.text and "alice.v2</a> v" in page.text
    assert web.get(f"/t/{LADDER}/challenges/2").status_code == 404
    assert web.get("/t/nowhere/challenges/1").status_code == 404
    # its games' tournament is the challenge's, not a tournament of the front page
    assert [t["name"] for t in web.get("/.json").json()["tournaments"]] == [LADDER]
    until = ask(web, ladder["tokens"]["alice"], bot="alice.v2", opponent="alice.v1")  # one's own retired version
    assert until.status_code == 201 and until.json()["pairs_asked"] is None and until.json()["max_pairs"] == 8


@pytest.mark.parametrize("who, fields, status, says", [
    ("bob", {"bot": "alice.v2", "opponent": "random"}, 404, "you have no bot named \"alice.v2\""),
    ("bob", {"bot": "random", "opponent": "alice.v2"}, 404, "you have no bot named \"random\""),
    ("alice", {"bot": "alice.v2", "opponent": "alice.v2"}, 400, "against itself"),
    ("alice", {"bot": "alice.v2", "opponent": "nobody"}, 404, "no active bot named \"nobody\""),
    ("alice", {"bot": "alice.v2", "opponent": "random", "pairs": 0}, 400, "pairs must be from 1 to 8"),
    ("alice", {"bot": "alice.v2", "opponent": "random", "pairs": 9}, 400, "pairs must be from 1 to 8"),
    ("alice", {"bot": "alice.v2", "opponent": "random", "pairs": "many"}, 400, "pairs must be a whole number"),
    ("alice", {"bot": "alice.v2", "opponent": "random", "pairs": "9" * 40}, 400, "pairs must be a whole number"),
    ("alice", {"bot": "alice.v2"}, 400, "opponent must name a bot"),
    ("alice", {"bot": ["alice.v2"], "opponent": "random"}, 400, "bot must name a bot"),
])
def test_a_bad_challenge_is_refused_in_one_line(web: TestClient, ladder: dict[str, Any], who: str,
                                                fields: dict[str, Any], status: int, says: str) -> None:
    answer = ask(web, ladder["tokens"][who], **fields)
    assert answer.status_code == status, answer.text
    assert says in answer.json()["error"] and "\n" not in answer.json()["error"]


def test_a_retired_bot_of_someone_else_cannot_be_challenged(web: TestClient, ladder: dict[str, Any]) -> None:
    store = Store(ladder["db"])
    try:  # bob gets a bot of his own to challenge with
        tid = store.tournament_id(LADDER)
        assert tid is not None
        bob_bot = store.add_bot(tid, "bob.v1", "python bot.py")
        with store.session() as s, s.begin():
            bob = s.query(User).filter(User.name == "bob").one()
            s.add(Submission(user_id=bob.id, tournament_id=tid, version=1, archive="0" * 64, command="package",
                             status=SubmissionStatus.ACCEPTED.value, bot_id=bob_bot.id))
    finally:
        store.close()
    answer = ask(web, ladder["tokens"]["bob"], bot="bob.v1", opponent="alice.v1")
    assert answer.status_code == 404 and "no active bot named \"alice.v1\"" in answer.json()["error"]
    assert ask(web, ladder["tokens"]["bob"], bot="bob.v1", opponent="alice.v2").status_code == 201


def test_the_quotas_refuse_with_429_and_retry_after(web: TestClient, ladder: dict[str, Any]) -> None:
    alice = ladder["tokens"]["alice"]
    assert ask(web, alice, bot="alice.v2", opponent="random").status_code == 201  # holds 16 games of 20
    over_day = ask(web, alice, bot="alice.v2", opponent="random", pairs=3)
    assert over_day.status_code == 429 and int(over_day.headers["retry-after"]) > 0
    assert "play or hold 16 game(s) and this one may play 6: a user may have 20 a day" in over_day.json()["error"]
    assert ask(web, alice, bot="alice.v2", opponent="random", pairs=2).status_code == 201  # 20 of 20
    in_flight = ask(web, alice, bot="alice.v2", opponent="random", pairs=1)
    assert in_flight.status_code == 429 and in_flight.headers["retry-after"] == "60"
    assert "you have 2 challenge(s) waiting or playing" in in_flight.json()["error"]


def test_challenges_need_a_user_and_an_open_ladder(ladder: dict[str, Any]) -> None:
    for web in client_for(ladder["db"]):  # no --submit: nobody's bots can be challenged here
        closed = ask(web, ladder["tokens"]["alice"], bot="alice.v2", opponent="random")
        assert closed.status_code == 404 and "challenges are not open" in closed.json()["error"]
    for web in client_for(ladder["db"], submit=LADDER):
        anonymous = web.post(f"/t/{LADDER}/challenges", json={"bot": "alice.v2", "opponent": "random"},
                             headers={"accept": "application/json"})
        assert anonymous.status_code == 401
        huge = web.post(f"/t/{LADDER}/challenges", content=b"x" * 5000, headers=bearer(ladder["tokens"]["alice"]))
        assert huge.status_code == 413
        other = web.post(f"/t/{LADDER}/challenges", content=b"<x/>",
                         headers={**bearer(ladder["tokens"]["alice"]), "content-type": "text/xml"})
        assert other.status_code == 415


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, html
    return found.group(1)


def log_in(web: TestClient, token: str) -> None:
    form = web.get("/login")
    answer = web.post("/login", data={"token": token, "csrf": csrf_of(form.text), "next": "/"},
                      follow_redirects=False)
    assert answer.status_code == 303, answer.text


def test_the_owner_challenges_their_previous_version_in_one_click(web: TestClient, ladder: dict[str, Any]) -> None:
    assert 'id="challenge-form"' not in web.get(f"/t/{LADDER}/bots/alice.v2").text  # the public sees no form
    log_in(web, ladder["tokens"]["alice"])
    page = web.get(f"/t/{LADDER}/bots/alice.v2").text
    assert 'id="challenge-form"' in page and "Challenge my previous version, alice.v1" in page
    assert '<option value="random">random</option>' in page
    assert web.get(f"/t/{LADDER}/bots/random").text.count('id="challenge-form"') == 0  # not her bot
    # without the session's CSRF token the form is refused
    forged = web.post(f"/t/{LADDER}/challenges", data={"bot": "alice.v2", "opponent": "alice.v1"},
                      follow_redirects=False)
    assert forged.status_code == 403
    clicked = web.post(f"/t/{LADDER}/challenges", data={"csrf": csrf_of(page), "bot": "alice.v2",
                                                        "opponent": "alice.v1", "pairs": "until_decided"},
                       follow_redirects=False)
    assert clicked.status_code == 303 and clicked.headers["location"] == f"/t/{LADDER}/challenges/1"
    made = web.get(f"/t/{LADDER}/challenges/1.json").json()
    assert (made["bot"], made["opponent"], made["pairs_asked"], made["user"]) == ("alice.v2", "alice.v1", None, "alice")
    bob = TestClient(web.app, raise_server_exceptions=False)
    log_in(bob, ladder["tokens"]["bob"])
    assert 'id="challenge-form"' not in bob.get(f"/t/{LADDER}/bots/alice.v2").text
