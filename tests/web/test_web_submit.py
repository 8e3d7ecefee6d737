"""Access and submission: bearer tokens and the login cookie, CSRF on every form, a private app,
and bots submitted through /submit: checked by the real `referee check` in the real sandbox,
entered into the ladder as a new version (the old one retired) or rejected with the reason;
oversized uploads and every kind of bad archive refused, bot-chosen text shown escaped."""

from __future__ import annotations

import json
import logging
import re
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from sqlalchemy import select
from starlette.testclient import TestClient

from arena.play.archives import CACHE_ENV
from arena.store.models import User
from arena.store.store import Store
from arena.store.users import add_user
from tests.arena.test_arena_archives import gzipped, member, sample_members, tar_bytes
from tests.support import arena_here
from tests.web.web_support import client_for

LADDER = "open"
RANDOM = "python random_bot.py"  # the sample random bot at the package's root, as its bot.toml runs it
CHECK_WAIT_S = 120.0  # a check of 2 x 1 games of real sandboxed bots; bounded by check_timeout_s too
TIME_CONTROL = {"move_time_ms": 2000, "grace_ms": 50, "startup_time_ms": 10_000, "cpu_time_ms": 0,
                "bank_initial_ms": 0, "bank_increment_ms": 0}


@pytest.fixture
def ladder_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A database holding an empty ladder; the archive cache in this test's folder."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    url = f"sqlite:///{tmp_path / 'ladder.db'}"
    store = Store(url)
    store.create_tournament(LADDER, "fingerprint", {"players": 2, "time_control": TIME_CONTROL}, [])
    store.close()
    return url


@pytest.fixture
def tokens(ladder_db: str) -> dict[str, str]:
    store = Store(ladder_db)
    try:
        return {name: add_user(store, name) for name in ("alice", "bob")}
    finally:
        store.close()


def app(db: str, **settings: Any) -> Iterator[TestClient]:
    yield from client_for(db, submit=LADDER, check_games=1, check_timeout_s=CHECK_WAIT_S, **settings)


@pytest.fixture
def web(ladder_db: str) -> Iterator[TestClient]:
    yield from app(ladder_db)


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}", "accept": "application/json"}


def sent_to_login(answer: Any, back_to: str) -> bool:
    """A page that needs a user, asked for by a browser without one: a redirect to the login form."""
    return bool(answer.status_code == 303 and answer.headers["location"] == f"/login?next={quote(back_to, safe='')}")


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, html
    return found.group(1)


