"""Fixtures of the fault-injection tests: a private PostgreSQL server per test."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.cluster import BIN, PrivateCluster


@pytest.fixture
def cluster() -> Iterator[PrivateCluster]:
    """A PostgreSQL server of this test's own (the machine's shared one is never stopped), with an
    empty database ``arena``; always stopped and removed afterwards."""
    if not (BIN / "initdb").exists() or shutil.which("runuser") is None:
        pytest.skip(f"no PostgreSQL 15 binaries in {BIN} (or no runuser)")
    # in /tmp, not pytest's temporary tree (root's alone; the server runs as user postgres), and short:
    # the server's socket is in it
    parent = Path(tempfile.mkdtemp(prefix="arena-pg-", dir="/tmp"))
    parent.chmod(0o755)
    server = PrivateCluster(parent / "cluster")
    try:
        server.create()
        yield server
    finally:
        server.remove()
        shutil.rmtree(server.folder.parent, ignore_errors=True)
