"""The web app and its submissions against a hostile participant (docs/web.md, "Security model"):
each test is a move of an audit of `arena web --submit`, played against the real app, the real
`referee check` in the real sandbox and a real database. A submitted bot reads nothing of another
user's archive, the database or the server; (more below, one finding each)."""

from __future__ import annotations

import os
import shlex
from dataclasses import replace as dataclasses_replace
import sys
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from arena.store.store import Store
from referee.sandbox.machine import probe
from tests.arena.test_arena_archives import member
from tests.conftest import ROOT
from tests.web.test_web_submit import archive, bearer, send, verdict
from tests.web.test_web_submit import ladder_db, tokens, web  # noqa: F401  (fixtures)
from tests.web.web_support import client_for

HOSTILE = ROOT / "tests" / "bots" / "hostile"
needs_bwrap = pytest.mark.skipif(probe().bwrap_problem is not None,
                                 reason=f"bubblewrap cannot run here: {probe().bwrap_problem}")


def reader_archive(run: str) -> bytes:
    """A bot that reads (or lists) the paths its command names, reports what it got in its log (the
    check's report), then plays legal moves: tests/bots/hostile/read_files.py, run as ``run``."""
    return archive([member("_bot.py", (HOSTILE / "_bot.py").read_bytes()),
                    member("read_files.py", (HOSTILE / "read_files.py").read_bytes())], sample=False, run=run)


def reads_in(report: str) -> dict[str, Any]:
    import json

    found: dict[str, Any] = {}
    for line in report.splitlines():  # the check quotes the log ("  | ..."), each line cut to a width
        if "hostile: read:" in line:
            path, result = json.loads(line.split("hostile: read:", 1)[1].split(" ", 1)[1])
            found[path] = result
    assert found, report
    return found


def accepted_archive_of(web: TestClient, token: str) -> str:
    """Submit the sample bots as ``token``'s user and wait for the verdict: the archive's sha256."""
    sent = send(web, archive(), headers=bearer(token))
    assert sent.status_code == 202, sent.text
    done = verdict(web, sent.json()["submission"]["id"], token)
    assert done["status"] == "accepted", done
    return str(done["archive_sha256"])


@needs_bwrap
@pytest.mark.parametrize("first", ["tree", "database"], ids=["other-archive-first", "database-first"])
def test_a_submitted_bot_reads_nothing_of_other_archives_the_database_or_the_server(
        web: TestClient, tokens: dict[str, str], ladder_db: str, tmp_path: Path, first: str) -> None:
    """The audit's moves: a command whose first file argument is another archive's digest file
    (``../<sha>.tree``) or the database made the sandbox show that folder: the cache's root with
    every archive, or the tournament folder with the SQLite file. The bot is shown its own
    archive's folder only, whatever its arguments name."""
    other = accepted_archive_of(web, tokens["alice"])
    database = ladder_db.removeprefix("sqlite:///")
    targets = [f"../{other}.tree", f"../{other}/random_bot.py", "..", database, os.path.dirname(database),
               f"/proc/{os.getpid()}/environ", f"/proc/{os.getpid()}/cmdline", f"/proc/{os.getppid()}/cmdline"]
    if first == "database":
        targets = [database, *targets]
    # `python -c CODE PATH...`: the code runs the reader from the bot's folder, and the first
    # argument that names a file is the audit's path (the old rule took its folder as the bot's)
    code = "import runpy, sys; sys.argv[0] = 'read_files.py'; runpy.run_path('read_files.py', run_name='__main__')"
    command = shlex.join(["python", "-c", code, *targets, "--exit"])  # rejected: its log in the report
    sent = send(web, reader_archive(command), headers=bearer(tokens["bob"]))
    assert sent.status_code == 202, sent.text
    done = verdict(web, sent.json()["submission"]["id"], tokens["bob"])
    assert done["status"] == "rejected", done
    reads = reads_in(done["report"])
    own = done["archive_sha256"]
    assert reads.pop("..") == "listed 1 entries", "the cache's root shows its own folder alone"
    assert reads.pop(os.path.dirname(database)) == "listed 1 entries", "the way to its folder (cache/), nothing else"
    assert all(result in ("ENOENT", "EACCES") for result in reads.values()), reads
    assert f"read-only: its folder {tmp_path / 'cache' / own} (its working directory)" in done["report"]
    assert other not in done["report"].replace(f"../{other}", ""), "nothing of the other archive but its name"


