"""Versions and new bots first: the operator's `arena submissions activate/retire` (one line, exit 2
on a refusal), when a bot entered the pool and how many games it has played since (the store's
``pool_history``), and a ladder round that plays a new version's first games first, in a pool larger
than a round (``plan_round`` with ``bots_per_round``), without playing a game: the pairings are pure."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select

from arena.config import ConfigError, LadderConfig, TournamentConfig, load_config
from arena.play.ladder import plan_round
from arena.rating.ratings import Rating
from arena.schedule.pairings import ScheduledGame, round_pool
from arena.store.models import Bot, Submission, SubmissionStatus, User
from arena.store.store import BotRow, GameRow, Store
from arena.store.submissions import accept, new_submission
from arena.store.users import add_user
from arena.store.versions import Entry, VersionRefused, activate, pool_history, retire
from arena.store.versions import _lock_user as lock_user
from tests.arena.test_arena_ladder import (  # noqa: F401  (make_ladder: a fixture)
    GREEDY,
    RANDOM_A,
    Ladder,
    assert_no_processes_left,
    assert_played_once,
    bot_command,
    make_ladder,
    write_ladder,
)
from tests.support import arena_here, assert_usage_error


@pytest.fixture
def versions_db(tmp_path: Path) -> str:
    """A ladder "lad" with alice's versions 1 and 2 (2 plays)."""
    url = f"sqlite:///{tmp_path / 'versions.db'}"
    store = Store(url)
    try:
        tid = store.create_tournament("lad", "fingerprint", {"players": 2}, [])
        add_user(store, "alice")
        with store.session() as s:
            alice = s.scalar(select(User.id).where(User.name == "alice"))
        for version in (1, 2):
            accept(store, new_submission(store, alice, tid, f"{version:064x}", b"x", 1, "package").id, None)
    finally:
        store.close()
    return url


def pool(url: str) -> list[str]:
    store = Store(url, read_only=True)
    try:
        tid = store.tournament_id("lad")
        assert tid is not None
        return [b.name for b in store.bots(tid, active_only=True)]
    finally:
        store.close()


def test_the_operator_rolls_a_users_bot_back_and_retires_it(versions_db: str) -> None:
    where = ["--db", versions_db, "--ladder", "lad"]
    done = arena_here("submissions", "activate", "alice", "alice.v1", *where)
    assert (done.returncode, done.stdout) == (0, "activated alice.v1: it plays from the ladder's next round "
                                                 "(alice.v2 left it)\n"), done.stderr
    assert pool(versions_db) == ["alice.v1"]
    done = arena_here("submissions", "retire", "alice", *where)
    assert (done.returncode, done.stdout) == (0, "retired alice.v1: no version of alice's plays from the ladder's "
                                                 "next round\n"), done.stderr
    assert pool(versions_db) == []
    assert arena_here("submissions", "activate", "alice", "2", *where).returncode == 0
    assert pool(versions_db) == ["alice.v2"]


@pytest.mark.parametrize(("args", "says"), [
    (["activate", "alice", "2"], "alice.v2 is already the active version"),
    (["activate", "alice", "7"], "alice has no version 7 in this ladder"),
    (["activate", "alice", "bob.v1"], 'a version is a number or alice.vN, not "bob.v1"'),
    (["activate", "bob", "1"], 'no user named "bob"'),
    (["retire", "alice", "--ladder", "cup"], 'no ladder named "cup"'),
    (["retire", "alice", "--ladder", None], "needs the ladder's tournament file, or --db URL and --ladder NAME"),
])
def test_refusals_are_one_line_and_exit_2(versions_db: str, args: list[str | None], says: str) -> None:
    given = [a for a in args if a is not None]
    if "--ladder" not in args:
        given += ["--ladder", "lad"]
    elif None in args:
        given = given[:-1]
    line = assert_usage_error(arena_here("submissions", *given, "--db", versions_db), "arena")
    assert says in line, line
    assert pool(versions_db) == ["alice.v2"]


# --- the pool a round pairs: new bots first, others in turn ------------------------------------------


def test_round_pool_takes_new_bots_first_then_those_that_waited_longest() -> None:
    # 6 bots, 3 a round: bot 4 is new (1 game of 4), the others have had theirs; by their newest game
    # bots 2 and 0 waited longest
    since, last = [9, 9, 9, 9, 1, 9], [30, 40, 12, 33, 41, 35]
    assert round_pool(since, last, 3, 4) == ([0, 2, 4], [4])
    assert round_pool(since, last, 0, 4) == ([0, 1, 2, 3, 4, 5], [4]), "no cap: every bot"
    assert round_pool(since, last, 3, 0) == ([0, 2, 3], []), "new_bot_games 0: nobody is new"
    # more new bots than a round holds: the fewest games first
    assert round_pool([3, 0, 2, 9], [5, 0, 6, 1], 2, 4) == ([1, 2], [1, 2])
    with pytest.raises(ValueError):
        round_pool([1], [1, 2], 0, 1)


