"""Notifications on a real database (SQLite and PostgreSQL) to a real HTTP receiver on loopback:
a delivery that fails twice is retried and accepted once, signed as docs/notifications.md's
snippet checks; a deliverer process killed while it holds a delivery is replaced after its lease,
and the event is accepted once; a crash streak is told once per streak; URLs that would reach the
server's own networks are refused unless the operator allows them."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from arena.notify import notify
from arena.notify.deliver import Deliverer, DeliverySettings
from arena.notify.targets import TargetRefused, check_target, check_url
from arena.schedule.pairings import pairings, round_robin, schedule
from arena.store import notices
from arena.store.models import User
from arena.store.store import GameTask, Store
from arena.store.users import add_user
from casino.v1 import game_pb2
from tests.conftest import ROOT
from tests.notify.receiver import WAIT_S, Received, receiver
from tests.support import arena_here

QUICK = DeliverySettings(timeout_s=2.0, attempts=4, backoff_s=0.0, lease_s=5.0, poll_s=0.1)


def documented_verify() -> Any:
    """The ``verify`` of docs/notifications.md's snippet, as a receiver would paste it."""
    doc = (ROOT / "docs" / "notifications.md").read_text(encoding="utf-8")
    snippet = re.search(r"```python\n(.*?)```", doc, re.DOTALL)
    assert snippet is not None and "def verify" in snippet.group(1)
    space: dict[str, Any] = {}
    exec(snippet.group(1), space)  # noqa: S102 (the documentation's own code, run as written)
    return space["verify"]


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    url = f"sqlite:///{tmp_path / 'notify.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    opened = Store(url)
    with opened.engine.begin() as conn:  # the tests' receivers are on loopback
        notices.set_settings(conn, notices.Settings(allow_private=True))
    try:
        yield opened
    finally:
        opened.close()


def user_id(store: Store, name: str) -> int:
    with store.session() as s:
        found = s.scalar(select(User.id).where(User.name == name))
    assert found is not None
    return int(found)


def set_hook(store: Store, user_id: int | None, url: str) -> str:
    with store.engine.begin() as conn:
        return notices.set_webhook(conn, user_id, url)


def deliver_until(deliverer: Deliverer, got: Received, accepted: int) -> None:
    """Run the deliverer's batches until the receiver accepted ``accepted`` deliveries (bounded)."""
    deadline = time.monotonic() + WAIT_S
    while len(got.accepted()) < accepted:
        assert time.monotonic() < deadline, got.requests
        deliverer.run_once()
        time.sleep(0.05)


def test_a_delivery_that_fails_twice_is_accepted_once_and_signed(store: Store) -> None:
    add_user(store, "alice")
    uid = user_id(store, "alice")
    with receiver(script=[500, 503]) as (url, got), receiver() as (ops_url, ops):
        secret = set_hook(store, uid, url)
        ops_secret = set_hook(store, None, ops_url)
        event_id = notify(store, "submission.verdict", uid, {"submission": 1, "status": "accepted"})
        assert event_id is not None
        deliverer = Deliverer(store, QUICK)
        deliver_until(deliverer, got, 1)
        deliver_until(deliverer, ops, 1)
        for _ in range(3):  # nothing is due any more: no second acceptance
            deliverer.run_once()
        assert [status for _, _, status in got.requests] == [500, 503, 200]
        [(body, headers)] = got.accepted()
        verify = documented_verify()
        assert verify(secret, body, headers["X-Arena-Signature"])
        assert not verify(secret, body + b" ", headers["X-Arena-Signature"])
        assert not verify(ops_secret, body, headers["X-Arena-Signature"])  # each webhook its own secret
        sent = json.loads(body)
        assert sent == {"version": 1, "id": event_id, "event": "submission.verdict", "created_at": sent["created_at"],
                        "data": {"submission": 1, "status": "accepted"}}
        assert headers["X-Arena-Event-Id"] == str(event_id) and headers["X-Arena-Event"] == "submission.verdict"
        [(ops_body, ops_headers)] = ops.accepted()  # the operator's webhook: the same event, its own signature
        assert json.loads(ops_body)["id"] == event_id and verify(ops_secret, ops_body, ops_headers["X-Arena-Signature"])
    with store.engine.connect() as conn:
        [row] = notices.deliveries(conn, uid)
    assert (row["status"], row["attempts"]) == ("delivered", 2)


