"""Live games in a real browser: a real `arena run` holds its game at chosen turns (a gated bot)
while headless Chromium watches /live and the game's replay page over `arena web` as a process;
the viewer opens at the newest play and follows each released turn's plays without a click, a
reader who stepped back stays there and is told how many plays came, and the end shows the result."""

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
            # the page redraws its list from the server: the held game appears with its plays so far
            # (at its gated bot's turn 3: two turns each, and the greedy bot's third when it moves first)
            page.wait_for_function("() => [...document.querySelectorAll('#live-games tbody tr')]"
                                   ".some((r) => Number(r.querySelector('td.plays').textContent) >= 4)", timeout=WAIT_MS)
            row = page.locator("#live-games tbody tr").first
            assert row.locator("td.seats").inner_text() == "gated · greedy"
            assert row.locator("td.scores").inner_text() == "0–0"  # still in the first deal: no deal scored yet
            held = int(row.locator("td.plays").inner_text())
            assert held in (4, 5)
            screenshot(page, "live")
            with page.expect_navigation():
                row.locator("a.game-link").click()
            assert page.url.startswith(server.url(f"/t/{NAME}/games/1"))
            # opened at the newest play, and following: no click
            page.wait_for_function(f"() => window.viewer && window.viewer.views.length === {held + 1}",
                                   timeout=WAIT_MS)
            assert page.evaluate("window.viewer.step") == held and page.url.endswith(f"#play-{held}")
            (gates / "turn-3").touch()  # the gated bot plays its turn 3, the greedy bot answers
            page.wait_for_function(f"() => window.viewer.views.length >= {held + 3}", timeout=WAIT_MS)
            page.wait_for_function("() => window.viewer.step === window.viewer.views.length - 1", timeout=WAIT_MS)
            assert page.locator("#new-plays").is_hidden()
            screenshot(page, "replay-live")
            # a reader who steps back stays there; the plays that come meanwhile are counted
            page.keyboard.press("ArrowLeft")
            back = page.evaluate("window.viewer.step")
            seen = page.evaluate("window.viewer.views.length - 1")
            (gates / "turn-4").touch()  # and on to the end
            page.wait_for_function("() => document.getElementById('live-notice').textContent.includes('ended')",
                                   timeout=WAIT_MS)
            # the stored game's steps are all in (its last one has the result): nothing more comes
            page.wait_for_function("() => { const v = window.viewer.views; return Boolean(v[v.length - 1].final); }",
                                   timeout=WAIT_MS)
            newest = page.evaluate("window.viewer.views.length - 1")
            assert page.evaluate("window.viewer.step") == back and newest > seen and page.locator("#new-plays").is_visible()
            assert page.locator("#new-plays-count").inner_text() == f"{newest - seen} new plays"
            page.locator("#to-newest").click()
            page.wait_for_function(f"() => window.viewer.step === {newest}", timeout=WAIT_MS)
            assert page.locator("#new-plays").is_hidden() and page.locator("#final").is_visible()
            final = page.locator("#final").inner_text()
            assert "wins" in final or "draw" in final
        _, err = run.communicate(timeout=180)
        assert run.returncode == 0, err.decode(errors="replace")[-2000:]
