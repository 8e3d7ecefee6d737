"""The replay viewer: every step rebuilt through the engine agrees with `arena show --full` on the
real games of played_db, a running game's record gives a prefix of the finished game's views, and
the game pages answer in HTML and JSON (404s, games not played, a hostile bot name)."""

from __future__ import annotations

import copy
import gzip
import json
import random
import shutil
import urllib.request
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape
from sqlalchemy import select, update
from starlette.testclient import TestClient

from arena.store.models import Bot, Game
from arena.store.store import Store
from arena.web.privacy import public_record
from arena.web.replay import replay_views
from referee.cli.render import record_lines
from referee.rules import InvalidRecordError, RuleOptions, apply, game_record, legal_moves, new_game, replay_record
from tests.web.browser_support import WebServer
from tests.web.web_support import TOURNAMENT, client_for, db_path, read_store

HOSTILE = '<script>alert("x")</script>&'


@pytest.fixture(scope="module")
def games(played_db: str) -> list[tuple[int, dict[str, Any], list[str], dict[str, Any]]]:
    """Every stored game: number, record, the tournament's names by seat, the stored result."""
    store = read_store(played_db)
    try:
        tid = store.tournament_id(TOURNAMENT)
        assert tid is not None
        names = {b.position: b.name for b in store.bots(tid)}
        out = []
        for row in store.games(tid):
            _, record = store.game(tid, row.number)
            assert record is not None and row.result is not None
            out.append((row.number, record, [names[p] for p in row.seat_bots], row.result))
        return out
    finally:
        store.close()


def shown_positions(record: dict[str, Any], names: list[str]) -> list[tuple[list[list[str]], str]]:
    """The (hands, table) pairs `arena show --full` prints, in order: before each play (and before
    a forfeit line)."""
    lines = record_lines(record, names, full=True)
    out = []
    for above, below in pairwise(lines):
        if above.startswith("        hands ") and below.startswith("        table "):
            hands = [part.split(": ", 1)[1] for part in above.removeprefix("        hands ").split(" / ")]
            out.append(([[] if h == "-" else h.split() for h in hands], below.removeprefix("        table ")))
    return out


def table_text(view: dict[str, Any]) -> str:
    """The table as `arena show` prints it, rebuilt from the view's structured table (the cards
    the page draws), so both the text and the structure are checked."""
    parts = [f"loose: {' '.join(view['table']['loose']) or '-'}"]
    parts += [f"{b['id']}[{b['value']} {b['kind']} P{b['owner']}: {' '.join(b['cards'])}]" for b in view["table"]["builds"]]
    return " | ".join(parts)


def test_every_step_shows_what_arena_show_full_prints_and_ends_at_the_stored_result(games: list[Any]) -> None:
    for number, record, names, result in games:
        views = replay_views(record, names)
        shown = shown_positions(record, names)
        plays = sum(len(d["moves"]) for d in record["engine"]["deals"])
        assert len(views) == plays + 1 == len(shown) + 1, number
        for k, (hands, table) in enumerate(shown):
            view = views[k]
            assert view["step"] == k and view["hands"] == hands and view["table_text"] == table == table_text(view), (number, k)
        for k, view in enumerate(views[1:], start=1):
            assert view["play"]["number"] == k
        last = views[-1]
        assert last["final"] is not None and all(v["final"] is None for v in views[:-1])
        assert last["final"]["scores"] == result["scores"] == last["scores"]
        assert last["final"]["ranks"] == result["ranks"] and last["final"]["winner_side"] == result["winnerSide"]
        assert [s["scores_after"] for s in last["sheets"]][-1] == result["scores"]
        assert len(last["sheets"]) == result["deals"] == last["final"]["deals"]
        # every card is somewhere at every step: hands, table, builds, piles or the stock
        for view in views:
            placed = [c for h in view["hands"] for c in h] + view["table"]["loose"]
            placed += [c for b in view["table"]["builds"] for c in b["cards"]] + [c for p in view["piles"] for c in p["cards"]]
            assert len(placed) == len(set(placed)) == 52 - view["stock"], (number, view["step"])