def test_the_arenas_files_are_not_readable_by_others(played_db: str, ladder_db: str, tmp_path: Path,
                                                     web: TestClient, tokens: dict[str, str]) -> None:
    """Every file the arena writes is its own: a bot's uid is an "other" (mode "limits" shows it
    the host's files as that uid sees them): the database (and its -wal, -shm), the bot logs
    (`arena run`'s), the archive cache's root (others pass through, list nothing) and digests."""
    import stat

    def mode(path: Path) -> int:
        return stat.S_IMODE(path.stat().st_mode)

    database = Path(ladder_db.removeprefix("sqlite:///"))
    assert mode(database) == 0o600
    Store(ladder_db).close()
    for path in database.parent.glob(database.name + "*"):
        assert mode(path) & 0o007 == 0, (path, oct(mode(path)))
    played = Path(played_db.removeprefix("sqlite:///"))
    assert mode(played) == 0o600
    logs = played.parent / "runs-logs"
    assert mode(logs) == 0o700 and all(mode(log) == 0o600 for log in logs.iterdir()), oct(mode(logs))
    sha = accepted_archive_of(web, tokens["alice"])
    cache = tmp_path / "cache"
    assert mode(cache) == 0o711 and mode(cache / f"{sha}.tree") == 0o600 and mode(cache / sha) == 0o555


def test_public_pages_name_each_seat_but_never_its_command_or_this_servers_paths(played_db: str) -> None:
    """A game's record, its steps, its page and the game list carry each seat's name and version,
    not the command line it was started with (the server's interpreter, a submitted bot's private
    arguments)."""
    private = sys.executable  # every sample bot of the played tournament starts with this interpreter
    for client in client_for(played_db):
        stored = Store(played_db, read_only=True)
        try:
            (number, record), *_ = stored.records(stored.tournament_id("runs") or 0)
        finally:
            stored.close()
        assert all(private in seat["endpoint"] for seat in record["seats"]), "the database keeps it, for the operator"
        for path in (f"/t/runs/games/{number}/record", f"/t/runs/games/{number}/states",
                     f"/t/runs/games/{number}.json", f"/t/runs/games/{number}", "/t/runs/games.json",
                     "/t/runs/bots/greedy.json", "/t/runs.json"):
            answer = client.get(path)
            assert answer.status_code == 200 and private not in answer.text and '"endpoint"' not in answer.text, path
        shown = client.get(f"/t/runs/games/{number}/record").json()
        assert [s["name"] for s in shown["seats"]] == [s["name"] for s in record["seats"]]
        assert [s["version"] for s in shown["seats"]] == [s["version"] for s in record["seats"]]


def test_a_failure_reason_is_public_without_the_command_or_paths() -> None:
    from arena.web.privacy import public_record, public_text

    command = "/srv/arena/.venv/bin/python bot.py --token s3cret"
    reason = (f"cannot start {command!r}: /srv/cup holds the referee's logs (/srv/cup/cup-logs): give the bot "
              "a folder of its own")
    shown = public_text(reason, [command])
    assert "s3cret" not in shown and "/srv" not in shown and shown.startswith("cannot start (its command): … holds")
    assert public_text("the bot process exited with status 1 before it was ready (1/2 tries)") == \
        "the bot process exited with status 1 before it was ready (1/2 tries)", "no path: unchanged"
    record = {"seats": [{"seat": 0, "name": "a", "version": "1", "endpoint": command}],
              "failures": [{"seat": 0, "reason": reason}], "result": {"failures": [{"seat": 0, "reason": reason}]}}
    public = public_record(record)
    assert "endpoint" not in public["seats"][0] and "s3cret" not in str(public) and "/srv" not in str(public)
    assert record["seats"][0]["endpoint"] == command, "the stored record is left as it is"


