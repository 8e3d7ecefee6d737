"""`arena remote` (a real process) against a real `arena web --submit` on loopback: a package
submitted, checked by the real `referee check` in the sandbox, accepted, and its verdict told to
the user's webhook by the server's deliverer, signed; the user's games listed; and every refusal
(a wrong token, no challenge endpoint on this server, an unreachable server, bad arguments) one
line and exit status 2."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from arena.notify.signing import verify
from arena.play.archives import CACHE_ENV
from arena.store import notices
from arena.store.models import User
from arena.store.store import Store
from arena.store.users import add_user
from tests.notify.receiver import receiver
from tests.support import arena_here, assert_usage_error, run_arena
from tests.web.browser_support import WebServer, free_port, serve
from tests.web.test_web_submit import LADDER, TIME_CONTROL, archive

CHECK_WAIT_S = 240  # the check's real sandboxed games on a loaded machine; bounded


@pytest.fixture(scope="module")
def remote_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """`arena web --submit` over an empty ladder; alice's webhook at a loopback receiver."""
    folder = tmp_path_factory.mktemp("remote")
    db = f"sqlite:///{folder / 'ladder.db'}"
    store = Store(db)
    with receiver() as (hook, got):
        try:
            store.create_tournament(LADDER, "fingerprint", {"players": 2, "time_control": TIME_CONTROL}, [])
            token = add_user(store, "alice")
            with store.engine.begin() as conn:
                notices.set_settings(conn, notices.Settings(allow_private=True))
                alice = conn.scalar(select(User.id).where(User.name == "alice"))
                secret = notices.set_webhook(conn, alice, hook)
        finally:
            store.close()
        package = folder / "bot.tar.gz"
        package.write_bytes(archive())
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(CACHE_ENV, str(folder / "cache"))
            with serve(db, folder, "--submit", LADDER) as server:
                yield {"server": server, "token": token, "package": package, "received": got, "secret": secret}


def remote(server: WebServer, token: str, *args: str, timeout: float = 60) -> Any:
    return run_arena("remote", *args, "--server", server.base, "--token", token, timeout=timeout)


def test_a_package_submitted_remotely_is_checked_accepted_and_told_to_the_webhook(remote_server: dict[str, Any]
                                                                                  ) -> None:
    server, token = remote_server["server"], remote_server["token"]
    done = remote(server, token, "submit", str(remote_server["package"]), "--timeout", str(CHECK_WAIT_S),
                  "--poll", "1", timeout=CHECK_WAIT_S + 30)
    assert done.returncode == 0, done.stdout + done.stderr + server.output()
    assert done.stdout == f"submission 1: accepted, alice.v1 joins {LADDER}\n"
    got = remote_server["received"]
    assert got.wait_for(lambda r: len(r.accepted()) >= 1), server.output()
    [(body, headers)] = got.accepted()
    assert verify(remote_server["secret"], body, headers["X-Arena-Signature"])
    event = json.loads(body)
    assert event["event"] == "submission.verdict" and event["version"] == 1
    assert {k: event["data"][k] for k in ("submission", "status", "bot")} == {
        "submission": 1, "status": "accepted", "bot": "alice.v1"}
    listed = remote(server, token, "games", "--tournament", LADDER, "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout)["games"] == [], listed.stderr


def test_remote_refusals_are_one_line_and_exit_status_2(remote_server: dict[str, Any], tmp_path: Path) -> None:
    server, token = remote_server["server"], remote_server["token"]
    wrong = remote(server, token + "x", "games", "--tournament", LADDER)
    assert "answered 401: the token is not a user's" in assert_usage_error(wrong, "arena")
    # a challenge of an opponent the ladder does not have (run alone: of a bot alice does not have yet) is a
    # 404 in one line; tests/web/test_web_remote_challenge.py plays challenges to their verdicts
    challenge = remote(server, token, "challenge", "--tournament", LADDER, "--bot", "alice.v1",
                       "--opponent", "house", "--pairs", "2")
    assert f"POST /t/{LADDER}/challenges: the server answered 404" in assert_usage_error(challenge, "arena")
    nobody = f"http://127.0.0.1:{free_port()}"
    unreachable = arena_here("remote", "games", "--tournament", LADDER, "--server", nobody, "--token", token)
    assert f"cannot reach {nobody}" in assert_usage_error(unreachable, "arena")
    for argv, said in [
        (("games", "--tournament", LADDER, "--token", token), "give the server"),
        (("games", "--tournament", LADDER, "--server", server.base), "give your token"),
        (("games", "--tournament", LADDER, "--server", "ftp://x", "--token", token), "--server must be"),
        (("submit", str(tmp_path / "none"), "--server", server.base, "--token", token), "no such folder"),
        (("challenge", "--tournament", LADDER, "--bot", "a", "--opponent", "b", "--pairs", "0",
          "--server", server.base, "--token", token), "--pairs"),
    ]:
        assert said in assert_usage_error(arena_here("remote", *argv, env={"ARENA_SERVER": "", "ARENA_TOKEN": ""}),
                                          "arena")