def ladder_config(tmp_path: Path, **ladder: int) -> TournamentConfig:
    bots = [{"name": f"b{i}", "command": "python3 -c pass"} for i in range(8)]
    path = write_ladder(tmp_path / "big.toml", f"sqlite:///{tmp_path / 'big.db'}", bots,
                        {"interval": "1h", "pairings_per_bot": 1, **ladder})
    return load_config(path, check_programs=False)


def test_a_new_version_plays_its_first_games_at_the_next_round_in_a_pool_larger_than_a_round(tmp_path: Path) -> None:
    config = ladder_config(tmp_path, bots_per_round=4, new_bot_games=4)
    active = [BotRow(i, i, f"b{i}", "x", None, {}, True) for i in range(8)]
    ratings = {f"b{i}": Rating(25.0 + i, 2.0) for i in range(7)}  # b7 is new: the default rating
    # b7 entered the pool after game 100 and has not played; the file's bots b0..b6 have, b5 and b2 longest ago
    history = {i: Entry(50, 100 - (i == 5) * 60 - (i == 2) * 50 - i, entered_later=False) for i in range(7)}
    history[7] = Entry(0, 0, entered_later=True)
    games = plan_round(config, active, ratings, 13, 100, 50, history)
    playing = {p for g in games for p in g.seat_bots}
    assert playing == {7, 5, 2, 6}, "the new bot, then the three that waited longest (b6: its newest game is 94)"
    newbie = [g for g in games if 7 in g.seat_bots]
    assert len(newbie) >= 4, "enough pairings for its first new_bot_games games (2 a pairing; others may pick it too)"
    assert games[:len(newbie)] == newbie and newbie[0].number == 101, "and played first"
    assert games[0].set_number == 51 and [g.number for g in games] == list(range(101, 101 + len(games)))

    # without the history nobody is new and nobody has played: the first bots_per_round by position
    plain = plan_round(config, active, ratings, 13, 100, 50)
    assert {p for g in plain for p in g.seat_bots} == {0, 1, 2, 3}
    # once it has had its first games it waits its turn like the others
    history[7] = Entry(4, 104, entered_later=True)
    later = plan_round(config, active, ratings, 14, 104, 52, history)
    assert 7 not in {p for g in later for p in g.seat_bots}


def settle(store: Store, tid: int) -> None:
    """The pending game, settled (failed by the referee: its seats are written as a played game's are)."""
    (task,) = store.claim(tid, 1)
    assert store.fail(task, "a failure of the test's", retry=False)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database of each kind."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("pg_url"))


def test_the_store_counts_a_bots_games_from_when_it_last_entered_the_pool(store_url: str) -> None:
    store = Store(store_url)
    try:
        tid = store.create_tournament("t", "fingerprint", {"players": 2}, [("a", "x", None, {}), ("b", "x", None, {})])
        assert pool_history(store, tid, [0, 1]) == {0: Entry(0, 0, False), 1: Entry(0, 0, False)}
        for number in (1, 2, 3):
            store.add_games(tid, 1, [ScheduledGame(number, (0, 1), number, (0, 1), number)])
            settle(store, tid)
        store.add_bot(tid, "c", "x")  # enters after game 3
        store.add_games(tid, 2, [ScheduledGame(4, (2, 0), 4, (0, 2), 4)])
        settle(store, tid)
        assert pool_history(store, tid, [0, 1, 2]) == {0: Entry(4, 4, False), 1: Entry(3, 3, False),
                                                      2: Entry(1, 4, True)}
    finally:
        store.close()


def test_the_ladder_settings_are_checked(tmp_path: Path) -> None:
    assert ladder_config(tmp_path).ladder == LadderConfig(3600.0, None, 1, 1, bots_per_round=0, new_bot_games=8)
    for key, value, says in (("bots_per_round", 1, "must be 0 (every active bot) or at least players (2), not 1"),
                             ("new_bot_games", -1, "must be a whole number >= 0, not -1")):
        with pytest.raises(ConfigError, match=re.escape(f"[ladder] {key} {says}")):
            ladder_config(tmp_path, **{key: value})


# --- a real ladder: rollback plays at the next round, a retired bot never -----------------------------


