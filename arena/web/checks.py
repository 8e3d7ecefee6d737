"""Submitted bots' conformance checks: `referee check` run on the unpacked archive (its root the
working directory, in the sandbox a tournament uses), one at a time on a thread of its own so the
server keeps answering, stopped after ``check_timeout_s``. A clean check enters the bot into the
ladder as its user's next version (arena/store/submissions.py); any other outcome rejects it with
the check's reason and output. Checks a stopped server left unfinished run again at its next start.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy.exc import IntegrityError

from ..bot_archive import ArchiveError
from ..errors import one_line
from ..play.archives import ArchiveCache
from ..store.store import Store
from ..store.submissions import accept, checking, reject, submission
from .settings import WebSettings

log = logging.getLogger("arena.web")
# the ladder's time control, as referee check's flags name it
TIME_FLAGS = {"move_time_ms": "--move-time", "grace_ms": "--grace", "bank_initial_ms": "--bank",
              "bank_increment_ms": "--increment", "startup_time_ms": "--startup-time", "cpu_time_ms": "--cpu-time"}
REASON_CHARS = 500


def check_command(settings: WebSettings, command: str, ladder: dict[str, Any]) -> list[str]:
    """The `referee check` command line for a submitted bot's ``command`` under the ladder's
    settings (as stored: its players, partnerships and time control)."""
    argv = [sys.executable, "-m", "referee.cli", "check", "--bot", command, "--games", str(settings.check_games)]
    players = ladder.get("players", 2)
    if players in (3, 4):  # the ladder's table: every seat, then one seat beside random bots
        argv += ["--players", str(players)]
        if players == 4 and not ladder.get("rules", {}).get("partnerships", True):
            argv.append("--individuals")
    time_control = ladder.get("time_control", {})
    for key, flag in TIME_FLAGS.items():
        if isinstance(time_control.get(key), int):
            argv += [flag, str(time_control[key])]
    if settings.sandbox_from:
        argv += ["--sandbox-from", os.path.abspath(settings.sandbox_from)]
    return argv


def verdict(returncode: int, output: str) -> str | None:
    """Why a finished check rejects its bot (None: clean), from its exit status and output."""
    if returncode == 0:
        return None
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if returncode == 1 and "NOT CLEAN" in output:  # referee check's summary: the failures, counted
        start = next(i for i, line in enumerate(lines) if line.startswith("NOT CLEAN"))
        return "; ".join(lines[start:])[:REASON_CHARS]
    last = lines[-1] if lines else f"exit status {returncode}"
    return f"the check could not run the bot: {last}"[:REASON_CHARS]


class SubmissionChecks:
    """The checks of one ladder's submissions (see the module docstring)."""

    def __init__(self, store: Store, tid: int, settings: WebSettings, cache: ArchiveCache | None = None) -> None:
        self.store, self.tid, self.settings = store, tid, settings
        self.cache = cache or ArchiveCache()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="arena-check")
        self._lock = threading.Lock()
        self._running: subprocess.Popen[str] | None = None
        self._stopping = False

    def resume(self) -> None:
        """Check again the submissions a stopped server left checking."""
        for sid in checking(self.store, self.tid):
            self.start(sid)

    def start(self, sid: int) -> None:
        self._pool.submit(self._check_logged, sid)

    def close(self) -> None:
        """Stop: the running check is killed (its submission stays checking, for the next start)."""
        with self._lock:
            self._stopping = True
            if self._running is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self._running.pid, signal.SIGKILL)
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _check_logged(self, sid: int) -> None:
        try:
            self._check(sid)
        except Exception:  # a check must never take the thread down with it; the submission says so
            log.exception("the check of submission %d failed", sid)
            reject(self.store, sid, "the check failed on the server: the reason is in its log", None)

    def _check(self, sid: int) -> None:
        row = submission(self.store, sid)
        if row is None or row.status != "checking":
            return
        try:
            folder = self.cache.path_for(self.store, row.archive)
        except ArchiveError as exc:
            reject(self.store, sid, f"the archive cannot be unpacked: {exc}", None)
            return
        argv = check_command(self.settings, row.command, self.store.tournament(self.tid).settings)
        with self._lock:
            if self._stopping:
                return
            self._running = process = subprocess.Popen(argv, cwd=folder, stdout=subprocess.PIPE, text=True,
                                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                       start_new_session=True, errors="replace")
        try:
            output, _ = process.communicate(timeout=self.settings.check_timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            reject(self.store, sid, f"the check took longer than {self.settings.check_timeout_s:g} s and was "
                                    "stopped", output)
            return
        finally:
            with self._lock:
                self._running = None
        if self._stopping:  # killed by close(): checked again at the next start
            return
        if (reason := verdict(process.returncode, output)) is not None:
            reject(self.store, sid, one_line(reason), output)
            return
        try:
            name = accept(self.store, sid, output)
        except IntegrityError:
            reject(self.store, sid, "the ladder already has a bot of this version's name (added by its operator)",
                   output)
            return
        log.info("submission %d accepted: %s joins the ladder", sid, name)