@pytest.mark.parametrize("players, seed", [(4, 5), (3, 8)])
def test_partnerships_and_three_seats_replay_as_arena_show_prints_them(players: int, seed: int) -> None:
    """An engine record of a seeded random game (no referee): sides, piles and owners by seat."""
    rng = random.Random(seed)
    state = new_game(RuleOptions(players=players, max_deals=2), seed=seed)
    while state.result is None:
        state = apply(state, rng.choice(legal_moves(state)))
    record = game_record(state)
    views = replay_views(record)
    assert [(v["hands"], v["table_text"]) for v in views[:-1]] == shown_positions(record, [])
    assert views[-1]["final"]["scores"] == list(state.result.scores)
    assert [p["seats"] for p in views[0]["piles"]] == ([[0, 2], [1, 3]] if players == 4 else [[0], [1], [2]])
    assert sum(p["count"] for p in views[-1]["piles"]) == 52


def running(record: dict[str, Any], plays: int) -> dict[str, Any]:
    """The record of the same game while it was running, after ``plays`` plays: the deals so far,
    no sheet for the deal in play, no result."""
    out = copy.deepcopy(record)
    engine = out["engine"]
    deals, left = [], plays
    for deal in engine["deals"]:
        if left <= 0 and deals:
            break
        finished = left >= len(deal["moves"])
        deal["moves"] = deal["moves"][:left]
        deal["sheet"] = deal["sheet"] if finished else None
        deals.append(deal)
        left -= len(deal["moves"])
    engine["deals"], engine["result"] = deals, None
    out["result"], out["timings_us"], out["cpu_us"] = {}, out["timings_us"][:plays], out["cpu_us"][:plays]
    if "forced" in out:  # as GameSoFar.record: the forced plays made so far
        out["forced"] = [i for i in out["forced"] if i < plays]
    return out


def test_a_running_games_record_gives_a_prefix_of_the_finished_games_views(games: list[Any]) -> None:
    number, record, names, _ = max(games, key=lambda g: len(g[1]["engine"]["deals"]))
    full = replay_views(record, names)
    first_deal = len(record["engine"]["deals"][0]["moves"])
    for plays in (0, 1, 17, first_deal - 1, first_deal, first_deal + 1, len(full) - 2):
        partial = replay_views(running(record, plays), names)
        assert partial == full[: plays + 1], (number, plays)
        assert partial[-1]["final"] is None
    # the engine's record alone (no seats, no result): by seat, the same positions
    alone = replay_views(running(record, first_deal)["engine"])
    assert [v["table_text"] for v in alone] == [v["table_text"] for v in full[: first_deal + 1]]
    assert alone[1]["play"]["words"].startswith(f"P{alone[1]['play']['seat']} ")


def test_a_forfeit_shows_the_seat_the_reason_and_the_position_it_failed_in(games: list[Any]) -> None:
    _, record, names, _ = games[0]
    forfeited = running(record, 30)
    seat = replay_views(forfeited, names)[-1]["to_move"]
    failure = {"seat": seat, "kind": "FAILURE_KIND_TIMEOUT", "deal": 0, "playNumber": 31,
               "reason": "no move within 2000 ms", "received": "", "forfeit": True}
    forfeited["failures"] = [failure]
    forfeited["result"] = {"gameId": "g", "termination": "TERMINATION_FORFEIT", "reason": "forfeit",
                           "winnerSide": 1 - seat, "scores": [0, 0], "ranks": [2 if s == seat else 1 for s in (0, 1)],
                           "failures": [failure], "deals": 1}
    views = replay_views(forfeited, names)
    hands, table = shown_positions(forfeited, names)[-1]  # what `arena show --full` prints before "forfeits"
    final = views[-1]["final"]
    assert views[-1]["hands"] == hands and views[-1]["table_text"] == table and len(views) == 31
    assert final["termination"] == "forfeit" and final["winner_side"] == 1 - seat
    (shown,) = final["forfeits"]
    assert shown["seat"] == seat and shown["kind"] == "timeout" and shown["who"] == f"P{seat} {names[seat]}"


