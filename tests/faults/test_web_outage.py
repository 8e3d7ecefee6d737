"""`arena web` through a database outage (a private PostgreSQL server, tests/faults/cluster.py):
pages answer 503 with a short reason while the server is down, one line says so (not a
traceback per request), and pages come back by themselves once it is up again."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.arena.queue_support import run_queued
from tests.arena.runs_support import tournament_file
from tests.arena_support import new_marker
from tests.faults.cluster import PrivateCluster
from tests.web.web_support import client_for

PAGES = ("/", "/t/runs", "/t/runs/games")


def test_pages_answer_503_during_an_outage_and_recover_by_themselves(
        cluster: PrivateCluster, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    queued = run_queued(tournament_file(tmp_path, new_marker(), concurrency=1, database=cluster.url), "--detach")
    assert queued.returncode == 0, queued.stderr
    for client in client_for(cluster.url):
        assert [client.get(p).status_code for p in PAGES] == [200] * len(PAGES)
        capfd.readouterr()
        cluster.stop()
        answers = [client.get(p) for p in (*PAGES, *PAGES)]
        assert [a.status_code for a in answers] == [503] * len(answers), [a.text[-500:] for a in answers]
        assert all("database is unreachable" in a.text and a.headers["retry-after"] == "5" for a in answers)
        assert client.get("/.json").status_code == 503
        down = capfd.readouterr().err
        cluster.start()
        assert [client.get(p).status_code for p in PAGES] == [200] * len(PAGES)
        back = capfd.readouterr().err
    assert down.count("arena: database unreachable (") == 1 and "pages answer 503 until it is back" in down, down
    assert "Traceback" not in down, down
    assert back.count("arena: database reachable again after") == 1 and "Traceback" not in back, back
