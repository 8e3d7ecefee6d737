"""A bot's owner in a real browser: alice logs in, goes from her bot's public page to its private
page, opens one of its games there, and in that game's replay sees her bot's error beside the play
it was made on; logged out, the same play shows nothing of it. Over the tournament of
tests/web/test_web_owner.py (real bot packages played by `arena run`), served by `arena web`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.web.browser_support import WebServer, screenshot, serve
from tests.web.test_web_owner import played  # noqa: F401  (the module's fixture: the played tournament)

if TYPE_CHECKING:  # the module imports without playwright: its tests then skip (browser_support says why)
    from playwright.sync_api import Page


@pytest.fixture(scope="module")
def owner_server(played: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:  # noqa: F811
    with serve(played["db"], tmp_path_factory.mktemp("owner-web")) as server:
        yield server


def test_the_owner_follows_their_bot_to_its_private_page_and_sees_its_errors_in_the_replay(
        owner_server: WebServer, played: dict[str, Any], page: Page) -> None:  # noqa: F811
    server = owner_server
    page.goto(server.url("/login"))
    page.fill("input[name=token]", played["tokens"]["alice"])
    with page.expect_navigation():
        page.click("form.stacked button[type=submit]")
    page.goto(server.url("/t/cup/bots/broken"))
    with page.expect_navigation():
        page.click("a#private-page")
    assert page.url == server.url("/t/cup/owner/broken")
    facts = page.locator("section.version .facts").inner_text()
    assert "errors and 0.0 forfeits per 100 games" in facts, facts
    screenshot(page, "owner")
    with page.expect_navigation():  # its first game listed: one with errors
        page.locator("table.owner-games tbody tr a").first.click()
    assert "/t/cup/owner/broken/games/" in page.url
    assert page.locator("#reports tbody tr").count() > 0
    assert "AttributeError" in page.locator("#reports").inner_text()
    screenshot(page, "owner-game")
    with page.expect_navigation():  # to the game's public replay, still as alice
        page.locator("main h1 a").first.click()
    number = int(page.url.rstrip("/").rsplit("/", 1)[1].split("#")[0])
    views = page.request.get(server.url(f"/t/cup/games/{number}/states")).json()["views"]
    step = next(i for i, v in enumerate(views) if v["play"] and "error" in v["play"].get("report", {}))
    page.goto(server.url(f"/t/cup/games/{number}#play-{step}"))
    page.wait_for_selector("#play .bot-error")
    assert page.locator("#play .bot-error").inner_text().startswith("bot error: AttributeError")
    screenshot(page, "replay-owner")
    with page.expect_navigation():  # logged out, the same play says nothing of it
        page.locator("header.top nav.user button", has_text="Log out").click()
    page.goto(server.url(f"/t/cup/games/{number}#play-{step}"))
    page.wait_for_selector("#play .words")
    assert page.locator("#play .bot-error").count() == 0 and page.locator("#play .bot-note").count() == 0