def test_a_record_the_engine_disagrees_with_is_refused_naming_the_play(games: list[Any]) -> None:
    record = copy.deepcopy(games[0][1])
    moves = record["engine"]["deals"][0]["moves"]
    moves[5] = moves[4]  # a card already played
    with pytest.raises(InvalidRecordError, match="deal 1, play 6"):
        replay_views(record)
    with pytest.raises(InvalidRecordError):
        replay_views({"format": "something else"})


def test_forced_plays_are_marked_and_a_false_mark_is_refused(games: list[Any]) -> None:
    """The tournament was played with auto_forced (the default): the viewer marks exactly the
    record's forced plays, each the only legal move, and refuses a record that lies about one."""
    marked = 0
    for _number, record, _names, _row in games:
        views = replay_views(record)
        flags = [v["play"]["forced"] for v in views[1:]]
        assert [i for i, f in enumerate(flags) if f] == record.get("forced", [])
        marked += sum(flags)
    assert marked > 0, "the played tournament has forced plays"
    record = copy.deepcopy(games[0][1])
    before: list[int] = []
    replay_record(record["engine"], on_play=lambda state, _t: before.append(len(legal_moves(state))))
    lie = next(i for i, n in enumerate(before) if n > 1)
    record["forced"] = sorted({*record.get("forced", []), lie})
    with pytest.raises(InvalidRecordError, match="is marked forced"):
        replay_views(record)


def test_the_viewer_page_and_its_json(web: TestClient, games: list[Any]) -> None:
    number, record, names, result = games[0]
    base = f"/t/{TOURNAMENT}/games/{number}"
    page = web.get(base)
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    for needle in ('id="table"', 'id="slider"', 'type="range"', 'id="step"', 'id="hand-0"', 'id="hand-1"',
                   "replay.js", f'{base}/states"', f'{base}/record"', names[0], names[1]):
        assert needle in page.text, needle
    meta = web.get(base + ".json").json()
    assert meta["game"]["number"] == number and meta["game"]["status"] == "done" and meta["data_as_of"]
    assert [s["name"] for s in meta["seats"]] == names
    states = web.get(base + "/states")
    assert states.status_code == 200 and states.headers["content-type"] == "application/json"
    body = states.json()
    assert body["game"] == meta["game"] and body["seats"] == meta["seats"]
    assert body["views"] == replay_views(record, names) and body["views"][-1]["final"]["scores"] == result["scores"]
    assert web.get(base + "/record").json() == public_record(record) == web.get(base + "/record.json").json()
    script = web.get("/static/replay.js")
    assert script.status_code == 200 and "append(views)" in script.text


@pytest.mark.parametrize("path", [f"/t/{TOURNAMENT}/games/999", f"/t/{TOURNAMENT}/games/999/states",
                                  f"/t/{TOURNAMENT}/games/999/record", "/t/nosuch/games/1", "/t/nosuch/games/1/states",
                                  f"/t/{TOURNAMENT}/games/x"])
def test_an_unknown_game_is_a_404(web: TestClient, path: str) -> None:
    answer = web.get(path)
    assert answer.status_code == 404 and "Traceback" not in answer.text
    assert web.get(path, headers={"accept": "application/json"}).status_code == 404


