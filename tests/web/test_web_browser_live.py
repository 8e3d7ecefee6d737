"""Live games in a real browser: a real `arena run` holds its game at chosen turns (a gated bot)
while headless Chromium watches /live and the game's replay page over `arena web` as a process;
each released turn's plays appear in the open viewer, and the end shows the result."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tests.web.browser_support import screenshot, serve
from tests.web.test_web_live import NAME, held_run

if TYPE_CHECKING:  # the module imports without playwright: its tests then skip (browser_support says why)
    from playwright.sync_api import Page

WAIT_MS = 90_000  # bounded waits for what a loaded machine may take seconds to do


def test_the_live_page_and_the_viewer_show_a_running_games_plays_as_they_happen(page: Page, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'live.db'}"
    with held_run(tmp_path, url) as (run, gates):
        with serve(url, tmp_path) as server:
            page.goto(server.url("/live"))
            # the page redraws itself from /live.json: the held game appears with its plays so far
            # (at its gated bot's turn 3: two turns each, and the greedy bot's third when it moves first)
            page.wait_for_function("() => [...document.querySelectorAll('#live-games tbody tr')]"
                                   ".some((r) => Number(r.cells[3].textContent) >= 4)", timeout=WAIT_MS)
            row = page.locator("#live-games tbody tr").first
            assert row.locator("td").nth(2).inner_text() == "gated · greedy"
            held = int(row.locator("td").nth(3).inner_text())
            assert held in (4, 5)
            screenshot(page, "live")
            with page.expect_navigation():
                row.locator("td").nth(1).locator("a").click()
            assert page.url.startswith(server.url(f"/t/{NAME}/games/1"))
            page.wait_for_function(f"() => window.viewer && window.viewer.views.length === {held + 1}",
                                   timeout=WAIT_MS)
            page.keyboard.press("End")
            (gates / "turn-3").touch()  # the gated bot plays its turn 3, the greedy bot answers
            page.wait_for_function(f"() => window.viewer.views.length >= {held + 3}", timeout=WAIT_MS)
            assert page.evaluate("window.viewer.step") == page.evaluate("window.viewer.views.length - 1")  # followed
            screenshot(page, "replay-live")
            (gates / "turn-4").touch()  # and on to the end
            page.wait_for_function("() => document.getElementById('live-notice').textContent.includes('ended')"
                                   " && !document.getElementById('final').hidden", timeout=WAIT_MS)
            assert "wins" in page.locator("#final").inner_text() or "draw" in page.locator("#final").inner_text()
        _, err = run.communicate(timeout=180)
        assert run.returncode == 0, err.decode(errors="replace")[-2000:]
