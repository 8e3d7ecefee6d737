"""Numbers a request gives, in its path (game numbers, submission ids) or its query (the game
list's ``before`` and ``after``), are bounded: out of range, negative, not ASCII digits or too long
for ``int`` is a 404 for a path (no such game) and a 400 saying why for a query, never a 500
(2**63 reached SQLite as an OverflowError; ``str.isdigit`` took ``²``, which ``int`` refuses)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from arena.store.store import Store
from arena.store.users import add_user
from arena.web.settings import MAX_ID, parse_id
from tests.web.web_support import TOURNAMENT, client_for

BAD_NUMBERS = [str(2**63), str(2**64), "１２", "²", "٣", "-1", "9" * 5000]


def test_parse_id_takes_ascii_digits_up_to_the_columns_range() -> None:
    assert [parse_id(t) for t in ("0", "12", "007", str(MAX_ID))] == [0, 12, 7, MAX_ID]
    assert [parse_id(t) for t in [*BAD_NUMBERS, str(MAX_ID + 1), "", " 1", "1e3", "0x1"]] == [None] * 12


@pytest.mark.parametrize("number", BAD_NUMBERS + ["0", str(MAX_ID), str(MAX_ID + 1)])
@pytest.mark.parametrize("tail", ["", "/states", "/record", "/events", ".json"])
def test_a_game_number_out_of_range_is_a_404(web: TestClient, number: str, tail: str) -> None:
    answer = web.get(f"/t/{TOURNAMENT}/games/{number}{tail}")
    assert answer.status_code == 404, (number, tail, answer.text[:300])
    assert "Traceback" not in answer.text


@pytest.mark.parametrize("param", ["before", "after"])
@pytest.mark.parametrize("value", BAD_NUMBERS + [str(MAX_ID + 1), "1.5", " 3"])
def test_a_bad_page_number_is_a_400_saying_why(web: TestClient, param: str, value: str) -> None:
    answer = web.get(f"/t/{TOURNAMENT}/games.json", params={param: value})
    assert answer.status_code == 400, answer.text[:300]
    assert f"{param} must be a game number from 0 to {MAX_ID}" in answer.json()["error"]


@pytest.mark.parametrize("param", ["before", "after"])
def test_page_numbers_at_the_ends_of_the_range(web: TestClient, param: str) -> None:
    for value in ("0", str(MAX_ID)):
        answer = web.get(f"/t/{TOURNAMENT}/games.json", params={param: value})
        assert answer.status_code == 200, (value, answer.text[:300])
    assert len(web.get(f"/t/{TOURNAMENT}/games.json", params={"before": str(MAX_ID)}).json()["games"]) == 12


@pytest.fixture
def user_web(tmp_path: Path) -> Iterator[tuple[TestClient, str]]:
    """The app over a database with one user (a submission's page needs one): (client, her token)."""
    url = f"sqlite:///{tmp_path / 'users.db'}"
    store = Store(url)
    token = add_user(store, "alice")
    store.close()
    for web in client_for(url):
        yield web, token


@pytest.mark.parametrize("number", BAD_NUMBERS + ["0", str(MAX_ID + 1)])
def test_a_submission_id_out_of_range_is_a_404(user_web: tuple[TestClient, str], number: str) -> None:
    web, token = user_web
    answer = web.get(f"/submissions/{number}.json", headers={"authorization": f"Bearer {token}"})
    assert answer.status_code == 404, answer.text[:300]
