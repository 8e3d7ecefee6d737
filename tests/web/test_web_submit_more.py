"""Submission, the acceptance items of issues 24 and 25 that test_web_submit.py does not cover:
the /submit page lists the runtimes `referee runtimes` lists (with a ladder file's own); a package
with a build step sent through /submit is built on the server, accepted, and then PLAYS a round of
the ladder (`arena serve`, a real process, over the same database), its game on the web; and a
bot that reports errors is rejected, the error named in its owner's report.

At the ASGI level (Starlette's test client over the real app, its real checks: `referee check` in
the real sandbox) rather than in Chromium: the browser's part of submitting is
test_web_browser_submit.py's, and a ladder round needs `arena serve` beside the app."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from arena.play.archives import CACHE_ENV
from arena.store.store import Store
from arena.store.users import add_user
from referee.sandbox.view import DEFAULT_PATH
from tests.arena.test_arena_archives import gzipped, member, sample_members, tar_bytes
from tests.arena_support import run_arena, write_tournament
from tests.conftest import ROOT
from tests.referee.test_bot_reports import CRASHING
from tests.sandbox.test_packages import needs_bwrap
from tests.support import run_referee
from tests.web.test_web_submit import CHECK_WAIT_S, bearer, send, verdict
from tests.web.web_support import client_for

LADDER = "ladder"
SERVE_TIMEOUT_S = 300


@pytest.fixture
def ladder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A ladder file (random and greedy packages, one pairing per bot a round, a tournament
    file's runtime of its own), its database with the pool made (`arena bots list`), alice's
    token; this test's own archive and build caches for the app and the commands."""
    caches = {CACHE_ENV: str(tmp_path / "archives"), "CASINO_BUILD_CACHE": str(tmp_path / "builds")}
    for key, value in caches.items():
        monkeypatch.setenv(key, value)
    path = write_tournament(tmp_path / "ladder.toml", {"name": LADDER, "seed": 11},
                            [{"name": "random", "package": str(ROOT / "sample_bots" / "random")},
                             {"name": "greedy", "package": str(ROOT / "sample_bots" / "greedy")}],
                            {"move_ms": 2000, "startup_ms": 20000})
    extra = tmp_path / "extra-rt"
    extra.mkdir()
    path.write_text(path.read_text(encoding="utf-8") + '\n[ladder]\ninterval = "1h"\npairings_per_bot = 1\n'
                    'sets_per_pairing = 1\n\n[runtimes.extra]\ndescription = "the ladder\'s own"\n'
                    f'folders = ["{extra}"]\noffers = ["extra 1.0"]\n', encoding="utf-8")
    listed = run_arena("bots", "list", "-f", str(path))
    assert listed.returncode == 0, listed.stdout + listed.stderr
    db = f"sqlite:///{tmp_path / 'ladder.db'}"
    store = Store(db)
    try:
        token = add_user(store, "alice")
    finally:
        store.close()
    return {"path": path, "db": db, "token": token}


def app(ladder: dict[str, Any]) -> Iterator[TestClient]:
    yield from client_for(ladder["db"], submit=LADDER, check_games=1, check_timeout_s=CHECK_WAIT_S,
                          sandbox_from=str(ladder["path"]))


def test_the_submit_page_lists_the_runtimes_referee_runtimes_lists(ladder: dict[str, Any]) -> None:
    """What a participant reads before sending a bot is what `referee runtimes --sandbox-from`
    says at home: every runtime, with the versions it offers, and the ladder file's own."""
    home = run_referee("runtimes", "--sandbox-from", str(ladder["path"]), "--format", "json")
    assert home.returncode == 0, home.stderr
    expected = [(r["name"], r["offers"]) for r in json.loads(home.stdout)["runtimes"]]
    assert [name for name, _ in expected] == ["python", "node", "native", "extra"]
    if shutil.which("node", path=DEFAULT_PATH) is not None:  # the version a participant's bot.js runs on
        assert expected[1][1][0].startswith("Node.js v"), expected
    for web in app(ladder):
        page = web.get("/submit", headers=bearer(ladder["token"]))
        assert page.status_code == 200, page.text
        assert [(r["name"], r["offers"]) for r in page.json()["runtimes"]] == expected
        html = web.get("/submit", headers={"authorization": f"Bearer {ladder['token']}"}).text
        assert all(f"<td>{name}</td>" in html for name, _ in expected) and "extra 1.0" in html


def package_archive(files: dict[str, bytes], manifest: str) -> bytes:
    """A .tar.gz of the SDK (casino_bot/), ``files`` and bot.toml = ``manifest``."""
    sdk = [m for m in sample_members() if m[0].name.startswith("casino_bot")]
    return gzipped(tar_bytes([*sdk, *(member(name, data) for name, data in files.items()),
                              member("bot.toml", manifest.encode())]))


@needs_bwrap
def test_a_package_with_a_build_step_is_built_on_the_server_accepted_and_plays_a_ladder_round(
        ladder: dict[str, Any]) -> None:
    """Its build makes the program it runs (dist/), so only a build on the server can pass the
    check; then `arena serve --rounds 1` pairs the newcomer first and its game is on the web."""
    random_bot = (ROOT / "sample_bots" / "random" / "random_bot.py").read_bytes()
    content = package_archive({"src/random_bot.py": random_bot},
                              'runtime = "python"\nrun = "python dist/random_bot.py"\n'
                              'build = "mkdir -p dist && cp src/random_bot.py dist/"\n')
    token = ladder["token"]
    for web in app(ladder):
        sent = send(web, content, headers=bearer(token))
        assert sent.status_code == 202, sent.text
        done = verdict(web, sent.json()["submission"]["id"], token)
        assert done["status"] == "accepted" and done["bot"] == "alice.v1", done
        assert "runtime python, built in" in done["report"], done["report"][-2000:]

        served = run_arena("serve", str(ladder["path"]), "--rounds", "1", timeout=SERVE_TIMEOUT_S)
        assert served.returncode == 0 and "round 1: " in served.stdout, served.stdout[-2000:] + served.stderr
        games = web.get(f"/t/{LADDER}/games.json?bot=alice.v1").json()["games"]
        assert games, "the newcomer played in the round: " + served.stdout[-2000:]
        for game in games:
            assert "alice.v1" in {s["bot"] for s in game["seats"]}
            assert game["status"] == "done" and game["forfeits"] == [] and game["scores"], game
        assert web.get(games[0]["url"]).status_code == 200


@needs_bwrap
def test_a_bot_that_reports_errors_is_rejected_with_the_error_in_its_owners_report(ladder: dict[str, Any]) -> None:
    content = package_archive({"my_bot.py": CRASHING.encode()}, 'runtime = "python"\nrun = "python my_bot.py"\n')
    token = ladder["token"]
    for web in app(ladder):
        sent = send(web, content, headers=bearer(token))
        assert sent.status_code == 202, sent.text
        sid = sent.json()["submission"]["id"]
        done = verdict(web, sid, token)
        said = "bot error: AttributeError: 'Move' object has no attribute 'cards_taken' (choose, my_bot.py:9)"
        assert done["status"] == "rejected" and done["bot"] is None, done
        assert "NOT CLEAN" in done["reason"] and said in done["report"], done
        page = web.get(f"/submissions/{sid}", headers={"authorization": f"Bearer {token}"}).text
        assert "AttributeError: &#39;Move&#39; object has no attribute" in page or \
            "AttributeError: &#x27;Move&#x27; object has no attribute" in page, page[-3000:]
        assert web.get(f"/submissions/{sid}.json", headers={"accept": "application/json"}).status_code == 401