# --- bounded work per user ----------------------------------------------------------------------

def failing_archive(tag: bytes = b"") -> bytes:
    """A bot that exits at once: its check ends in a second or two, rejected."""
    return archive([member("bot.py", b"raise SystemExit(3)\n" + tag)], sample=False, run="python bot.py")


def test_the_check_queue_takes_users_in_turn() -> None:
    from arena.web.checks import FairQueue

    queue = FairQueue()
    for sid in (1, 2, 3):
        queue.put(7, sid)  # a burst of user 7
    assert queue.take() == (7, 1)
    queue.put(8, 4)  # user 8 arrives while 7's first runs and two more wait
    assert queue.take() == (8, 4), "the newcomer's first check goes before the burst's second"
    queue.done(7)
    assert queue.take() == (7, 2)
    queue.put(9, 5)
    assert queue.take() == (9, 5)
    queue.done(8), queue.done(7), queue.done(9)
    assert queue.take() == (7, 3)
    queue.done(7)
    queue.put(7, 6)  # after a pause (nothing waiting or running) a user starts afresh
    queue.put(8, 7)
    assert queue.take() == (7, 6)
    queue.close()
    assert queue.take() is None


def test_one_users_burst_delays_anothers_check_by_one_check_at_most(ladder_db: str, tokens: dict[str, str]) -> None:
    """Checks run one at a time: alice's three submissions, then bob's one; bob's verdict comes
    second, before alice's second and third."""
    alice, bob = tokens["alice"], tokens["bob"]
    for web_app in client_for(ladder_db, submit="open", check_games=1, check_timeout_s=120, max_in_flight=3):
        sids = [send(web_app, failing_archive(bytes([n])), headers=bearer(alice)).json()
                ["submission"]["id"] for n in range(3)]
        theirs = send(web_app, failing_archive(b"bob"), headers=bearer(bob)).json()["submission"]["id"]
        done = {sid: verdict(web_app, sid, alice) for sid in sids}
        bobs = verdict(web_app, theirs, bob)
    order = sorted([(d["finished_at"], sid) for sid, d in done.items()] + [(bobs["finished_at"], theirs)])
    assert [sid for _, sid in order] == [sids[0], theirs, sids[1], sids[2]], order


def test_a_burst_of_one_users_submissions_is_refused_in_one_line_and_takes_each_version_once(
        ladder_db: str, tokens: dict[str, str], tmp_path: Path) -> None:
    """The audit's burst: 50 submissions in half a second answered 46 accepted and 4 x 500 (two
    took one version number). Now: within the user's limits, the others a 429 with Retry-After,
    never a 500, each version once; and another user gets in meanwhile."""
    import concurrent.futures
    import urllib.error
    import urllib.request

    from tests.web.browser_support import serve

    content = failing_archive()
    boundary = "arena-test-boundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"archive\"; filename=\"bot.tar.gz\"\r\n"
            "Content-Type: application/gzip\r\n\r\n").encode() + content + f"\r\n--{boundary}--\r\n".encode()

    def post(server_url: str, token: str) -> tuple[int, dict[str, str], str]:
        request = urllib.request.Request(server_url + "/submit", data=body, method="POST", headers={
            "authorization": f"Bearer {token}", "accept": "application/json",
            "content-type": f"multipart/form-data; boundary={boundary}"})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, dict(answer.headers), answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read().decode()

    with serve(ladder_db, tmp_path, "--submit", "open", "--submissions-in-flight", "2") as server:
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(lambda _: post(server.base, tokens["alice"]), range(40)))
        other = post(server.base, tokens["bob"])
    statuses = [status for status, _, _ in answers]
    assert set(statuses) <= {202, 429} and statuses.count(202) in (1, 2), (statuses, server.output())
    for status, headers, text in answers:
        if status == 429:
            assert int(headers["retry-after"]) > 0
            import json

            error = json.loads(text)["error"]
            assert "\n" not in error and ("being checked" in error or "another submission" in error), error
    assert other[0] == 202, other
    store = Store(ladder_db, read_only=True)
    try:
        from sqlalchemy import select

        from arena.store.models import Submission
        with store.session() as s:
            versions = list(s.scalars(select(Submission.version).where(Submission.user_id == 1)))
    finally:
        store.close()
    assert sorted(versions) == list(range(1, len(versions) + 1)) == [1, 2][:statuses.count(202)]


