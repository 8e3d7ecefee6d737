"""Live games on the web: a real `arena run` holds its game at chosen turns (a gated bot) while
the app's /live page, the store's live rows and the game's event stream are read; the record so
far is a prefix of the finished record, and the row is gone once the game is stored."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from arena.store.store import Store
from referee.rules import replay_record
from tests.arena_support import (
    arena_argv,
    arena_env,
    kill_marked_processes,
    new_marker,
    sample_bot_command,
    wait_no_marked_processes,
    write_tournament,
)
from tests.conftest import ROOT, SCRIPTED_BOT
from tests.web.web_support import client_for

T = TypeVar("T")
NAME = "live"
GATE_TIME = {"move_ms": 120_000, "startup_ms": 20_000}  # the gated bot waits for the test, never the clock
WAIT_S = 90.0


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float = WAIT_S) -> T:
    """Poll ``probe`` until it gives something; bounded."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = probe()
        if found:
            return found
        assert time.monotonic() < deadline, f"no {what} within {timeout_s} s"
        time.sleep(0.02)


def held_tournament(folder: Path, marker: str, url: str) -> tuple[Path, Path]:
    """One game whose gated bot waits, on its turns 3 and 4, for the files ``turn-3`` and ``turn-4``
    in the returned folder (which its sandbox may read)."""
    gates = folder / "gates"
    gates.mkdir(mode=0o755)
    gated = shlex.join([sys.executable, str(SCRIPTED_BOT), "gate", "--after", "3", "--turns", "2"])
    bots = [{"name": "gated", "command": gated, "env": {"SCRIPTED_BOT_GATE": str(gates / "turn-{turn}")}},
            {"name": "greedy", "command": sample_bot_command("greedy_bot.py")}]
    path = write_tournament(folder / "live.toml", {"name": NAME, "players": 2, "games_per_pairing": 1,
                                                    "duplicate": False, "seed": 5, "concurrency": 1, "database": url,
                                                    "sandbox": {"read_only": [str(gates)]}}, bots, GATE_TIME, marker)
    return path, gates


