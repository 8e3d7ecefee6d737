"""A private PostgreSQL server for fault-injection tests: started, stopped and restarted at will,
never the machine's shared one (tests/faults/conftest.py makes one per test and removes it)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import warnings
from pathlib import Path

import psycopg

BIN = Path("/usr/lib/postgresql/15/bin")
PG_USER = "postgres"  # initdb and pg_ctl refuse to run as root: they run as this user
COMMAND_TIMEOUT_S = 60  # initdb, pg_ctl start/stop/restart (each waits for the server itself)
DATABASE = "arena"
FAST_STOP_S = 15  # the longest a fast shutdown may take before it becomes an immediate one


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivateCluster:
    """One PostgreSQL 15 cluster in ``folder`` on a free local port, trust authentication."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.data = folder / "data"
        self.port = free_port()
        self.log = folder / "server.log"

    @property
    def url(self) -> str:
        """The arena's database on it, as the arena's commands take it."""
        return f"postgresql+psycopg://{PG_USER}@127.0.0.1:{self.port}/{DATABASE}"

    @property
    def libpq_url(self) -> str:
        return f"postgresql://{PG_USER}@127.0.0.1:{self.port}/{DATABASE}"

    def _run(self, *argv: str) -> None:
        argv = tuple(str(a) for a in argv)
        if os.geteuid() == 0:
            argv = ("runuser", "-u", PG_USER, "--", *argv)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stdout}{done.stderr}")

    def _pg_ctl(self, action: str, *extra: str, timeout_s: int = COMMAND_TIMEOUT_S - 5) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(BIN / "pg_ctl", "-D", self.data, "-l", self.log, "-o", options, "-w", "-t", str(timeout_s),
                  *extra, action)

    def create(self) -> None:
        """initdb, start, and create the arena's database."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.folder.chmod(0o755)
        if os.geteuid() == 0:
            shutil.chown(self.folder, PG_USER)
        self._run(BIN / "initdb", "-D", self.data, "-A", "trust", "-U", PG_USER, "--no-sync")
        self.start()
        with psycopg.connect(f"postgresql://{PG_USER}@127.0.0.1:{self.port}/postgres", autocommit=True,
                             connect_timeout=10) as conn:
            conn.execute(f'CREATE DATABASE "{DATABASE}"')

    def start(self) -> None:
        self._pg_ctl("start")

    def stop(self) -> None:
        """Stop the server: every connection is cut, as in a restart or a failover. A fast shutdown
        that does not end within ``FAST_STOP_S`` (seen once on a loaded machine) becomes an
        immediate one, a crash as far as the clients can tell: the database is down either way."""
        try:
            self._pg_ctl("stop", "-m", "fast", timeout_s=FAST_STOP_S)
        except RuntimeError as exc:
            tail = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            warnings.warn(f"fast shutdown did not end, stopping immediately: {exc}\n{tail}", stacklevel=2)
            self._pg_ctl("stop", "-m", "immediate")

    def restart(self) -> None:
        """Stop (fast, else immediate, as ``stop`` does: under load a fast shutdown once outlasted
        pg_ctl restart's 55 s) and start again."""
        self.stop()
        self.start()

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def remove(self) -> None:
        """Stop it if it runs (immediate: nothing to keep), and delete its files."""
        if self.running():
            try:
                self._pg_ctl("stop", "-m", "immediate")
            except (RuntimeError, subprocess.TimeoutExpired):
                pid = int((self.data / "postmaster.pid").read_text().split()[0])
                os.kill(pid, 9)
                time.sleep(1)
        shutil.rmtree(self.folder, ignore_errors=True)
