"""What a bot's owner sees, and nobody else: a real tournament of real bot packages (one whose
choose() raises on every move, one that notes its plays, the random bot), played by `arena run`;
its owner (through a submission), another participant, an operator and the public ask the web.
The owner's page holds the bot's errors, forfeits, times and each game's log slice; the replay
shows the owner their bot's errors and notes; public pages and their JSON show none of it, nor
another bot's notes, until the tournament makes notes public (and never the errors)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from arena.config import load_config
from arena.store.models import Game, Submission, SubmissionStatus, User
from arena.store.store import Store
from arena.store.users import add_user
from referee.bots.cpu import proc_metering_problem
from tests.arena_support import run_arena, write_tournament
from tests.conftest import ROOT
from tests.referee.test_bot_reports import CRASHING, NOTING, package
from tests.support import run_referee
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


def test_arena_show_prints_a_noting_bots_notes_as_referee_replay_does(played: dict[str, Any],
                                                                      tmp_path: Path) -> None:
    """`arena show FILE N` of a game of the noting bot prints each play's note under it, the same
    lines `referee replay` prints from that game's record."""
    store = Store(played["db"], read_only=True)
    try:
        tid = store.tournament_id("cup")
        assert tid is not None
        noting = next(b.position for b in store.bots(tid) if b.name == "noting")
        game = next(g for g in store.games(tid) if noting in g.seat_bots and g.status == "done")
        with store.session() as s:
            text = s.query(Game.record).filter(Game.tournament_id == tid, Game.number == game.number).scalar()
    finally:
        store.close()
    record = tmp_path / "game.json"
    record.write_text(text, encoding="utf-8")
    shown = run_arena("show", str(played["path"]), str(game.number), timeout=120)
    replayed = run_referee("replay", str(record), timeout=120)
    assert shown.returncode == 0 and replayed.returncode == 0, shown.stderr + replayed.stderr

    def said(out: str) -> list[str]:
        return [line.strip() for line in out.splitlines() if line.startswith("      note: ")
                or line.startswith("      bot error: ")]

    notes = [line for line in said(shown.stdout) if line.startswith("note: ")]
    assert notes and all(re.fullmatch(r"note: play \S+ x+", line) for line in notes), said(shown.stdout)[:5]
    assert said(shown.stdout) == said(replayed.stdout)


CRASH_EVERY_GAME = '''import os
from casino_bot import CasinoBot, run


class Crash(CasinoBot):
    name = "crash"

    def choose(self, turn):
        os._exit(3)  # its process dies at its first move of every game


if __name__ == "__main__":
    run(Crash())
'''


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A tournament of a bot whose process dies at its first move and the random bot (2 games);
    an operator's token."""
    folder = tmp_path_factory.mktemp("crashed")
    folder.chmod(0o755)
    caches = {"ARENA_ARCHIVE_CACHE": str(folder / "archives"), "CASINO_BUILD_CACHE": str(folder / "builds")}
    path = write_tournament(folder / "cup.toml", {"name": "cup", "games_per_pairing": 2},
                            [{"name": "crash", "package": str(package(folder / "crash", CRASH_EVERY_GAME))},
                             {"name": "random", "package": str(ROOT / "sample_bots" / "random")}],
                            {"move_ms": 2000, "startup_ms": 20000})
    done = run_arena("run", str(path), timeout=TIMEOUT_S, env=caches)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    db = load_config(path).database
    store = Store(db)
    try:
        token = add_user(store, "op", operator=True)
    finally:
        store.close()
    return {"db": db, "token": token}


def test_the_owner_page_counts_a_crash_streak_forfeits_and_cpu_times(crashed: dict[str, Any]) -> None:
    headers = {"authorization": f"Bearer {crashed['token']}", "accept": "application/json"}
    for web in client_for(crashed["db"]):
        (crash,) = web.get("/t/cup/owner/crash.json", headers=headers).json()["versions"]
        figures = crash["figures"]
        assert figures["games_read"] == 2, figures
        assert figures["crash_streak"] == {"now": 2, "longest": 2}, "every game it played, a crash"
        assert figures["forfeits_per_100_games"] == 100.0
        assert all(g["failures"] and g["failures"][0]["forfeit"] for g in crash["games"]), crash["games"]
        (random,) = web.get("/t/cup/owner/random.json", headers=headers).json()["versions"]
        figures = random["figures"]
        assert figures["crash_streak"] == {"now": 0, "longest": 0} and figures["forfeits_per_100_games"] == 0
        if proc_metering_problem() is None:
            cpu = figures["cpu_ms"]
            assert cpu["p50"] is not None and cpu["p50"] > 0 and cpu["p99"] >= cpu["p50"], figures
