"""The web app in a real browser (headless Chromium over `arena web` as a process): the front page,
the 404 page, and bot-chosen text that must stay text. Each page's test takes screenshots at
desktop and phone widths (ARENA_WEB_SCREENSHOTS=DIR keeps them, to refresh docs/web/)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from arena.store.store import Store
from tests.web.browser_support import PHONE, WebServer, png_size, screenshot, serve
from tests.web.web_support import TOURNAMENT

if TYPE_CHECKING:  # the module imports without playwright: its tests then skip (browser_support says why)
    from playwright.sync_api import Page

FELT = "rgb(11, 93, 59)"  # style.css's --felt: the header's colour, so the stylesheet was applied
HOSTILE = '<img src=x onerror=alert(1)><script>alert("t")</script>"\'&amp;'  # a tournament name


def header_colour(page: Page) -> str:
    return page.eval_on_selector("header.top", "e => getComputedStyle(e).backgroundColor")


def fits_phone(page: Page) -> bool:
    """At phone width the page does not scroll sideways (a wide table scrolls in its own box)."""
    page.set_viewport_size(PHONE)  # type: ignore[arg-type]
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


def test_the_front_page_lists_the_tournament_and_its_link_leads_to_it(page: Page, web_server: WebServer) -> None:
    answer = page.goto(web_server.url("/"))
    assert answer is not None and answer.status == 200
    assert page.title() == "Royal Casino Arena" and header_colour(page) == FELT
    link = page.get_by_role("link", name=TOURNAMENT, exact=True)
    assert link.get_attribute("href") == f"/t/{TOURNAMENT}"
    row = page.locator("table.grid tbody tr")
    assert row.count() == 1 and "12" in row.inner_text()  # its 12 games done
    shots = screenshot(page, "front")
    assert png_size(shots["desktop"])[0] == 1280 and png_size(shots["phone"])[0] == 390
    assert fits_phone(page)
    page.set_viewport_size({"width": 1280, "height": 800})
    with page.expect_navigation():
        link.click()
    assert page.url == web_server.url(f"/t/{TOURNAMENT}")
    assert header_colour(page) == FELT  # the leaderboard, or until it is there the app's 404 page


def test_the_404_page_is_in_the_apps_style(page: Page, web_server: WebServer) -> None:
    answer = page.goto(web_server.url("/no/such/page"))
    assert answer is not None and answer.status == 404
    assert page.locator("section.error h1").inner_text() == "404"
    assert header_colour(page) == FELT and "Traceback" not in page.content()
    with page.expect_navigation():
        page.get_by_role("link", name="All tournaments").click()
    assert page.url == web_server.url("/")
    page.go_back()
    screenshot(page, "404")
    assert fits_phone(page)


@pytest.fixture(scope="module")
def hostile_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    """`arena web` over a database whose one tournament has a name made to run script if unescaped."""
    folder = tmp_path_factory.mktemp("hostile")
    db = f"sqlite:///{folder / 'hostile.db'}"
    store = Store(db)
    try:
        store.create_tournament(HOSTILE, "0" * 64, {"players": 2}, [("a", "true", None, {}), ("b", "true", None, {})])
    finally:
        store.close()
    with serve(db, folder) as server:
        yield server


def test_a_hostile_tournament_name_is_shown_as_text(page: Page, hostile_server: WebServer) -> None:
    answer = page.goto(hostile_server.url("/"))
    assert answer is not None and answer.status == 200
    cell = page.locator("table.grid tbody td").first
    assert cell.inner_text() == HOSTILE  # the markup is the name's text, not elements
    assert page.locator("main img").count() == 0 and page.locator("main script").count() == 0
    href = page.locator("table.grid tbody a").first.get_attribute("href")
    assert href is not None and href.startswith("/t/%3Cimg") and "<" not in href and '"' not in href
    shots = screenshot(page, "front-hostile-name")
    assert all(Path(p).stat().st_size > 0 for p in shots.values())
    # the page fixture fails the test if alert() ran (a dialog opened)