@pytest.fixture(scope="module")
def altered(played_db: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """A copy of played_db where game 1 is pending again, game 2 failed, game 3's record is
    corrupt and the first bot has a hostile name."""
    copy_path = tmp_path_factory.mktemp("web-altered") / "arena.db"
    shutil.copy(db_path(played_db), copy_path)
    url = f"sqlite:///{copy_path}"
    store = Store(url)
    try:
        with store.session() as s, s.begin():
            tid = s.scalar(select(Game.tournament_id).limit(1))
            s.execute(update(Game).where(Game.number == 1).values(status="pending", record=None, result=None))
            s.execute(update(Game).where(Game.number == 2).values(status="failed", record=None, result=None,
                                                                 error="the referee could not start: <boom>"))
            s.execute(update(Game).where(Game.number == 3).values(record='{"format": "royal-casino-game"}'))
            s.execute(update(Bot).where(Bot.tournament_id == tid, Bot.position == 0).values(name=HOSTILE))
    finally:
        store.close()
    yield from client_for(url)


def test_a_game_not_played_yet_or_failed_says_so(altered: TestClient) -> None:
    base = f"/t/{TOURNAMENT}/games"
    pending = altered.get(f"{base}/1")
    assert pending.status_code == 200 and "not been played yet" in pending.text and 'id="viewer"' not in pending.text
    assert altered.get(f"{base}/1/states").json()["views"] == []
    assert altered.get(f"{base}/1/record").status_code == 404
    failed = altered.get(f"{base}/2")
    assert failed.status_code == 200 and "could not start: &lt;boom&gt;" in failed.text
    assert altered.get(f"{base}/2.json").json()["game"]["error"] == "the referee could not start: <boom>"
    broken = altered.get(f"{base}/3")
    assert broken.status_code == 200 and "does not replay" in broken.text and "Traceback" not in broken.text
    states = altered.get(f"{base}/3/states")
    assert states.status_code == 500 and "does not replay" in states.json()["error"]


def test_a_hostile_bot_name_is_escaped_in_the_page_and_kept_in_the_json(altered: TestClient, games: list[Any]) -> None:
    number = next(n for n, record, _, _ in games if n > 3 and record["seats"][0]["bot"] == 0)
    page = altered.get(f"/t/{TOURNAMENT}/games/{number}")
    assert page.status_code == 200 and HOSTILE not in page.text and "<script>alert" not in page.text
    assert str(escape(HOSTILE)) in page.text  # in the seats line, as Jinja escapes it
    views = altered.get(f"/t/{TOURNAMENT}/games/{number}/states").json()["views"]
    assert any(HOSTILE in v["play"]["words"] for v in views[1:])  # text for textContent, never markup


def test_the_viewer_file_is_plain_javascript() -> None:
    source = (Path(__file__).parents[2] / "arena/web/static/replay.js").read_text(encoding="utf-8")
    for needle in ("ArrowLeft", "ArrowRight", "Home", "End", "#play-", "append(views)", "textContent"):
        assert needle in source, needle
    assert "innerHTML" not in source and "import " not in source


def test_the_states_are_sent_gzipped_to_a_client_that_takes_gzip(web_server: WebServer, games: list[Any]) -> None:
    """A replay's states are the largest answer of the app (every step of the game): the real
    `arena web` sends them gzipped when asked, and the same JSON as to a client that is not."""
    number = games[0][0]
    url = web_server.url(f"/t/{TOURNAMENT}/games/{number}/states")

    def get(encoding: str) -> tuple[str | None, bytes]:
        request = urllib.request.Request(url, headers={"Accept-Encoding": encoding})
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.headers.get("Content-Encoding"), answer.read()

    zipped_as, zipped = get("gzip")
    plain_as, plain = get("identity")
    assert (zipped_as, plain_as) == ("gzip", None)
    unzipped, sent_plain = json.loads(gzip.decompress(zipped)), json.loads(plain)
    for body in (unzipped, sent_plain):
        body.pop("generated_at")
    assert unzipped == sent_plain and sent_plain["views"]
    assert len(zipped) * 5 < len(plain), (len(zipped), len(plain))
