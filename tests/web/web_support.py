"""The database every web test reads: a real round robin of the sample bots, played once per
test process, and the app over it through Starlette's test client (real HTTP semantics, no server)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from arena.config import load_config
from arena.store.store import Store
from arena.web.app import create_app
from arena.web.settings import WebSettings
from tests.arena.runs_support import play, tournament_file
from tests.arena_support import new_marker, wait_no_marked_processes

TOURNAMENT = "runs"  # tests/arena/runs_support.py's tournament: 4 sample bots, 12 games


@pytest.fixture(scope="session")
def played_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The URL of a SQLite database holding one finished tournament of real bot processes."""
    folder = tmp_path_factory.mktemp("web-db")
    marker = new_marker()
    path = tournament_file(folder, marker, concurrency=2)
    assert play(path) == 0
    assert wait_no_marked_processes(marker) == []
    return load_config(path).database


TEST_HOST = "testserver"  # the test client's Host: allowed by client_for, as --allowed-host would


def client_for(db: str, **settings: object) -> Iterator[TestClient]:
    """A test client of the app over ``db`` (its lifespan runs: the store opens and closes); the
    app answers to the test client's Host name unless ``allowed_hosts`` says otherwise."""
    settings.setdefault("allowed_hosts", (TEST_HOST,))
    with TestClient(create_app(WebSettings(db=db, **settings)), raise_server_exceptions=False) as client:  # type: ignore[arg-type]
        yield client


@pytest.fixture
def web(played_db: str) -> Iterator[TestClient]:
    yield from client_for(played_db)


def db_path(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


def read_store(url: str) -> Store:
    return Store(url, read_only=True)
