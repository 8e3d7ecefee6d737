"""The live games' event streams, shared and capped (arena/web/live_hub.py): many streams of one
game cost one read of its live row per interval, counted on the real store's engine; each stream
still gets every change and the end; streams past a client's cap are a 429, past the server's a
503, both with Retry-After; a closed stream gives its place back. A running game here is a real
database row claimed and reported through the store's own calls, as a player writes it."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event
from starlette.testclient import TestClient

from arena.schedule.pairings import round_robin
from arena.store.store import GameTask, LiveEntry, Store
from tests.web.test_web_live import events_of
from tests.support import arena_here
from tests.web.web_support import client_for

NAME = "held"
WAIT_S = 60.0  # every wait here is bounded by this


def wait_until(what: str, probe: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not probe():
        assert time.monotonic() < deadline, f"not {what} within {WAIT_S} s"
        time.sleep(0.01)


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[str, Store, GameTask]]:
    """(URL, a writable store, the task) of a database whose game 1 is running and has reported 3 plays."""
    url = f"sqlite:///{tmp_path / 'held.db'}"
    store = Store(url)
    tid = store.create_tournament(NAME, "fp", {"players": 2}, [("a", "x", None, {}), ("b", "y", None, {})],
                                  round_robin(2, 2, 2, False, 7))
    task = next(t for t in store.claim(tid, 2) if t.number == 1)
    report(store, task, 3)
    try:
        yield url, store, task
    finally:
        store.close()


def report(store: Store, task: GameTask, plays: int) -> None:
    assert store.put_live([LiveEntry(task.id, task.attempt, plays, json.dumps({"plays": plays}))]) == 1


def other_client(web: TestClient, address: str) -> TestClient:
    """Another client of the same running app (its lifespan ran once, in ``web``), from ``address``."""
    return TestClient(web.app, client=(address, 4000), raise_server_exceptions=False)


def open_stream(stack: contextlib.ExitStack, web: TestClient, number: int = 1) -> Any:
    return stack.enter_context(web.stream("GET", f"/t/{NAME}/games/{number}/events"))


def hub_of(web: TestClient) -> Any:
    return web.app.state.live_hub  # type: ignore[attr-defined]


def test_a_client_past_its_cap_gets_a_429_and_the_server_past_its_own_a_503(
        running: tuple[str, Store, GameTask]) -> None:
    url, _, _ = running
    for web in client_for(url, events_per_client=2, events_total=3):
        hub = hub_of(web)
        with contextlib.ExitStack() as stack:
            first = [open_stream(stack, web) for _ in range(2)]
            assert [s.status_code for s in first] == [200, 200]
            refused = web.get(f"/t/{NAME}/games/1/events", headers={"accept": "application/json"})
            assert refused.status_code == 429 and refused.headers["retry-after"].isdigit()
            assert "too many live game streams from your address" in refused.json()["error"]
            assert "\n" not in refused.json()["error"]
            elsewhere = other_client(web, "192.0.2.5")
            assert open_stream(stack, elsewhere).status_code == 200  # another address has its own cap
            full = other_client(web, "192.0.2.6").get(f"/t/{NAME}/games/1/events")
            assert full.status_code == 503 and full.headers["retry-after"].isdigit()
            assert "as many live game streams as it may (3)" in full.text
            assert hub.total == 3 and dict(hub.streams) == {"testclient": 2, "192.0.2.5": 1}
        # the streams were closed: their places come back (the app sees the client leave a moment later)
        wait_until("every place given back", lambda: hub.total == 0 and not hub.streams and not hub.watches)
        with web.stream("GET", f"/t/{NAME}/games/1/events") as again:
            assert again.status_code == 200
        assert web.get(f"/t/{NAME}/games/9/events").status_code == 404  # a refused game holds no place
        wait_until("the last place given back", lambda: hub.total == 0)


def test_many_streams_of_one_game_share_one_read_per_interval_and_all_get_every_change(
        running: tuple[str, Store, GameTask]) -> None:
    url, store, task = running
    streams_n, intervals = 20, 8
    for web in client_for(url, events_per_client=streams_n, events_poll_s=0.05):
        hub = hub_of(web)
        engine = web.app.state.store.engine  # type: ignore[attr-defined]
        live_reads: list[str] = []

        def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            if "live_games" in statement:
                live_reads.append(statement)

        with contextlib.ExitStack() as stack:
            streams = [open_stream(stack, web) for _ in range(streams_n)]
            lines = [events_of(s.iter_lines()) for s in streams]
            assert all(next(events) == ("plays", {"plays": 3}) for events in lines)
            assert len(hub.watches) == 1
            # every stream is open and waiting: count the database's reads of live rows over some intervals
            event.listen(engine, "before_cursor_execute", seen)
            try:
                start = hub.reads
                wait_until(f"{intervals} polls", lambda: hub.reads >= start + intervals)
                polls = hub.reads - start
                counted = len(live_reads)
            finally:
                event.remove(engine, "before_cursor_execute", seen)
            # one read per poll (give or take the one in flight when counting stopped), not one per stream
            assert polls - 1 <= counted <= polls + 1, (polls, counted)
            assert counted < 2 * intervals < streams_n * intervals
            report(store, task, 5)  # a new play reaches every stream
            assert all(next(events) == ("plays", {"plays": 5}) for events in lines)
            assert store.fail(task, "stopped by the test", retry=False)  # and the end too
            assert all(next(events) == ("done", {"status": "failed"}) for events in lines)
        wait_until("the watch stopped and every place given back",
                   lambda: not hub.watches and hub.total == 0)
        reads = hub.reads
        with web.stream("GET", f"/t/{NAME}/games/1/events") as ended:  # a settled game: done at once
            assert list(events_of(ended.iter_lines())) == [("done", {"status": "failed"})]
        assert hub.reads == reads + 1


@pytest.mark.parametrize("flag", ["--events-per-client", "--events-total"])
def test_arena_web_takes_the_caps_and_refuses_a_cap_below_one(flag: str, tmp_path: Path) -> None:
    from arena.cli.main import build_parser
    from arena.cli.web import web_settings

    settings = web_settings(build_parser().parse_args(["web", "--db", "sqlite:///x.db", flag, "9"]))
    assert getattr(settings, flag.removeprefix("--").replace("-", "_")) == 9
    done = arena_here("web", "--db", "sqlite:///x.db", flag, "0", cwd=tmp_path)
    assert done.returncode == 2 and flag in done.stderr and done.stderr.count("\n") == 1, done.stderr