@contextlib.contextmanager
def held_run(folder: Path, url: str, *options: str) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """A real `arena run` of ``held_tournament`` in the background (``options``: e.g. ``--queue``):
    (its process, the gates folder); killed at the end if it is still running, and none of its
    bots left behind."""
    marker = new_marker()
    path, gates = held_tournament(folder, marker, url)
    Store(url).close()  # the schema exists before a reader opens it
    run = subprocess.Popen(arena_argv("run", str(path), *options), cwd=ROOT, env=arena_env(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, start_new_session=True)
    try:
        yield run, gates
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(timeout=30)
        kill_marked_processes(marker)
    assert wait_no_marked_processes(marker) == []


def events_of(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event, data) of each server-sent event; comments and the retry line skipped."""
    event = ""
    for line in lines:
        if line.startswith("event: "):
            event = line.removeprefix("event: ")
        elif line.startswith("data: "):
            yield event, json.loads(line.removeprefix("data: "))


def assert_prefix(partial: dict[str, Any], final: dict[str, Any]) -> None:
    """``partial`` is ``final`` cut short: the same format and seats, its plays and times first."""
    assert partial["format"] == final["format"] and partial["version"] == final["version"]
    assert partial["result"] is None and partial["engine"]["result"] is None and final["result"] is not None
    for key in ("game_id", "match_id", "game_number", "time_control", "failure_policy", "max_strikes"):
        assert partial[key] == final[key], key
    # the same seats; where a bot's output of the game lies in its log is known once the game ends
    assert partial["seats"] == [{k: v for k, v in s.items() if k != "log"} for s in final["seats"]]
    assert all("log" not in s for s in partial["seats"])
    n = len(partial["timings_us"])
    assert final["timings_us"][:n] == partial["timings_us"] and final["cpu_us"][:n] == partial["cpu_us"]
    moves = [m for deal in partial["engine"]["deals"] for m in deal["moves"]]
    assert len(moves) == n
    assert [m for deal in final["engine"]["deals"] for m in deal["moves"]][:n] == moves
    assert [d["deck"] for d in partial["engine"]["deals"]] == [d["deck"] for d in final["engine"]["deals"]][
        :len(partial["engine"]["deals"])]
    replay_record(partial["engine"])  # the engine's part replays as it is


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_running_games_plays_reach_the_web_and_its_row_goes_when_it_is_stored(
        kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'live.db'}" if kind == "sqlite" else str(request.getfixturevalue("pg_url"))
    with held_run(tmp_path, url) as (run, gates):
        with _client(url) as web:
            store: Store = web.app.state.store  # type: ignore[attr-defined]
            # held at the gated bot's turn 3: the plays before it are live (the writer may report a
            # smaller count first, while they are being made; the held count is at least 4)
            (row,) = wait_for("live game", lambda: [r for r in store.live_games() if r.plays >= 4] or None)
            held = row.plays
            assert row.tournament == NAME and row.number == 1 and row.seat_names == ("gated", "greedy")
            assert held in (4, 5)  # two turns each, and the greedy bot's third when it moves first
            listed = web.get("/live.json").json()
            assert [(g["tournament"], g["number"], g["seats"], g["plays"]) for g in listed["games"]] == [
                (NAME, 1, ["gated", "greedy"], held)]
            assert listed["data_as_of"] is not None
            html = web.get("/live")
            assert html.status_code == 200 and "greedy" in html.text and "live.js" in html.text
            live_row, first = store.live_record((row.tournament_id, 1)) or (None, {})
            assert live_row is not None and len(first["timings_us"]) == held
            assert store.live_record(row.game_id) == (live_row, first)
            # the replay viewer shows the record so far and follows the game's events
            viewer = web.get(f"/t/{NAME}/games/1.json").json()
            assert viewer["game"]["live"] is True and viewer["game"]["status"] == "running"
            assert 'data-events="' in web.get(f"/t/{NAME}/games/1").text
            so_far = web.get(f"/t/{NAME}/games/1/states").json()["views"]
            assert len(so_far) == held + 1  # the deal, then a step per play
            assert web.get(f"/t/{NAME}/games/1/record").status_code == 404  # no stored record while it runs

            seen: list[int] = []
            with web.stream("GET", f"/t/{NAME}/games/1/events") as stream:
                assert stream.headers["content-type"].startswith("text/event-stream")
                for event, data in events_of(stream.iter_lines()):
                    if event == "done":
                        assert data == {"status": "done"}
                        break
                    assert event == "plays"
                    seen.append(data["plays"])
                    if data["plays"] == held:
                        (gates / "turn-3").touch()  # on to the gated bot's turn 4
                    elif data["plays"] == held + 2:  # held there: one play each since
                        _, second = store.live_record(row.game_id) or (None, {})
                        assert len(second["timings_us"]) == held + 2
                        (gates / "turn-4").touch()  # and on to the end
            assert seen[0] == held and held + 2 in seen and seen == sorted(set(seen)), seen
        _, err = run.communicate(timeout=180)
        assert run.returncode == 0, err.decode(errors="replace")[-2000:]
        with _client(url) as web:
            store = web.app.state.store  # type: ignore[attr-defined]
            tid = store.tournament_id(NAME)
            assert tid is not None
            game, final = store.game(tid, 1)
            assert game.status == "done" and final is not None
            assert_prefix(first, final)
            assert_prefix(second, final)
            assert seen[-1] <= len(final["timings_us"])
            assert store.live_games() == [] and store.live_record(game.id) is None
            assert web.get("/live.json").json()["games"] == []
            stored = web.get(f"/t/{NAME}/games/1/states").json()["views"]
            assert stored[: len(so_far)] == so_far  # the live steps were the stored game's first ones
            assert web.get(f"/t/{NAME}/games/1.json").json()["game"]["live"] is False
            with web.stream("GET", f"/t/{NAME}/games/1/events") as stream:  # a stored game: done at once
                assert list(events_of(stream.iter_lines())) == [("done", {"status": "done"})]
            assert web.get(f"/t/{NAME}/games/9/events").status_code == 404
            assert web.get("/t/nope/games/1/events").status_code == 404


def _client(url: str, **settings: object) -> Any:
    """The app over ``url`` as a context manager (client_for's generator, entered and left once)."""
    return contextlib.contextmanager(client_for)(url, events_max_s=120.0, **settings)


def test_a_queue_workers_running_game_is_live_too(pg_url: str, tmp_path: Path) -> None:
    """Workers on other machines write the same rows: a queued game held mid-way by its gated bot
    is listed on /live with the worker's plays, and its row goes once the worker stores it."""
    from tests.arena.queue_support import workers

    with held_run(tmp_path, pg_url, "--queue") as (run, gates), workers(pg_url, tmp_path / "workers", 1), \
            _client(pg_url) as web:
        store: Store = web.app.state.store  # type: ignore[attr-defined]
        # held at the gated bot's turn 3: two turns each (and the greedy bot's third when it moves first)
        (row,) = wait_for("live game", lambda: [r for r in store.live_games() if r.plays >= 4] or None)
        assert row.tournament == NAME and row.number == 1 and row.worker  # played by the worker
        assert row.plays in (4, 5)
        listed = web.get("/live.json").json()["games"]
        assert [(g["number"], g["plays"]) for g in listed] == [(1, row.plays)]
        views = web.get(f"/t/{NAME}/games/1/states").json()["views"]
        assert len(views) == row.plays + 1
        (gates / "turn-3").touch()
        (gates / "turn-4").touch()
        _, err = run.communicate(timeout=180)
        assert run.returncode == 0, err.decode(errors="replace")[-2000:]
        assert store.live_games() == [] and web.get("/live.json").json()["games"] == []