def log_in(web: TestClient, token: str) -> str:
    """Log in through the form, as a browser does; the session's CSRF token for the next forms."""
    form = web.get("/login")
    answer = web.post("/login", data={"token": token, "csrf": csrf_of(form.text), "next": "/submit"},
                      follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/submit", answer.text
    return csrf_of(web.get("/submit").text)


def manifest(run: str = RANDOM, runtime: str = "python") -> tuple[tarfile.TarInfo, bytes | None]:
    """A bot.toml member running ``run`` in ``runtime``."""
    return member("bot.toml", f"runtime = {runtime!r}\nrun = {json.dumps(run)}\n".encode())


def archive(extra: list[tuple[tarfile.TarInfo, bytes | None]] | None = None, sample: bool = True,
            run: str | None = RANDOM) -> bytes:
    """A bot package: the sample bots (``sample``), ``extra``, and a bot.toml running ``run`` (None: none)."""
    toml = [manifest(run)] if run is not None else []
    return gzipped(tar_bytes([*(sample_members() if sample else []), *(extra or []), *toml]))


def send(web: TestClient, content: bytes, headers: dict[str, str] | None = None, csrf: str | None = None) -> Any:
    data = {**({"csrf": csrf} if csrf else {})}
    return web.post("/submit", files={"archive": ("bot.tar.gz", content, "application/gzip")}, data=data,
                    headers=headers or {}, follow_redirects=False)


def verdict(web: TestClient, sid: int, token: str) -> dict[str, Any]:
    """The submission once its check has ended (polled, bounded)."""
    deadline = time.monotonic() + CHECK_WAIT_S + 30
    while True:
        found: dict[str, Any] = web.get(f"/submissions/{sid}.json", headers=bearer(token)).json()["submission"]
        if found["status"] != "checking" or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def pool(db: str) -> dict[str, bool]:
    store = Store(db, read_only=True)
    try:
        tid = store.tournament_id(LADDER)
        assert tid is not None
        return {b.name: b.active for b in store.bots(tid)}
    finally:
        store.close()


# --- access -------------------------------------------------------------------------------------


def test_a_bearer_token_is_a_user_and_a_wrong_one_is_a_401(web: TestClient, tokens: dict[str, str]) -> None:
    mine = web.get("/submit", headers=bearer(tokens["alice"]))
    assert mine.status_code == 200 and mine.json()["user"] == "alice" and mine.json()["next_bot"] == "alice.v1"
    for headers in (bearer(tokens["alice"] + "x"), bearer(""), {"accept": "application/json"}):
        refused = web.get("/submit", headers=headers)
        assert refused.status_code == 401 and refused.json()["status"] == 401, headers
    page = web.get("/submit", follow_redirects=False)  # a person, not the API: to the login form, and back after
    assert sent_to_login(page, "/submit")
    assert web.get("/submit?x=1", follow_redirects=False).headers["location"] == "/login?next=%2Fsubmit%3Fx%3D1"
    assert "set-cookie" not in mine.headers  # the API gets no session


def test_logging_in_sets_a_strict_httponly_cookie_and_logging_out_ends_it(web: TestClient,
                                                                          tokens: dict[str, str]) -> None:
    form = web.get("/login")
    cookie = form.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    wrong = web.post("/login", data={"token": "nope", "csrf": csrf_of(form.text)})
    assert wrong.status_code == 401 and "not a user" in wrong.text
    csrf = log_in(web, tokens["bob"])
    assert "<strong>bob</strong>" in web.get("/submit").text
    assert csrf != csrf_of(form.text), "a login gives the session a new CSRF token"
    assert web.post("/logout", data={"csrf": csrf}, follow_redirects=False).status_code == 303
    assert sent_to_login(web.get("/submit", follow_redirects=False), "/submit")


def test_logging_out_ends_the_session_on_the_server_in_every_browser(web: TestClient,
                                                                      tokens: dict[str, str]) -> None:
    """A cookie copied before the logout (a stolen one) is nobody's after it, and so is the user's
    session in another browser; logging in again works, and other users' sessions go on."""
    from arena.web.auth import COOKIE

    csrf = log_in(web, tokens["alice"])
    stolen = web.cookies[COOKIE]
    # other browsers of the same app (not entered: its lifespan runs once, in `web`)
    second, bobs, thief = TestClient(web.app), TestClient(web.app), TestClient(web.app)
    log_in(second, tokens["alice"])
    log_in(bobs, tokens["bob"])
    assert thief.get("/submit", headers={"cookie": f"{COOKIE}={stolen}"}).status_code == 200  # it works until then
    assert web.post("/logout", data={"csrf": csrf}, follow_redirects=False).status_code == 303
    for cookie in (stolen, second.cookies[COOKIE]):
        thief.cookies.clear()  # only the replayed cookie is sent
        replayed = thief.get("/submit", headers={"cookie": f"{COOKIE}={cookie}"}, follow_redirects=False)
        assert sent_to_login(replayed, "/submit")
    assert sent_to_login(second.get("/submit", follow_redirects=False), "/submit")
    assert "<strong>bob</strong>" in bobs.get("/submit").text, "another user's session goes on"
    log_in(web, tokens["alice"])
    assert "<strong>alice</strong>" in web.get("/submit").text
    assert web.get("/submit", headers=bearer(tokens["alice"])).status_code == 200  # her token is untouched


def test_an_authorization_header_of_another_scheme_does_not_skip_the_csrf_check(
        web: TestClient, tokens: dict[str, str]) -> None:
    log_in(web, tokens["alice"])
    for value in ("Basic x", "Basic YWxpY2U6cHc=", "Digest x", "Bearer", "Bearer " + "x" * 40):
        refused = web.post("/logout", data={}, headers={"authorization": value}, follow_redirects=False)
        assert refused.status_code == 403 and "CSRF" in refused.text, value
    assert "<strong>alice</strong>" in web.get("/submit", headers={"authorization": "Basic x"}).text, \
        "still logged in: another scheme is no token, the cookie's session it is"
    files = {"archive": ("bot.tar.gz", archive(), "application/gzip")}
    refused = web.post("/submit", data={}, files=files, headers={"authorization": "Basic x"},
                       follow_redirects=False)
    assert refused.status_code == 403 and "CSRF" in refused.text
    # a bearer token that is a user's needs none: a browser never sends one by itself
    assert web.post("/logout", data={}, headers=bearer(tokens["bob"]), follow_redirects=False).status_code == 200


def test_a_removed_users_session_and_token_stop_working(web: TestClient, tokens: dict[str, str],
                                                        ladder_db: str) -> None:
    from arena.store.users import remove_user

    log_in(web, tokens["alice"])
    store = Store(ladder_db)
    remove_user(store, "alice")
    store.close()
    assert sent_to_login(web.get("/submit", follow_redirects=False), "/submit")
    assert web.get("/submit", headers=bearer(tokens["alice"])).status_code == 401


@pytest.mark.parametrize("path", ["/login", "/logout", "/submit"])
@pytest.mark.parametrize("csrf", [None, "wrong"])
def test_a_form_without_the_sessions_csrf_token_is_refused(web: TestClient, tokens: dict[str, str], path: str,
                                                           csrf: str | None) -> None:
    log_in(web, tokens["alice"])
    data = {"token": tokens["alice"], **({"csrf": csrf} if csrf else {})}
    files = {"archive": ("bot.tar.gz", archive(), "application/gzip")} if path == "/submit" else None
    refused = web.post(path, data=data, files=files, follow_redirects=False)
    assert refused.status_code == 403 and "CSRF" in refused.text, refused.text
    assert "<strong>alice</strong>" in web.get("/submit").text, "still logged in: the forms did nothing"


def test_a_private_app_shows_nothing_without_a_token(ladder_db: str, tokens: dict[str, str]) -> None:
    for web in app(ladder_db, private=True):
        for path in ("/", "/.json", "/submit", "/submissions/1", "/t/open", "/no/such/page"):
            refused = web.get(path)
            assert refused.status_code == 401 and LADDER not in refused.text, path
        assert web.get("/", headers=bearer("wrong")).status_code == 401
        assert web.get("/login").status_code == 200
        assert web.get("/.json", headers=bearer(tokens["bob"])).json()["tournaments"][0]["name"] == LADDER
        log_in(web, tokens["bob"])
        assert LADDER in web.get("/").text


def test_submission_is_closed_unless_the_operator_opens_it(ladder_db: str, tokens: dict[str, str]) -> None:
    for web in client_for(ladder_db):
        closed = web.get("/submit", headers=bearer(tokens["alice"]))
        assert closed.status_code == 404 and "--submit" in closed.json()["error"]


# --- submitting -------------------------------------------------------------------------------------


def test_a_bot_passes_the_real_check_and_each_version_replaces_the_last_in_the_ladder(
        web: TestClient, tokens: dict[str, str], ladder_db: str) -> None:
    alice = tokens["alice"]
    first = send(web, archive(), headers=bearer(alice))
    assert first.status_code == 202, first.text
    sid = first.json()["submission"]["id"]
    done = verdict(web, sid, alice)
    assert done["status"] == "accepted", done
    assert done["bot"] == "alice.v1" and "clean: every answer was a legal move in time" in done["report"]
    assert "sandbox: bwrap" in done["report"]
    assert pool(ladder_db) == {"alice.v1": True}

    csrf = log_in(web, alice)  # the second version through the browser's form
    second = send(web, archive([member("notes.txt", b"v2")]), csrf=csrf)
    assert second.status_code == 303
    sid2 = int(second.headers["location"].rsplit("/", 1)[1])
    assert verdict(web, sid2, alice)["status"] == "accepted"
    assert pool(ladder_db) == {"alice.v1": False, "alice.v2": True}, "the old version leaves, its rows stay"
    page = web.get(f"/submissions/{sid2}")
    assert "accepted" in page.text and "alice.v2" in page.text and 'http-equiv="refresh"' not in page.text
    listed = web.get("/submit.json", headers=bearer(alice)).json()
    assert [s["bot"] for s in listed["submissions"]] == ["alice.v2", "alice.v1"] and listed["next_bot"] == "alice.v3"
    # another user's submission is not theirs to see
    assert web.get(f"/submissions/{sid}.json", headers=bearer(tokens["bob"])).status_code == 404


@pytest.mark.parametrize("partnerships", [True, False], ids=["partnerships", "individuals"])
def test_a_bot_for_a_four_player_ladder_is_checked_at_a_four_player_table(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, partnerships: bool) -> None:
    """The check plays the ladder's game: 4 seats, in partnerships or each for itself (a bot that
    copes with 2 players only must not pass a check of 2-player games and then forfeit its ladder's)."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    url = f"sqlite:///{tmp_path / 'ladder4.db'}"
    store = Store(url)
    rules = {"players": 4, "partnerships": partnerships, "on_twenty": "little_casino", "max_deals": 30}
    store.create_tournament(LADDER, "fingerprint", {"players": 4, "rules": rules, "time_control": TIME_CONTROL}, [])
    token = add_user(store, "carol")
    store.close()
    for client in app(url):
        sent = send(client, archive(), headers=bearer(token))
        assert sent.status_code == 202, sent.text
        done = verdict(client, sent.json()["submission"]["id"], token)
    assert done["status"] == "accepted", done
    report = done["report"]
    assert "game(s) against the built-in random bots:" in report
    seats = re.findall(r"^  game \d+ \[(.*?)\]:", report, re.MULTILINE)
    assert seats and all(len(line.split(", ")) == 4 for line in seats), report
    scores = re.findall(r"^  game \d+ \[.*\]: .* (\d+(?:-\d+)+)$", report, re.MULTILINE)
    assert len(scores) == len(seats), report  # a score per side: two partnerships, or four players
    assert all(len(score.split("-")) == (2 if partnerships else 4) for score in scores), scores


def test_a_bot_that_fails_the_check_is_rejected_with_the_reason_and_its_output_escaped(
        web: TestClient, tokens: dict[str, str], ladder_db: str) -> None:
    hostile = "<script>alert('owned')</script>"
    program = f"import sys\nprint({hostile!r}, file=sys.stderr)\nsys.exit(3)\n".encode()
    sent = send(web, archive([member("bot.py", program)], sample=False, run="python bot.py"),
                headers=bearer(tokens["bob"]))
    assert sent.status_code == 202, sent.text
    sid = sent.json()["submission"]["id"]
    done = verdict(web, sid, tokens["bob"])
    assert done["status"] == "rejected" and "NOT CLEAN" in done["reason"] and done["bot"] is None, done
    assert hostile in done["report"]
    page = web.get(f"/submissions/{sid}", headers={"authorization": f"Bearer {tokens['bob']}"}).text
    assert "Rejected: NOT CLEAN" in page and hostile not in page and "&lt;script&gt;alert(" in page
    assert pool(ladder_db) == {}


def test_an_oversized_upload_is_refused_before_it_is_read(ladder_db: str, tokens: dict[str, str]) -> None:
    for web in app(ladder_db, max_upload_bytes=4096):
        with_length = send(web, archive() + bytes(70 * 1024), headers=bearer(tokens["alice"]))
        assert with_length.status_code == 413 and "at most 4096 bytes" in with_length.json()["error"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: refused while it is read
            yield b"--x\r\n"
            for _ in range(200):
                yield b"\0" * 1024

        streamed = web.post("/submit", content=chunks(), headers={
            **bearer(tokens["alice"]), "content-type": "multipart/form-data; boundary=x"})
        assert streamed.status_code == 413
        just_over = send(web, archive([member("p.bin", bytes(5000))], sample=False) + bytes(5000),
                         headers=bearer(tokens["alice"]))
        assert just_over.status_code == 413


@pytest.mark.parametrize("content, said", [
    (b"not a gzip file", "is not a gzip'd tar archive"),
    (gzipped(b"not a tar stream" * 100), "holds no valid tar archive"),
    (archive([member("/etc/evil", b"x")]), "has an absolute path"),
    (archive([member("../evil", b"x")]), "has .. in its path"),
    (archive([member("casino_bot/../../evil", b"x")]), "has .. in its path"),
    (archive([member("out", kind=tarfile.SYMTYPE, link="/etc/passwd")]), "outside the archive"),
    (archive([member("up", kind=tarfile.SYMTYPE, link="../../x")]), "outside the archive"),
    (archive([member("hard", kind=tarfile.LNKTYPE, link="/etc/shadow")]), "hard link"),
    (archive([member("dev", kind=tarfile.CHRTYPE)]), "device file"),
    (archive([member("fifo", kind=tarfile.FIFOTYPE)]), "FIFO"),
    (archive(run=None), "has no bot.toml at its root"),
    (gzipped(tar_bytes([*sample_members(), member("bot.toml", b'runtime = "python"\nrn = "x"\n')])),
     'unknown key "rn" (did you mean "run"?)'),
    (gzipped(tar_bytes([*sample_members(), manifest(runtime="cobol")])), 'runtime "cobol" is not offered here'),
], ids=["not-gzip", "not-tar", "absolute", "dotdot", "dotdot-inside", "symlink-absolute", "symlink-up", "hardlink-out",
        "device", "fifo", "no-manifest", "manifest-typo", "runtime-unknown"])
def test_a_bad_package_is_refused_with_its_reason(web: TestClient, tokens: dict[str, str], content: bytes, said: str,
                                                 ladder_db: str) -> None:
    refused = send(web, content, headers=bearer(tokens["alice"]))
    assert refused.status_code == 400 and said in refused.json()["error"], refused.text
    store = Store(ladder_db, read_only=True)
    with store.session() as s:
        assert s.scalar(select(User.name).where(User.name == "alice")) == "alice"
    store.close()
    assert web.get("/submit.json", headers=bearer(tokens["alice"])).json()["submissions"] == []


def test_a_hostile_user_name_is_shown_escaped(web: TestClient, ladder_db: str) -> None:
    store = Store(ladder_db)  # a name no `arena users add` allows, written straight into the table
    token = add_user(store, "mallory")
    with store.session() as s, s.begin():
        user = s.scalar(select(User).where(User.name == "mallory"))
        assert user is not None
        user.name = "<img src=x onerror=alert(1)>"
    store.close()
    page = web.get("/submit", headers={"authorization": f"Bearer {token}"}).text
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


@pytest.mark.parametrize("args, said", [
    (["--submit", "nowhere"], "no ladder named \"nowhere\""),
    (["--submit", LADDER, "--max-upload", "0"], "--max-upload"),
])
def test_arena_web_refuses_a_bad_submit_setting_in_one_line(ladder_db: str, args: list[str], said: str,
                                                            tmp_path: Path) -> None:
    done = arena_here("web", "--db", ladder_db, "--listen", "127.0.0.1:1", *args, cwd=tmp_path)
    assert done.returncode == 2 and said in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_arena_web_refuses_to_take_submissions_into_a_ladder_with_an_in_process_bot(ladder_db: str,
                                                                                   tmp_path: Path) -> None:
    """A submitted bot would play beside trusted code in the server's own process: refused up front."""
    store = Store(ladder_db)
    tid = store.tournament_id(LADDER)
    assert tid is not None
    store.add_bot(tid, "house", "inprocess:house_bot.py")
    store.close()
    done = arena_here("web", "--db", ladder_db, "--listen", "127.0.0.1:1", "--submit", LADDER, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f'--submit: ladder "{LADDER}" has in-process bot "house"' in done.stderr, done.stderr


def test_a_check_that_runs_too_long_is_stopped_and_rejected_and_its_bot_killed(
        ladder_db: str, tokens: dict[str, str]) -> None:
    from tests.conftest import assert_no_bot_processes

    hang = b"import time\ntime.sleep(600)\n"  # never answers: the check cannot end before its startup limit (10 s)
    for web in client_for(ladder_db, submit=LADDER, check_games=1, check_timeout_s=2):
        sent = send(web, archive([member("hang_bot.py", hang)], sample=False, run="python hang_bot.py"),
                    headers=bearer(tokens["alice"]))
        done = verdict(web, sent.json()["submission"]["id"], tokens["alice"])
        assert done["status"] == "rejected" and "took longer than 2 s" in done["reason"], done
    assert_no_bot_processes(wait_s=10, patterns=("hang_bot.py",))


def test_a_check_the_platform_stops_leaves_the_submission_checking_not_rejected(
        ladder_db: str, tokens: dict[str, str], monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """Issue 26: the check's bot logs on a full disk make `referee check` exit 4 (a platform fault).
    Before, that was the submission's rejection ("the check could not run the bot: ..."); now it
    stays checking, to run again at the server's next start, and the operator's log says why."""
    from tests.referee.test_platform_faults import fill, small_tmpfs

    with small_tmpfs("64k") as disk:
        fill(disk, leave=4096)  # room for one bot log: the check's second finds none
        monkeypatch.setattr(tempfile, "tempdir", tempfile.gettempdir())  # the web's own files stay where they are
        monkeypatch.setenv("TMPDIR", str(disk))  # the check's bot logs on the (all but) full disk
        caplog.set_level(logging.ERROR, logger="arena.web")
        for web in app(ladder_db):
            sent = send(web, archive(), headers=bearer(tokens["alice"]))
            assert sent.status_code == 202, sent.text
            sid = sent.json()["submission"]["id"]
            deadline = time.monotonic() + CHECK_WAIT_S + 30  # bounded: the check's own limit, and some
            while True:  # until the check has ended: with a verdict (before), or saying so in the log
                found = web.get(f"/submissions/{sid}.json", headers=bearer(tokens["alice"])).json()["submission"]
                said = [r.getMessage() for r in caplog.records if "stopped by a platform fault" in r.getMessage()]
                if said or found["status"] != "checking" or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
    assert found["status"] == "checking" and found["bot"] is None, found
    assert len(said) == 1 and "platform fault (disk)" in said[0] and "No space left on device" in said[0], said
    assert pool(ladder_db) == {}


def test_a_forged_or_altered_session_cookie_is_nobody(web: TestClient, tokens: dict[str, str]) -> None:
    import base64
    import json

    from arena.web.auth import COOKIE, Session, sign

    log_in(web, tokens["alice"])
    value = web.cookies[COOKIE]
    payload, signature = value.split(".")
    data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    data["u"] += 1  # bob, with alice's signature
    altered = base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=") + "." + signature
    forged = sign(b"another secret", Session(user=None, csrf="x", issued=data["t"]))
    web.cookies.clear()
    for cookie in (altered, forged, "garbage", value[:-2]):
        assert sent_to_login(web.get("/submit", headers={"cookie": f"{COOKIE}={cookie}"}, follow_redirects=False),
                             "/submit"), cookie
    assert web.get("/submit", headers={"cookie": f"{COOKIE}={value}"}).status_code == 200


def test_login_sends_only_to_this_sites_pages(web: TestClient, tokens: dict[str, str]) -> None:
    for target, expected in (("//evil.example/x", "/"), ("https://evil.example/", "/"), ("/submit", "/submit")):
        form = web.get("/login")
        answer = web.post("/login", data={"token": tokens["bob"], "csrf": csrf_of(form.text), "next": target},
                          follow_redirects=False)
        assert answer.headers["location"] == expected, target


def test_a_check_a_stopped_server_left_unfinished_runs_at_its_next_start(ladder_db: str,
                                                                        tokens: dict[str, str]) -> None:
    from referee.packages.archive import check_archive
    from arena.store.submissions import new_submission
    from arena.store.users import user_for_token

    content = archive([member("bot.py", b"raise SystemExit(3)\n")], sample=False)
    store = Store(ladder_db)
    checked = check_archive(content)
    user = user_for_token(store, tokens["bob"])
    tid = store.tournament_id(LADDER)
    assert user is not None and tid is not None
    left = new_submission(store, user.id, tid, checked.sha256, content, checked.unpacked_bytes,  # as a stopped
                          f"{sys.executable} bot.py")  # server left it
    store.close()
    for web in app(ladder_db):
        assert verdict(web, left.id, tokens["bob"])["status"] == "rejected"
