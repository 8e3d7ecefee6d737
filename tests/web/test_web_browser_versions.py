"""A bot's owner rolls their bot back in a real browser: alice logs in, opens her bot's page, sees
her versions with their ratings, clicks Activate on an earlier one (a POST form with the session's
CSRF token), and the page comes back saying that version plays; then she retires it. `arena web
--submit` over the database of tests/web/test_web_versions.py, Chromium through Playwright."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.store.store import Store
from tests.web.browser_support import screenshot, serve
from tests.web.test_web_submit import LADDER
from tests.web.test_web_versions import ladder  # noqa: F401  (the module's fixture: alice's versions)

if TYPE_CHECKING:  # the module imports without playwright: its tests then skip (browser_support says why)
    from playwright.sync_api import Page


def test_the_owner_rolls_back_and_retires_from_the_bot_page(ladder: dict[str, Any], page: Page,  # noqa: F811
                                                           tmp_path: Path) -> None:
    with serve(ladder["db"], tmp_path, "--submit", LADDER) as server:
        page.goto(server.url("/login"))
        page.fill("input[name=token]", ladder["tokens"]["alice"])
        with page.expect_navigation():
            page.click("form.stacked button[type=submit]")
        page.goto(server.url("/t/open/bots/alice.v3"))
        rows = page.locator("#versions tbody tr")
        assert rows.count() == 3
        assert "playing" in page.locator("#versions tr[data-bot='alice.v3']").inner_text()
        assert "27.00" in page.locator("#versions tr[data-bot='alice.v1']").inner_text(), "its rating, μ − 3σ"
        assert page.locator("#versions tr[data-bot='alice.v2'] button").count() == 0, "a rejected version cannot play"
        screenshot(page, "versions")
        with page.expect_navigation():
            page.locator("#versions tr[data-bot='alice.v1'] button.activate").click()
        assert page.url == server.url("/t/open/bots/alice.v1")
        assert "playing" in page.locator("#versions tr[data-bot='alice.v1']").inner_text()
        assert "out of the pool" in page.locator("#versions tr[data-bot='alice.v3']").inner_text()
        with page.expect_navigation():
            page.locator("#versions button.retire").click()
        assert "No version plays in the ladder now" in page.locator("main").inner_text()
    store = Store(ladder["db"], read_only=True)
    try:
        assert store.bots(ladder["tid"], active_only=True)[0].name == "greedy"
        assert len(store.bots(ladder["tid"], active_only=True)) == 1
    finally:
        store.close()