def test_a_delivery_is_given_up_after_its_attempts(store: Store) -> None:
    with receiver(script=[500] * 10) as (url, got):
        set_hook(store, None, url)
        notify(store, "bot.crash_streak", None, {"bot": "x"})
        deliverer = Deliverer(store, QUICK)
        deadline = time.monotonic() + WAIT_S
        while len(got.requests) < QUICK.attempts and time.monotonic() < deadline:
            deliverer.run_once()
        for _ in range(3):
            deliverer.run_once()
    assert len(got.requests) == QUICK.attempts and got.accepted() == []
    with store.engine.connect() as conn:
        [row] = notices.deliveries(conn, None)
    assert row["status"] == "given_up" and "HTTP 500" in row["last_error"]


def test_webhook_urls_are_http_and_not_the_servers_own_networks() -> None:
    for bad in ("ftp://example.org/x", "file:///etc/passwd", "http://user:pw@example.org/", "http:///x", "", "x" * 3000):
        with pytest.raises(TargetRefused):
            check_url(bad)
    for inside in ("http://127.0.0.1:9/x", "http://[::1]/", "http://10.1.2.3/", "http://169.254.169.254/latest",
                   "http://192.168.0.1/", "http://[::ffff:127.0.0.1]/", "http://localhost/"):
        with pytest.raises(TargetRefused, match="this server's own networks"):
            check_target(inside, allow_private=False)
        check_target(inside, allow_private=True)
    check_target("http://8.8.8.8/hook", allow_private=False)  # a global address (nothing is sent here)


def test_a_private_address_is_refused_at_delivery_unless_allowed(store: Store) -> None:
    with store.engine.begin() as conn:
        notices.set_settings(conn, notices.Settings(allow_private=False))
    with receiver() as (url, got):
        set_hook(store, None, url)
        notify(store, "bot.crash_streak", None, {"bot": "x"})
        Deliverer(store, QUICK).run_once()
        assert got.requests == []  # never connected
        with store.engine.connect() as conn:
            [row] = notices.deliveries(conn, None)
        assert row["status"] == "waiting" and "own networks" in row["last_error"]


# --- a deliverer killed mid-delivery ----------------------------------------------------------------


def test_a_deliverer_killed_while_it_holds_a_delivery_is_replaced_after_its_lease(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'notify.db'}"
    store = Store(url)
    try:
        with store.engine.begin() as conn:
            notices.set_settings(conn, notices.Settings(allow_private=True))
        arrived = threading.Event()
        killed = threading.Event()

        def kill_the_sender() -> None:  # the first request: the deliverer is killed while it waits for us
            arrived.set()
            assert killed.wait(WAIT_S)

        with receiver(script=[503], hold=kill_the_sender) as (hook, got):
            set_hook(store, None, hook)
            event_id = notify(store, "bot.crash_streak", None, {"bot": "x"})
            command = [sys.executable, "-m", "arena.cli", "notify", "deliver", "--db", url, "--timeout", "2",
                       "--lease", "5", "--poll", "0.1"]
            first = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                assert arrived.wait(WAIT_S), "the first deliverer sent nothing"
                first.send_signal(signal.SIGKILL)
                first.wait(30)
            finally:
                if first.poll() is None:
                    first.kill()
                killed.set()
            with store.engine.connect() as conn:  # still claimed by the dead process, not delivered
                [row] = notices.deliveries(conn, None)
            assert row["status"] == "waiting" and row["attempts"] == 0
            second = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                assert got.wait_for(lambda r: len(r.accepted()) == 1), got.requests
            finally:
                second.terminate()
                second.wait(30)
        assert [json.loads(body)["id"] for body, _, _ in got.requests] == [event_id, event_id]
        assert len(got.accepted()) == 1
        with store.engine.connect() as conn:
            [row] = notices.deliveries(conn, None)
        assert row["status"] == "delivered"
    finally:
        store.close()


# --- crash streaks -------------------------------------------------------------------------------------


BOTS = [(name, f"unix:/nowhere/{name}", None, {}) for name in ("a", "b", "c")]  # never started here


def result_of(task: GameTask, crashed_seat: int | None) -> game_pb2.GameResult:
    """Seat 0 wins, or ``crashed_seat`` forfeits by a crash and the other seat wins."""
    failures = [] if crashed_seat is None else [game_pb2.Failure(
        seat=crashed_seat, kind=game_pb2.FAILURE_KIND_CRASH, reason="exited", forfeit=True)]
    winner = 0 if crashed_seat in (None, 1) else 1
    return game_pb2.GameResult(game_id=f"g{task.number}", reason="forfeit" if failures else "target_reached",
                               winner_side=winner, scores=[21, 9] if winner == 0 else [9, 21],
                               ranks=[1, 2] if winner == 0 else [2, 1], deals=1, failures=failures)


