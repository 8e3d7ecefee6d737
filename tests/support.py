"""Helpers shared by test modules."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent


def fresh_temp_dir() -> Path:
    """A new empty folder with a short path, to be one command's TMPDIR (the test then checks that
    the command left it empty). Short: bots listen on unix sockets made under TMPDIR, and a socket
    path has at most 107 bytes. Made under the session's temporary folder (tests/conftest.py)."""
    return Path(tempfile.mkdtemp(prefix="t"))


def run_referee(*args: str, timeout: float = 120, env: Mapping[str, str] | None = None,
                cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the ``referee`` command as a real process from the repository root (or ``cwd``: the
    folder its bots run in, all a sandbox shows them); ``env``: extra environment variables (e.g.
    its own TMPDIR)."""
    return subprocess.run(
        [sys.executable, "-m", "referee.cli", *args],
        cwd=cwd or ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def start_referee(*args: str, stdout: int | IO[str] | None = subprocess.DEVNULL,
                  stderr: int | IO[str] | None = subprocess.DEVNULL) -> subprocess.Popen[str]:
    """Start the ``referee`` command as a real process (e.g. ``serve``) that the test stops."""
    return subprocess.Popen([sys.executable, "-m", "referee.cli", *args], cwd=ROOT, stdout=stdout, stderr=stderr,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def run_arena(*args: str, timeout: float = 120, cwd: Path | None = None,
              env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the ``arena`` command as a real process (from the repository root by default);
    ``env``: extra environment variables."""
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", *args],
        cwd=cwd or ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None, cwd: Path | None) -> Iterator[None]:
    """``env`` set and ``cwd`` entered for the block; both (and the root logger) as before after it."""
    from referee import logs

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    root = logging.getLogger()
    saved_log = (list(root.handlers), root.level, logs._format, logs._handler)
    os.environ.update(env or {})
    os.chdir(cwd or ROOT)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        root.handlers[:], root.level, logs._format, logs._handler = saved_log


def arena_here(*args: str, cwd: Path | None = None,
               env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The ``arena`` command's ``main`` run in this process, as ``run_arena`` runs it in a new one:
    its exit status, stdout and stderr. For commands that answer without playing a game (refusals,
    reading commands), where a new interpreter's imports would be most of the test's time; the
    process-level contract (exit status, one stderr line, imports) keeps tests of its own."""
    from arena.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with _environment(env, cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(args))
        except SystemExit as exc:  # argparse's usage errors and --help
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if isinstance(exc.code, str):
                err.write(exc.code + "\n")
    return subprocess.CompletedProcess(["arena", *args], status, out.getvalue(), err.getvalue())


def assert_usage_error(done: subprocess.CompletedProcess[str], command: str | None = None) -> str:
    """Exit status 2, nothing on stdout, exactly one error line on stderr (no traceback); that line.
    ``command`` (``"arena"``): the line must start ``arena: error: ``."""
    assert done.returncode == 2, (done.returncode, done.stdout[-500:], done.stderr[-2000:])
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    if command is not None:
        assert lines[0].startswith(f"{command}: error: "), lines[0]
    else:
        assert "error:" in lines[0], lines[0]
    return lines[0]


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the rich tables in ``text``, as lists of cell texts."""
    return [[cell.strip() for cell in line.strip().strip("│").split("│")] for line in text.splitlines()
            if line.startswith("│")]