def test_the_ladder_plays_a_rolled_back_version_next_round_and_never_a_retired_bot(
        make_ladder: Callable[..., Ladder]) -> None:
    ladder = make_ladder([GREEDY, RANDOM_A], {"interval": "1h", "pairings_per_bot": 1, "new_bot_games": 2})
    store = ladder.store
    for version, seed in ((1, "31"), (2, "32")):  # alice's versions, random bots of their own seeds
        done = ladder.run("bots", "add", f"alice.v{version}", bot_command("random_bot.py"), "-f", str(ladder.path))
        assert done.returncode == 0, done.stderr
    tid = ladder.tid
    assert tid is not None
    alice = _alice_owns(store, tid)
    assert retire(store, tid, alice) == "alice.v1"  # the operator's adds made both active: start from none
    assert activate(store, tid, alice, 1) == ("alice.v1", None)

    def next_round() -> list[GameRow]:
        """One round of `arena serve`, played: its games."""
        before = len(ladder.games())
        text = ladder.serve("--rounds", "1")
        games = assert_played_once(ladder)[before:]
        assert games and len({g.round for g in games}) == 1, text
        return games

    bots = {b.name: b.position for b in store.bots(tid)}
    v1, v2 = bots["alice.v1"], bots["alice.v2"]
    first = next_round()
    assert v1 in first[0].seat_bots and all(v2 not in g.seat_bots for g in first)
    rating_v1 = store.ratings(tid)["alice.v1"]

    assert activate(store, tid, alice, 2) == ("alice.v2", "alice.v1")  # a new version replaces it
    second = next_round()
    assert v2 in second[0].seat_bots and all(v1 not in g.seat_bots for g in second)

    assert activate(store, tid, alice, 1) == ("alice.v1", "alice.v2")  # the rollback
    assert store.ratings(tid)["alice.v1"] == rating_v1, "its rating waited for it"
    third = next_round()
    assert v1 in third[0].seat_bots and v1 in third[1].seat_bots, "its first games since it came back come first"
    assert all(v2 not in g.seat_bots for g in third)

    assert retire(store, tid, alice) == "alice.v1"
    fourth = next_round()
    assert all(v1 not in g.seat_bots and v2 not in g.seat_bots for g in fourth)
    assert {frozenset(g.seat_bots) for g in fourth} == {frozenset({bots["greedy"], bots["random-a"]})}
    assert_no_processes_left(ladder.marker)


def _alice_owns(store: Store, tid: int) -> int:
    """User alice, whose accepted submissions are bots alice.v1 and alice.v2 (as the web's accept makes them)."""
    add_user(store, "alice")
    with store.session() as s, s.begin():
        alice = s.scalar(select(User.id).where(User.name == "alice"))
        for version in (1, 2):
            bot = s.scalar(select(Bot.id).where(Bot.tournament_id == tid, Bot.name == f"alice.v{version}"))
            s.add(Submission(user_id=alice, tournament_id=tid, version=version, archive="0" * 64, command="package",
                             status=SubmissionStatus.ACCEPTED.value, bot_id=bot))
    assert alice is not None
    return int(alice)


def test_a_change_of_versions_waits_for_another_of_the_same_user(store_url: str) -> None:
    """Activating is done under a lock on the user (their row on PostgreSQL, the write lock on
    SQLite): while another transaction holds it, an activation waits, then runs on what that one
    left; so two changes of one user's versions never interleave, and one version at most plays."""
    store = Store(store_url)
    try:
        tid = store.create_tournament("lad", "fingerprint", {"players": 2}, [])
        add_user(store, "alice")
        with store.session() as s:
            alice = s.scalar(select(User.id).where(User.name == "alice"))
        for version in (1, 2):
            accept(store, new_submission(store, alice, tid, f"{version:064x}", b"x", 1, "package").id, None)
        done = threading.Event()
        answer: list[object] = []

        def rollback() -> None:
            answer.append(activate(store, tid, alice, 1))
            done.set()

        with store.engine.connect() as holder:
            held = holder.begin()
            lock_user(holder, alice)
            thread = threading.Thread(target=rollback, daemon=True)
            thread.start()
            assert not done.wait(1.0), "the activation ran while another transaction held the user"
            held.rollback()
        assert done.wait(30.0), "the activation never ran"
        thread.join(30.0)
        assert answer == [("alice.v1", "alice.v2")]
        assert [b.name for b in store.bots(tid, active_only=True)] == ["alice.v1"]
        assert retire(store, tid, alice) == "alice.v1" and store.bots(tid, active_only=True) == []
        with pytest.raises(VersionRefused, match="no version of alice's is in the pool"):
            retire(store, tid, alice)
    finally:
        store.close()