def play_round(store: Store, tid: int, crashing: str | None) -> None:
    """Store every pending game in number order; the bot ``crashing`` crashes in each of its games."""
    names = {b.position: b.name for b in store.bots(tid)}
    while tasks := store.claim(tid, 1):
        [task] = tasks
        seats = [names[p] for p in task.seat_bots]
        assert store.finish(task, result_of(task, seats.index(crashing) if crashing in seats else None), {})


def test_a_crash_streak_is_told_once_when_it_reaches_n(store: Store) -> None:
    with store.engine.begin() as conn:
        notices.set_settings(conn, notices.Settings(crash_streak=2, allow_private=True))
    tid = store.create_tournament("streaks", "f" * 64, {"players": 2}, BOTS)
    store.add_games(tid, 1, round_robin(3, 2, 2, True, 5))
    play_round(store, tid, "a")  # a crashes in each of its 4 games: one streak, told once (at its 2nd game)
    with store.engine.connect() as conn:
        events = notices.events_of(conn, ["bot.crash_streak"])
    assert [e["data"]["bot"] for e in events] == ["a"]
    first = events[0]["data"]
    assert first["streak"] == 2 and first["kinds"] == ["crash", "crash"] and first["url"] == "/t/streaks/owner/a"
    a_games = sorted(n for n, (row, _) in ((n, store.game(tid, n)) for n in range(1, 7)) if 0 in row.seat_bots)
    assert first["games"] == a_games[:2]
    store.add_games(tid, 2, schedule(pairings(3, 2), 2, 2, True, 6, first_number=7, first_set=4))
    play_round(store, tid, None)  # a plays clean games: its streak ends, nothing told
    store.add_games(tid, 3, schedule(pairings(3, 2), 2, 2, True, 7, first_number=13, first_set=7))
    play_round(store, tid, "a")  # a new streak: told once more
    with store.engine.connect() as conn:
        events = notices.events_of(conn, ["bot.crash_streak"])
    assert [e["data"]["bot"] for e in events] == ["a", "a"]
    assert events[1]["data"]["games"][0] > 12 and events[1]["user_id"] is None  # the operator's bot: nobody's


def test_arena_notify_settings_and_webhook_refuse_bad_input_in_one_line(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'n.db'}"
    done = arena_here("notify", "settings", "--db", db, "--crash-streak", "0")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--crash-streak" in done.stderr
    done = arena_here("notify", "webhook", "ftp://x/y", "--db", db)
    assert done.returncode == 2 and "http:// or https://" in done.stderr and done.stderr.count("\n") == 1
    done = arena_here("notify", "webhook", "http://example.org/h", "--db", db, "--user", "nobody")
    assert done.returncode == 2 and "no user named 'nobody'" in done.stderr
    done = arena_here("notify", "settings", "--db", db, "--crash-streak", "4", "--allow-private")
    assert done.returncode == 0 and done.stdout == "crash streak: 4 games\nprivate addresses: allowed\n"
    done = arena_here("notify", "webhook", "https://example.org/h", "--db", db)
    assert done.returncode == 0 and re.fullmatch(r"[0-9a-f]{64}\n", done.stdout)
    assert arena_here("notify", "webhook", "--db", db).stdout == \
        "the webhook for everyone's events: https://example.org/h\n"


def test_two_deliverers_at_once_send_each_event_once(store: Store) -> None:
    with receiver() as (url, got):
        set_hook(store, None, url)
        ids = [notify(store, "bot.crash_streak", None, {"n": n}) for n in range(12)]
        deliverers = [Deliverer(store, DeliverySettings(timeout_s=2.0, lease_s=30.0, batch=12)) for _ in range(2)]
        start = threading.Barrier(2)

        def both(deliverer: Deliverer) -> None:
            start.wait(WAIT_S)
            deliverer.run_once()

        threads = [threading.Thread(target=both, args=(d,)) for d in deliverers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT_S)
        for deliverer in deliverers:  # whatever one claimed while the other ran is sent by now
            deliverer.run_once()
    assert sorted(json.loads(body)["id"] for body, _ in got.accepted()) == sorted(ids)
