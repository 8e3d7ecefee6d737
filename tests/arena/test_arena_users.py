"""`arena users add/list/remove` run as the real command (its main, in the test process): the token printed once and only its hash in
the database, a removed user's token dead, every refusal one line and exit status 2."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from sqlalchemy import select

from arena.store.models import User
from arena.store.store import Store
from arena.store.users import user_for_token
from tests.arena_support import write_tournament
from tests.support import arena_here


def users(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`arena users ...` (its main, in this process) from the folder ``cwd``."""
    return arena_here("users", *args, cwd=cwd)


def refused(done: subprocess.CompletedProcess[str], said: str) -> None:
    assert done.returncode == 2, done
    assert said in done.stderr and done.stderr.count("\n") == 1 and done.stderr.startswith("arena: error:"), done.stderr


def test_users_add_list_remove_through_the_real_command(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'arena.db'}"
    added = users("add", "alice", "--db", db, cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip()
    assert added.stdout == token + "\n" and len(token) >= 43, "the token alone on stdout"
    assert "Authorization: Bearer" in added.stderr and "/login" in added.stderr
    store = Store(db)
    try:
        with store.session() as s:
            (user,) = s.scalars(select(User))
        assert user.token_sha256 == hashlib.sha256(token.encode()).hexdigest()
        assert user_for_token(store, token) is not None and user_for_token(store, token + "x") is None
        assert users("add", "bob", "--db", db, cwd=tmp_path).returncode == 0
        listed = users("list", "--db", db, cwd=tmp_path)
        assert listed.returncode == 0 and [line.split()[:2] for line in listed.stdout.splitlines()[1:]] == [
            ["alice", "active"], ["bob", "active"]]
        refused(users("add", "alice", "--db", db, cwd=tmp_path), 'a user named "alice" exists already')
        removed = users("remove", "alice", "--db", db, cwd=tmp_path)
        assert removed.returncode == 0 and "no longer works" in removed.stdout
        assert user_for_token(store, token) is None
        assert "removed" in users("list", "--db", db, cwd=tmp_path).stdout.splitlines()[1]
        again = users("add", "alice", "--db", db, cwd=tmp_path)  # back in, with a new token
        assert again.returncode == 0 and again.stdout.strip() != token
        assert user_for_token(store, token) is None and user_for_token(store, again.stdout.strip()) is not None
    finally:
        store.close()
    # read only once the database is closed: closing another descriptor of the file would drop
    # this process's SQLite locks on it
    for path in tmp_path.glob("arena.db*"):
        assert token.encode() not in path.read_bytes(), f"the token is stored in clear in {path.name}"


def test_users_take_the_database_of_a_tournament_file(tmp_path: Path) -> None:
    path = write_tournament(tmp_path / "cup.toml", {"name": "cup", "database": "sqlite:///cup.db"},
                            [{"name": "a", "command": "python3 a.py"}, {"name": "b", "command": "python3 b.py"}])
    assert users("add", "carol", str(path), cwd=tmp_path).returncode == 0
    assert "carol" in users("list", str(path), cwd=tmp_path).stdout


def test_users_refusals_are_one_line_and_status_2(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'arena.db'}"
    refused(users("add", "<script>\nx", "--db", db, cwd=tmp_path), 'not "<script>\\nx"')
    refused(users("add", "a.v2", "--db", db, cwd=tmp_path), "a user name must be")
    assert not (tmp_path / "arena.db").exists(), "a bad name is refused before the database is made"
    refused(users("remove", "nobody", "--db", db, cwd=tmp_path), 'no user named "nobody"')
    refused(users("list", cwd=tmp_path), "a tournament file or --db")
    refused(users("add", "dave", str(tmp_path / "cup.toml"), "--db", db, cwd=tmp_path), "one of them")
    refused(users("add", cwd=tmp_path), "required: name")
