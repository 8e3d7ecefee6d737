"""A challenge in a real browser: alice logs in to `arena web --submit LADDER` (a process), opens her
bot's page, challenges her previous version in one click, and watches the challenge's page (it
reloads itself) while a real `arena serve --rounds 1` (a process, the sample bots over gRPC) plays
its games after the round's own; the verdict appears, with a link to every game, and a link opens
the game's replay."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from arena.config import load_config
from arena.play.runner import open_tournament
from arena.store.models import Submission, SubmissionStatus, User
from arena.store.store import Store
from arena.store.users import add_user
from tests.arena.test_challenges import bot, write_ladder
from tests.support import run_arena
from tests.web.browser_support import WebServer, screenshot, serve

if TYPE_CHECKING:  # the module imports without playwright: its tests then skip (browser_support says why)
    from playwright.sync_api import Page

VERDICT_WAIT_MS = 240_000  # the round and about 20 challenge games of real bots on a loaded machine; bounded


def alice_ladder(folder: Path) -> tuple[Path, str]:
    """A ladder (test_challenges' [challenges] table) where alice's v2 (greedy) replaced her v1 (a
    seeded random bot) beside "random", both her versions accepted submissions: (the ladder's file,
    alice's token). Also tests/web/test_web_remote_challenge.py's."""
    path = write_ladder(folder, bots=[bot("alice.v1", "random_bot.py", "5"), bot("alice.v2", "greedy_bot.py"),
                                      bot("random", "random_bot.py", "11")])
    config = load_config(path)
    store = Store(config.database)
    try:
        tid = open_tournament(store, config, schedule_games=False)
        token = add_user(store, "alice")
        bots = {b.name: b for b in store.bots(tid)}
        with store.session() as s, s.begin():
            alice = s.query(User).filter(User.name == "alice").one()
            for version in (1, 2):
                s.add(Submission(user_id=alice.id, tournament_id=tid, version=version, archive="0" * 64,
                                 command="package", status=SubmissionStatus.ACCEPTED.value,
                                 bot_id=bots[f"alice.v{version}"].id))
        store.remove_bot(tid, "alice.v1")  # v2 entered: v1 left the pool
    finally:
        store.close()
    return path, token


@pytest.fixture(scope="module")
def challenge_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WebServer, Path, str]]:
    """`arena web --submit` over alice_ladder: (server, the ladder's file, alice's token)."""
    folder = tmp_path_factory.mktemp("challenge")
    path, token = alice_ladder(folder)
    with serve(load_config(path).database, folder, "--submit", "ladder") as server:
        yield server, path, token


def test_a_challenge_from_the_bot_page_ends_in_its_verdict(
        page: Page, challenge_server: tuple[WebServer, Path, str]) -> None:
    server, path, token = challenge_server
    page.goto(server.url("/login"))
    page.fill("input[name=token]", token)
    with page.expect_navigation():
        page.click("form.stacked button[type=submit]")
    page.goto(server.url("/t/ladder/bots/alice.v2"))
    button = page.locator("#challenge-previous button")
    assert button.inner_text() == "Challenge my previous version, alice.v1"
    screenshot(page, "bot-challenge")
    with page.expect_navigation():
        button.click()
    assert page.url == server.url("/t/ladder/challenges/1")
    assert page.locator("#challenge-status").get_attribute("data-status") == "waiting"
    served = run_arena("serve", str(path), "--rounds", "1", timeout=VERDICT_WAIT_MS / 1000)
    assert served.returncode == 0, served.stdout[-3000:] + served.stderr
    # the page reloads itself every 3 s until the verdict
    page.wait_for_function("() => document.querySelector('#challenge-status')?.dataset.status === 'decided'",
                           timeout=VERDICT_WAIT_MS)
    status = page.locator("#challenge-status")
    assert status.get_attribute("data-verdict") == "better", page.locator("main").inner_text()
    assert "alice.v2 is better" in status.inner_text()
    links = page.locator("#challenge-game-links a")
    played = int(page.locator("#challenge-games").inner_text().split()[0])
    assert links.count() == played >= 20
    screenshot(page, "challenge")
    with page.expect_navigation():
        links.first.click()
    assert page.url == server.url("/t/ladder~challenge-1/games/1")
    assert "alice.v2" in page.locator("main").inner_text()
