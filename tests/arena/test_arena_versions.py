"""Versions and new bots first: the operator's `arena submissions activate/retire` (one line, exit 2
on a refusal), when a bot entered the pool and how many games it has played since (the store's
``pool_history``), and a ladder round that plays a new version's first games first, in a pool larger
than a round (``plan_round`` with ``bots_per_round``), without playing a game: the pairings are pure."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from arena.store.models import User
from arena.store.store import Store
from arena.store.submissions import accept, new_submission
from arena.store.users import add_user
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
