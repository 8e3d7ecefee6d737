"""The web app's pages in a real browser (headless Chromium over `arena web` as a process, over a
real finished tournament): the leaderboard in rating order, the bot page's chart, the replay
viewer stepped with the keyboard against `arena show --full` and played by itself, wide tables on
a phone, the same nav everywhere. Screenshots at desktop and phone widths (ARENA_WEB_SCREENSHOTS=DIR
keeps them: docs/web/)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from arena.play.runner import current_standings
from arena.store.store import Store
from tests.web.browser_support import PHONE, WebServer, screenshot
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


def test_autoplay_steps_through_a_game_at_the_chosen_speed_and_pauses(page: Page, web_server: WebServer) -> None:
    page.goto(web_server.url(f"/t/{TOURNAMENT}/games/1"))
    page.wait_for_function("() => window.viewer && window.viewer.views.length > 20")
    assert page.evaluate("window.viewer.step") == 0 and page.evaluate("window.viewer.playing") is False
    page.select_option("#speed", "4")
    page.click("#play-pause")
    page.wait_for_function("() => window.viewer.step >= 3")
    assert page.locator("#play-pause").get_attribute("aria-pressed") == "true"
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press(" ")  # space pauses
    assert page.evaluate("window.viewer.playing") is False
    paused = page.evaluate("window.viewer.step")
    page.wait_for_timeout(1000)  # four plays' time at 4×: none is taken while paused
    assert page.evaluate("window.viewer.step") == paused and page.url.endswith(f"#play-{paused}")
    assert page.locator("#play-pause").get_attribute("aria-pressed") == "false"
    page.keyboard.press(" ")  # and plays on from there
    page.wait_for_function(f"() => window.viewer.step > {paused}")
    page.keyboard.press(" ")
    page.keyboard.press("ArrowRight")  # the keys still step
    stepped = page.evaluate("window.viewer.step")
    page.keyboard.press("ArrowLeft")
    assert page.evaluate("window.viewer.step") == stepped - 1
    # played to the end, it stops there by itself
    last = page.evaluate("window.viewer.views.length - 1")
    page.locator("#slider").fill(str(last - 2))
    page.click("#play-pause")
    page.wait_for_function(f"() => window.viewer.step === {last} && !window.viewer.playing")
    assert page.url.endswith(f"#play-{last}") and page.locator("#final").is_visible()


@pytest.mark.parametrize("path, key", [
    (f"/t/{TOURNAMENT}/games", "table.games td.key a.game-link"),  # a game's number, its link
    (f"/t/{TOURNAMENT}", "#standings td.key a"),  # a bot's name
])
def test_a_wide_table_scrolls_on_a_phone_with_its_link_in_view(page: Page, web_server: WebServer, path: str,
                                                               key: str) -> None:
    page.set_viewport_size(PHONE)  # type: ignore[arg-type]
    page.goto(web_server.url(path))
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # the page itself fits
    scrolled = page.evaluate("(sel) => { const box = document.querySelector(sel).closest('.scroll');"
                             " box.scrollLeft = box.scrollWidth; return box.scrollLeft; }", key)
    assert scrolled > 0  # the table is wider than the phone: it scrolls in its box
    link = page.locator(key).first
    box = link.bounding_box()
    assert box is not None and 0 <= box["x"] and box["x"] + box["width"] <= PHONE["width"], box
    # and it is on top there (no other column drawn over it): the point at its middle is the link
    assert page.evaluate("([sel, x, y]) => document.elementFromPoint(x, y).closest('a') === document.querySelector(sel)",
                         [key, box["x"] + box["width"] / 2, box["y"] + box["height"] / 2])
    if "games" in path:
        page.evaluate("(sel) => { document.querySelector(sel).closest('.scroll').scrollLeft = 0; }", key)
        screenshot(page, "games")


SITE_PAGES = ("/", f"/t/{TOURNAMENT}", f"/t/{TOURNAMENT}/games", f"/t/{TOURNAMENT}/bots/greedy",
              f"/t/{TOURNAMENT}/games/1", "/live", "/kits", "/login", "/no/such/page")


def test_the_nav_is_the_same_on_every_page(page: Page, web_server: WebServer) -> None:
    shown = set()
    for path in SITE_PAGES:
        page.goto(web_server.url(path))
        site = page.locator("header.top nav.site a")
        shown.add((tuple(site.nth(i).inner_text() for i in range(site.count())),
                   page.locator("header.top nav.user").inner_text().strip()))
        crumbs = page.locator("nav.crumbs")
        assert crumbs.count() == (1 if path.startswith(f"/t/{TOURNAMENT}") else 0), path
        if path == "/kits":
            screenshot(page, "kits")
        if path == "/login":
            screenshot(page, "login")
    assert shown == {(("Tournaments", "Live", "Kits"), "Log in")}  # no Submit: submission is closed here
    page.goto(web_server.url(f"/t/{TOURNAMENT}/games"))
    with page.expect_navigation():
        page.locator("#nav-login").click()
    assert page.url == web_server.url(f"/login?next=%2Ft%2F{TOURNAMENT}%2Fgames")  # and back here after it
