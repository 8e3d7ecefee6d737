"""The web app's pages in a real browser (headless Chromium over `arena web` as a process, over a
real finished tournament): the leaderboard in rating order, the bot page's chart, the replay
viewer stepped with the keyboard against `arena show --full`. Screenshots at desktop and phone
widths (ARENA_WEB_SCREENSHOTS=DIR keeps them: docs/web/)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from arena.play.runner import current_standings
from arena.store.store import Store
from tests.web.browser_support import WebServer, screenshot
from tests.web.test_web_replay import shown_positions
from tests.web.web_support import TOURNAMENT

if TYPE_CHECKING:  # the module imports without playwright: its tests then skip (browser_support says why)
    from playwright.sync_api import Page

# the viewer's #table as `arena show --full` prints a table, read from the cards the page drew
DRAWN_TABLE = """() => {
  const t = document.getElementById("table");
  const codes = (box) => [...box.querySelectorAll(".card")].map((c) => c.dataset.card).join(" ");
  const loose = codes(t.querySelector(".loose"));
  const builds = [...t.querySelectorAll(".build")].map((b) =>
    `${b.dataset.build}[${b.dataset.value} ${b.dataset.kind} P${b.dataset.owner}: ${codes(b)}]`);
  return ["loose: " + (loose || "-"), ...builds].join(" | ");
}"""
DRAWN_HAND = "(seat) => [...document.querySelectorAll(`#hand-${seat} .card`)].map((c) => c.dataset.card)"


@pytest.fixture(scope="module")
def stored(played_db: str) -> dict[str, Any]:
    """What the database says: the standings, each bot's rated games, game 1's record and seats."""
    store = Store(played_db, read_only=True)
    try:
        tid = store.tournament_id(TOURNAMENT)
        assert tid is not None
        names = {b.position: b.name for b in store.bots(tid)}
        row, record = store.game(tid, 1)
        history: dict[str, list[int]] = {}
        for number, bot, _, _ in store.rating_history(tid):
            history.setdefault(bot, []).append(number)
        return {"standings": current_standings(store, tid), "history": history, "record": record,
                "seat_names": [names[p] for p in row.seat_bots]}
    finally:
        store.close()


def test_the_leaderboard_shows_every_bot_in_rating_order(page: Page, web_server: WebServer,
                                                          stored: dict[str, Any]) -> None:
    answer = page.goto(web_server.url(f"/t/{TOURNAMENT}"))
    assert answer is not None and answer.status == 200
    rows = page.locator("#standings tbody tr")
    shown = [rows.nth(i).get_attribute("data-bot") for i in range(rows.count())]
    assert shown == [r.name for r in stored["standings"].rows]  # all four, best conservative rating first
    ratings = [float(rows.nth(i).locator("td").nth(2).inner_text()) for i in range(rows.count())]
    assert ratings == sorted(ratings, reverse=True)
    screenshot(page, "leaderboard")
    with page.expect_navigation():  # a header sorts by its column
        page.locator("#standings thead a", has_text="games").first.click()
    assert "sort=games" in page.url


def test_the_bot_page_chart_has_a_point_per_rated_game(page: Page, web_server: WebServer,
                                                       stored: dict[str, Any]) -> None:
    for name, games in stored["history"].items():
        answer = page.goto(web_server.url(f"/t/{TOURNAMENT}/bots/{name}"))
        assert answer is not None and answer.status == 200
        points = page.locator("svg.chart .rating-point")
        assert [int(points.nth(i).get_attribute("data-game") or -1) for i in range(points.count())] == games
    screenshot(page, "bot")


def test_the_replay_viewer_steps_with_the_keyboard_through_what_arena_show_prints(
        page: Page, web_server: WebServer, stored: dict[str, Any]) -> None:
    positions = shown_positions(stored["record"], stored["seat_names"])
    assert len(positions) > 20
    answer = page.goto(web_server.url(f"/t/{TOURNAMENT}/games/1"))
    assert answer is not None and answer.status == 200
    page.wait_for_function("() => window.viewer && window.viewer.views.length > 0")

    def shows(k: int) -> None:
        hands, table = positions[k]
        page.wait_for_function(f"() => window.viewer.step === {k}")
        assert page.evaluate(DRAWN_TABLE) == table, f"play {k}"
        for seat, hand in enumerate(hands):
            assert page.evaluate(DRAWN_HAND, seat) == hand, f"play {k}, seat {seat}"
        assert page.url.endswith(f"#play-{k}")

    shows(0)
    for k in range(1, len(positions)):  # forward through every play of the game
        page.keyboard.press("ArrowRight")
        shows(k)
    for k in range(len(positions) - 2, len(positions) - 6, -1):  # and back
        page.keyboard.press("ArrowLeft")
        shows(k)
    page.keyboard.press("Home")
    shows(0)
    page.locator("#slider").fill("7")  # the slider goes to a play too
    shows(7)
    screenshot(page, "replay")
