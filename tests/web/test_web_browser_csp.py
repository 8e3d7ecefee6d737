"""The app's content security policy in a real browser (headless Chromium over `arena web` as a
process): another page cannot frame the login form; what used inline handlers (the tournament
picker, the footer's JSON link) works from the app's own files. Every browser test's ``page``
also fails on any violation of the policy (tests/web/browser_support.py), so the replay viewer
and the live pages are checked under it by their own tests."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from arena.store.store import Store
from tests.web.browser_support import WebServer, open_page, serve

if TYPE_CHECKING:  # the module imports without playwright: its tests then skip (browser_support says why)
    from playwright.sync_api import Browser, Page

WAIT_S = 20.0


def test_another_page_cannot_frame_the_login_form(browser: Browser, web_server: WebServer) -> None:
    with open_page(browser) as (page, watch):
        page.set_content(f'<h1>a page elsewhere</h1><iframe id="victim" src="{web_server.url("/login")}"></iframe>')
        form = page.frame_locator("#victim").locator("input[name=token]")
        deadline = time.monotonic() + WAIT_S
        # until the browser has either refused the frame (saying so on the console) or shown the form
        while not any("frame-ancestors" in c or "X-Frame-Options" in c for c in watch.csp) and form.count() == 0:
            assert time.monotonic() < deadline, "the frame neither loaded nor was refused"
            page.wait_for_timeout(50)
        assert form.count() == 0, "the login form is shown inside another site's page"
        assert any("frame-ancestors" in c for c in watch.csp), watch.csp
        watch.csp.clear()  # refusing the frame is what was wanted; nothing else may be refused
        assert watch.problems() == []


@pytest.fixture(scope="module")
def two_tournaments(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    folder = tmp_path_factory.mktemp("two")
    db = f"sqlite:///{folder / 'two.db'}"
    store = Store(db)
    try:
        for name in ("autumn", "spring"):
            store.create_tournament(name, "0" * 64, {"players": 2}, [("a", "true", None, {}), ("b", "true", None, {})])
    finally:
        store.close()
    with serve(db, folder) as server:
        yield server


def test_the_tournament_picker_and_the_json_link_work_under_the_policy(page: Page,
                                                                       two_tournaments: WebServer) -> None:
    answer = page.goto(two_tournaments.url("/t/autumn"))
    assert answer is not None and answer.status == 200
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    with page.expect_navigation():
        page.locator("#pick").select_option(label="spring")
    assert page.url == two_tournaments.url("/t/spring")
    assert page.locator("h1").inner_text() == "spring"
    with page.expect_navigation():
        page.get_by_role("link", name="this page as JSON").click()
    assert page.url == two_tournaments.url("/t/spring.json")
    # the page fixture fails the test on any violation of the policy
