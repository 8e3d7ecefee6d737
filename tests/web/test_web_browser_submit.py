"""Submission in a real browser: a user logs in with the token `arena users add` gave, downloads a
starter kit from the submit page, uploads it through the form of `arena web --submit LADDER` (a
process), watches the verdict of the real check (the kit built and played in the real sandbox),
and finds the new version on the ladder's leaderboard."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from arena.play.archives import CACHE_ENV
from arena.store.store import Store
from arena.store.users import add_user
from tests.web.browser_support import WebServer, screenshot, serve
from tests.web.test_web_submit import LADDER, TIME_CONTROL

if TYPE_CHECKING:  # the module imports without playwright: its tests then skip (browser_support says why)
    from playwright.sync_api import Page

CHECK_WAIT_MS = 240_000  # the check's real sandboxed games on a loaded machine; bounded


@pytest.fixture(scope="module")
def submit_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WebServer, str, str, Path]]:
    """`arena web --submit` over a database with an empty ladder and one user: (server, db, token, archive)."""
    folder = tmp_path_factory.mktemp("submit")
    db = f"sqlite:///{folder / 'ladder.db'}"
    store = Store(db)
    try:
        store.create_tournament(LADDER, "fingerprint", {"players": 2, "time_control": TIME_CONTROL}, [])
        token = add_user(store, "alice")
    finally:
        store.close()
    upload = folder / "greedy.tar.gz"  # where the browser's download is saved
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_ENV, str(folder / "cache"))  # the server's archive cache, in this test's folder
        with serve(db, folder, "--submit", LADDER) as server:
            yield server, db, token, upload


def test_a_submission_is_accepted_checked_and_enters_the_ladder(
        page: Page, submit_server: tuple[WebServer, str, str, Path]) -> None:
    server, db, token, upload = submit_server
    page.goto(server.url("/submit"))
    assert page.url.startswith(server.url("/login"))  # submitting needs a user: to the login form first
    page.fill("input[name=token]", token)
    with page.expect_navigation():
        page.click("form.stacked button[type=submit]")
    assert page.url == server.url("/submit")
    # the nav says who is logged in, offers to log out, and no longer to log in
    assert page.locator("#nav-user-name").inner_text() == "alice"
    assert page.locator("header.top nav.user button", has_text="Log out").is_visible()
    assert page.locator("#nav-login").count() == 0 and page.locator("#nav-submit").is_visible()
    screenshot(page, "submit")
    with page.expect_download() as download:  # the greedy kit, from the page's list of starter kits
        page.click("#kits a[href$='/greedy.tar.gz']")
    download.value.save_as(upload)
    page.set_input_files("input[name=archive]", str(upload))
    with page.expect_navigation():
        page.click("form.stacked button[type=submit]")
    assert "/submissions/" in page.url
    # the page refreshes itself while the check runs
    page.wait_for_function("() => !document.querySelector('h1 .status-checking')", timeout=CHECK_WAIT_MS)
    assert page.locator("h1 .status-accepted").inner_text() == "accepted", page.locator("main").inner_text()
    assert "alice.v1" in page.locator("main").inner_text()
    screenshot(page, "submission")
    page.goto(server.url(f"/t/{LADDER}"))
    assert page.locator("#standings tbody tr").first.get_attribute("data-bot") == "alice.v1"
    assert page.locator("#nav-user-name").inner_text() == "alice"  # on every page
    with page.expect_navigation():  # the nav's Log out (a POST with the session's CSRF token)
        page.locator("header.top nav.user button", has_text="Log out").click()
    assert page.locator("#nav-login").is_visible() and page.locator("#nav-user-name").count() == 0
    store = Store(db, read_only=True)
    try:
        tid = store.tournament_id(LADDER)
        assert tid is not None and [(b.name, b.active) for b in store.bots(tid)] == [("alice.v1", True)]
    finally:
        store.close()
