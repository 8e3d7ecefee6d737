"""The web app and its submissions against a hostile participant (docs/web.md, "Security model"):
each test is a move of an audit of `arena web --submit`, played against the real app, the real
`referee check` in the real sandbox and a real database. A submitted bot reads nothing of another
user's archive, the database or the server; (more below, one finding each)."""

from __future__ import annotations

import os
import shlex
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


def reader_archive() -> bytes:
    """A bot that reads (or lists) the paths its command names, reports what it got in its log (the
    check's report), then plays legal moves: tests/bots/hostile/read_files.py."""
    return archive([member("_bot.py", (HOSTILE / "_bot.py").read_bytes()),
                    member("read_files.py", (HOSTILE / "read_files.py").read_bytes())], sample=False)


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
    command = shlex.join([sys.executable, "-c", code, *targets, "--exit"])  # rejected: its log in the report
    sent = send(web, reader_archive(), command=command, headers=bearer(tokens["bob"]))
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


def test_the_arenas_files_are_not_readable_by_others(ladder_db: str, tmp_path: Path) -> None:
    """Every file the arena writes is its own: a bot's uid is an "other" (mode "limits" shows it
    the host's files as that uid sees them)."""
    database = Path(ladder_db.removeprefix("sqlite:///"))
    assert database.stat().st_mode & 0o077 == 0, oct(database.stat().st_mode)
    Store(ladder_db).close()
    for path in database.parent.glob(database.name + "*"):
        assert path.stat().st_mode & 0o007 == 0, (path, oct(path.stat().st_mode))


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