def test_an_hours_submissions_and_the_bytes_kept_are_limited_per_user(ladder_db: str, tokens: dict[str, str]) -> None:
    alice, bob = tokens["alice"], tokens["bob"]
    for web_app in client_for(ladder_db, submit="open", check_games=1, check_timeout_s=120, max_per_hour=2):
        first = [send(web_app, failing_archive(bytes([n])), headers=bearer(alice)) for n in range(2)]
        assert [a.status_code for a in first] == [202, 202]
        for answer in first:
            verdict(web_app, answer.json()["submission"]["id"], alice)
        third = send(web_app, failing_archive(b"3"), headers=bearer(alice))
        assert third.status_code == 429 and 3000 < int(third.headers["retry-after"]) <= 3600, third.text
        assert "2 submissions in the last hour" in third.json()["error"]
    for web_app in client_for(ladder_db, submit="open", max_kept_bytes=1024):
        full = send(web_app, archive(), headers=bearer(bob))  # the sample bots unpack to more than 1 KiB
        assert full.status_code == 403 and "this one would add" in full.json()["error"], full.text
        assert full.json()["error"].endswith("a user may keep 1.0 KiB (the operator prunes old rejected ones: arena "
                                             "submissions prune)")


def test_a_rejected_submissions_unpacked_copy_goes_at_once_and_prune_deletes_its_archive(
        ladder_db: str, tokens: dict[str, str], tmp_path: Path) -> None:
    import subprocess

    bob = tokens["bob"]
    cache = tmp_path / "cache"
    for web_app in client_for(ladder_db, submit="open", check_games=1, check_timeout_s=120):
        sent = send(web_app, failing_archive(), headers=bearer(bob))
        done = verdict(web_app, sent.json()["submission"]["id"], bob)
        assert done["status"] == "rejected"
    sha = done["archive_sha256"]
    assert not (cache / sha).exists() and not (cache / f"{sha}.tree").exists(), sorted(p.name for p in cache.iterdir())
    store = Store(ladder_db, read_only=True)
    assert store.has_archive(sha), "the archive stays for the operator"
    store.close()
    pruned = subprocess.run([sys.executable, "-m", "arena.cli", "submissions", "prune", "--older-than", "0", "--db",
                             ladder_db], capture_output=True, text=True, timeout=120, check=False)
    assert pruned.returncode == 0 and pruned.stdout.startswith("pruned 1 rejected submission(s): 1 archive(s)"), \
        pruned.stdout + pruned.stderr
    store = Store(ladder_db, read_only=True)
    assert not store.has_archive(sha)
    store.close()


def test_submission_needs_the_bubblewrap_sandbox_unless_the_operator_asks_for_less(ladder_db: str,
                                                                                    tmp_path: Path) -> None:
    from arena.errors import UsageError
    from arena.web.checks import require_bwrap
    from arena.web.settings import WebSettings

    real = probe()
    without = dataclasses_replace(real, bwrap_problem="bubblewrap (bwrap) is not installed")
    settings = WebSettings(db=ladder_db, submit="open")
    with pytest.raises(UsageError, match=r"--submit runs strangers' bots: it needs the bubblewrap sandbox, which cannot "
                                         r"run here \(bubblewrap \(bwrap\) is not installed\)"):
        require_bwrap(settings, without)
    explicit = tmp_path / "ladder.toml"
    explicit.write_text('name = "open"\n[sandbox]\nmode = "limits"\n\n[[bots]]\nname = "x"\ncommand = "true"\n'
                        '[[bots]]\nname = "y"\ncommand = "true"\n')
    require_bwrap(WebSettings(db=ladder_db, submit="open", sandbox_from=str(explicit)), without)  # said so: allowed
