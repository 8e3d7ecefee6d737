"""What a bot's owner sees, and nobody else: a real tournament of real bot packages (one whose
choose() raises on every move, one that notes its plays, the random bot), played by `arena run`;
its owner (through a submission), another participant, an operator and the public ask the web.
The owner's page holds the bot's errors, forfeits, times and each game's log slice; the replay
shows the owner their bot's errors and notes; public pages and their JSON show none of it, nor
another bot's notes, until the tournament makes notes public (and never the errors)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from arena.config import load_config
from arena.store.models import Submission, SubmissionStatus, User
from arena.store.store import Store
from arena.store.users import add_user
from tests.arena_support import run_arena, write_tournament
from tests.conftest import ROOT
from tests.referee.test_bot_reports import CRASHING, NOTING, package
from tests.web.web_support import client_for

TIMEOUT_S = 300


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The tournament file, its database, and three users' tokens: alice owns "broken"."""
    folder = tmp_path_factory.mktemp("owner")
    folder.chmod(0o755)
    caches = {"ARENA_ARCHIVE_CACHE": str(folder / "archives"), "CASINO_BUILD_CACHE": str(folder / "builds")}
    path = write_tournament(folder / "cup.toml", {"name": "cup", "games_per_pairing": 2},
                            [{"name": "broken", "package": str(package(folder / "broken", CRASHING))},
                             {"name": "noting", "package": str(package(folder / "noting", NOTING))},
                             {"name": "random", "package": str(ROOT / "sample_bots" / "random")}],
                            {"move_ms": 2000, "startup_ms": 20000})
    done = run_arena("run", str(path), timeout=TIMEOUT_S, env=caches)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    db = load_config(path).database
    store = Store(db)
    try:
        tokens = {name: add_user(store, name, operator=name == "op") for name in ("alice", "bob", "op")}
        tid = store.tournament_id("cup")
        assert tid is not None
        broken = next(b for b in store.bots(tid) if b.name == "broken")
        with store.session() as s, s.begin():  # alice's accepted submission is bot "broken"
            alice = s.query(User).filter(User.name == "alice").one()
            s.add(Submission(user_id=alice.id, tournament_id=tid, version=1, archive=broken.archive or "0" * 64,
                             command="package", status=SubmissionStatus.ACCEPTED.value, bot_id=broken.id))
    finally:
        store.close()
    return {"path": path, "db": db, "tokens": tokens, "logs": folder / "cup-logs", "caches": caches}


@pytest.fixture
def web(played: dict[str, Any]) -> Iterator[TestClient]:
    yield from client_for(played["db"], logs=(("cup", str(played["logs"])),))


def as_user(played: dict[str, Any], name: str) -> dict[str, str]:
    return {"authorization": f"Bearer {played['tokens'][name]}", "accept": "application/json"}


def test_the_owner_sees_their_bots_errors_times_and_each_games_log(web: TestClient, played: dict[str, Any]) -> None:
    page = web.get("/t/cup/owner/broken.json", headers=as_user(played, "alice"))
    assert page.status_code == 200, page.text
    (version,) = page.json()["versions"]
    figures = version["figures"]
    assert version["bot"] == "broken" and figures["games_read"] == 4
    assert figures["errors_per_100_games"] > 1000, "an error on every move, tens of moves a game"
    assert figures["forfeits_per_100_games"] == 0 and figures["crash_streak"] == {"now": 0, "longest": 0}
    assert figures["move_ms"]["p50"] is not None and figures["move_ms"]["p99"] >= figures["move_ms"]["p50"]
    game = version["games"][0]
    assert game["errors"] > 0 and game["first_error"].startswith("AttributeError: 'Move' object has no attribute")
    detail = web.get(game["url"] + ".json", headers=as_user(played, "alice")).json()
    assert detail["reports"] and all(r["error"].startswith("AttributeError") for r in detail["reports"])
    (log,) = detail["logs"]
    assert log["readable"] and "choose failed" in log["text"], log
    html = web.get(game["url"], headers={"authorization": f"Bearer {played['tokens']['alice']}"}).text
    assert "AttributeError" in html and "choose failed" in html


def test_nobody_else_sees_it_but_an_operator(web: TestClient, played: dict[str, Any]) -> None:
    assert web.get("/t/cup/owner/broken.json", headers=as_user(played, "bob")).status_code == 404
    assert web.get("/t/cup/owner/broken.json", headers={"accept": "application/json"}).status_code == 401
    assert web.get("/t/cup/owner/noting.json", headers=as_user(played, "alice")).status_code == 404
    assert web.get("/t/cup/owner/noting.json", headers=as_user(played, "op")).status_code == 200
    assert web.get("/t/cup/owner/broken.json", headers=as_user(played, "op")).status_code == 200
    public = web.get("/t/cup/bots/broken.json").json()
    assert "logs" not in public and "private_url" not in public and "AttributeError" not in str(public)


def test_the_replay_shows_a_reader_their_bots_own_words_and_the_public_none(web: TestClient,
                                                                           played: dict[str, Any]) -> None:
    games = web.get("/t/cup/games.json?bot=broken").json()["games"]
    number = next(g["number"] for g in games if {s["bot"] for s in g["seats"]} == {"broken", "noting"})

    def said(headers: dict[str, str]) -> tuple[bool, bool]:
        views = web.get(f"/t/cup/games/{number}/states", headers=headers).json()["views"]
        reports = [v["play"].get("report", {}) for v in views if v["play"]]
        return any("error" in r for r in reports), any("note" in r for r in reports)

    assert said({}) == (False, False), "the public: neither"
    assert said(as_user(played, "alice")) == (True, False), "alice: her bot's errors, not the other's notes"
    assert said(as_user(played, "op")) == (True, True), "an operator: both"
    record = web.get(f"/t/cup/games/{number}/record").text
    assert "AttributeError" not in record and "note" not in record


def test_public_notes_show_every_bots_notes_to_everyone_but_never_an_error(tmp_path: Path,
                                                                         played: dict[str, Any]) -> None:
    text = played["path"].read_text(encoding="utf-8")
    played["path"].write_text("public_notes = true\n" + text, encoding="utf-8")
    try:
        again = run_arena("run", str(played["path"]), timeout=TIMEOUT_S, env=played["caches"])  # nothing left to play
        assert again.returncode == 0, again.stdout[-2000:] + again.stderr
        for web in client_for(played["db"]):
            games = web.get("/t/cup/games.json?bot=noting").json()["games"]
            views = web.get(f"/t/cup/games/{games[0]['number']}/states").json()["views"]
            reports = [v["play"].get("report", {}) for v in views if v["play"]]
            assert any(r.get("note", "").startswith("play ") for r in reports)
            assert not any("error" in r for r in reports)
    finally:
        played["path"].write_text(text, encoding="utf-8")
        run_arena("run", str(played["path"]), timeout=TIMEOUT_S, env=played["caches"])
