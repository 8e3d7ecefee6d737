"""The app's frame: every page also JSON, error pages in the app's style, freshness, `arena web`'s
refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from arena.errors import UsageError
from arena.web.settings import parse_listen
from tests.support import arena_here
from tests.web.web_support import TOURNAMENT


def test_the_front_page_lists_the_tournament_in_html_and_in_json(web: TestClient) -> None:
    html = web.get("/")
    assert html.status_code == 200 and "text/html" in html.headers["content-type"]
    assert TOURNAMENT in html.text and "data as of" in html.text
    by_suffix, by_accept = web.get("/.json"), web.get("/", headers={"accept": "application/json"})
    assert by_suffix.status_code == by_accept.status_code == 200
    for answer in (by_suffix.json(), by_accept.json()):
        (row,) = answer["tournaments"]
        assert row["name"] == TOURNAMENT and row["games"] == {"done": 12} and row["bots"] == 4
        assert answer["data_as_of"] is not None and answer["data_as_of"] == row["last_game_at"]


def test_an_unknown_page_is_a_404_in_the_apps_style_and_in_json(web: TestClient) -> None:
    html = web.get("/no/such/page")
    assert html.status_code == 404 and "Royal Casino Arena" in html.text and "Traceback" not in html.text
    answer = web.get("/no/such/page.json")
    assert answer.status_code == 404 and answer.json()["status"] == 404


@pytest.mark.parametrize("text", ["8000", "host:80", "127.0.0.1:0", "127.0.0.1:70000", ":80", "127.0.0.1:x"])
def test_a_bad_listen_address_is_refused(text: str) -> None:
    with pytest.raises(UsageError, match="--listen"):
        parse_listen(text)


def test_listen_addresses_in_both_families() -> None:
    assert parse_listen("127.0.0.1:8000") == ("127.0.0.1", 8000)
    assert parse_listen("[::1]:8080") == ("::1", 8080)
    assert parse_listen("localhost:9") == ("localhost", 9)


@pytest.mark.parametrize("args, said", [
    ([], "a tournament file or --db"),
    (["--db", "sqlite:////nonexistent/folder/x.db"], "no database"),
    (["--db", "sqlite:///x.db", "--listen", "nowhere"], "--listen"),
])
def test_arena_web_refuses_in_one_line_with_status_2(args: list[str], said: str, tmp_path: Path) -> None:
    done = arena_here("web", *args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and done.stderr.count("\n") == 1, done.stderr
