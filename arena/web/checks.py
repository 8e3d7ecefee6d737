"""Submitted bots' conformance checks: `referee check` on the submitted package, in the sandbox
(its folder all it sees besides its runtime; the database and the caches private),
``check_concurrency`` at a time on threads of their own so the server keeps answering, each
stopped after ``check_timeout_s``. Waiting checks are taken fairly across users (``FairQueue``): a
user's burst delays another user's check by one check at most. A clean check enters the bot into
the ladder as its user's next version (arena/store/submissions.py); any other outcome rejects it
with the check's reason (its verdict, written as data: `referee check --verdict FILE`) and output,
and removes its unpacked copy and build (nothing will play them). Checks a stopped server left
unfinished run again at its next start, and so do checks the platform stopped (`referee check`
exited 4: a full disk, no descriptors, a sandbox it could not set up): that is never the bot's
rejection (docs/sandbox.md, "The platform's failures and the bot's").
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from sqlalchemy.exc import IntegrityError

from referee.errors import EXIT_PLATFORM
from referee.packages.archive import ArchiveError
from referee.packages.build import Builder, default_build_root
from referee.packages.manifest import PackageError, read_manifest
from referee.packages.runtimes import Runtime, runtimes_from_table
from referee.sandbox import SandboxSettings, make_launcher
from referee.sandbox.launcher import SandboxLauncher
from referee.sandbox.machine import Machine

from ..config import PACKAGE_SPEC, load_config
from ..errors import UsageError, one_line
from ..play.archives import ArchiveCache
from ..store.store import Store
from ..store.submissions import SubmissionRow, accept, archive_in_use, bot_name, checking, reject, submission
from .settings import WebSettings

log = logging.getLogger("arena.web")
# the ladder's time control, as referee check's flags name it
TIME_FLAGS = {"move_time_ms": "--move-time", "grace_ms": "--grace", "bank_initial_ms": "--bank",
              "bank_increment_ms": "--increment", "startup_time_ms": "--startup-time", "cpu_time_ms": "--cpu-time"}
REASON_CHARS = 500


def check_command(settings: WebSettings, command: str, ladder: dict[str, Any], folder: Path,
                  private: tuple[str, ...] = ()) -> list[str]:
    """The `referee check` command line for a submitted bot under the ladder's settings (as
    stored: its players, partnerships and time control): a bot package (``command`` PACKAGE_SPEC)
    unpacked at ``folder``, built and run as `referee check FOLDER` does at home; an older
    submission's command, run at the folder. ``private``: paths no bot may be shown."""
    bot = [str(folder)] if command == PACKAGE_SPEC else ["--bot", command]
    argv = [sys.executable, "-m", "referee.cli", "check", *bot, "--games", str(settings.check_games)]
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
    for path in private:
        argv += ["--private", path]
    return argv


def verdict(returncode: int, output: str, data: dict[str, Any] | None = None) -> str | None:
    """Why a finished check rejects its bot (None: clean): from the verdict it wrote as data
    (``referee check --verdict FILE``), else (it wrote none: it could not start, or was killed)
    from its exit status and the last line of its output."""
    if data is not None and data.get("format") == "royal-casino-check":
        if data.get("could_not_run"):
            return str(data["could_not_run"])[:REASON_CHARS]
        if data.get("clean") and returncode == 0:
            return None
        problems = data.get("problems") or []
        total = sum(int(p.get("count", 1)) for p in problems)
        listed = "; ".join(f"{p.get('count', 1)} x {p.get('problem', '')}" for p in problems)
        return f"NOT CLEAN: {total} failure(s): {listed}"[:REASON_CHARS]
    if returncode == 0:
        return None
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    last = lines[-1] if lines else f"exit status {returncode}"
    return f"the check could not run the bot: {last}"[:REASON_CHARS]


def read_verdict(path: Path) -> dict[str, Any] | None:
    """The verdict a check wrote (None when it wrote none, or not JSON)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def require_bwrap(settings: WebSettings, machine: Machine | None = None) -> None:
    """Submission runs strangers' code: the checks' sandbox must be bubblewrap's (mode "limits"
    shows a bot the host's files as its uid sees them), unless the operator's tournament file asks
    for another mode by name. UsageError (one line, exit 2) otherwise."""
    sandbox = load_config(settings.sandbox_from, check_programs=False).sandbox if settings.sandbox_from \
        else SandboxSettings()
    if sandbox.mode != "auto":
        return  # the operator's explicit choice (docs/web.md, "Security model")
    launcher = make_launcher(sandbox, machine, warn=lambda line: None)
    if not isinstance(launcher, SandboxLauncher) or launcher.mode != "bwrap":
        raise UsageError("--submit runs strangers' bots: it needs the bubblewrap sandbox, which cannot run here "
                         f"({launcher.machine.bwrap_problem if isinstance(launcher, SandboxLauncher) else 'off'}); "
                         "run scripts/setup-system.sh, or set the tournament file's [sandbox] mode to accept less")


def submission_runtimes(settings: WebSettings) -> dict[str, Runtime]:
    """The runtimes a submitted package may name: the defaults, with the tournament file's
    ``[runtimes]`` (the one its checks' sandbox comes from)."""
    table = load_config(settings.sandbox_from, check_programs=False).runtimes if settings.sandbox_from else None
    return runtimes_from_table(table or None, Path("/"))


class FairQueue:
    """Submissions waiting for their check, taken in turn across users: next is the oldest waiting
    submission of the user who has had the fewest checks started since they last had none waiting
    or running (ties: who waited longest). A user with two waiting and one running cannot go before
    another user's first."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._waiting: dict[int, collections.deque[tuple[int, int]]] = {}  # user -> (arrival, sid)
        self._started: dict[int, int] = {}  # checks started per user in their current busy spell
        self._running: collections.Counter[int] = collections.Counter()
        self._arrivals = itertools.count()
        self._closed = False

    def put(self, user_id: int, sid: int) -> None:
        with self._cond:
            self._waiting.setdefault(user_id, collections.deque()).append((next(self._arrivals), sid))
            self._cond.notify()

    def take(self) -> tuple[int, int] | None:
        """The next (user, submission) to check, waiting until there is one; None once closed."""
        with self._cond:
            while not self._closed and not self._waiting:
                self._cond.wait()
            if self._closed:
                return None
            user = min(self._waiting, key=lambda u: (self._started.get(u, 0), self._waiting[u][0][0]))
            _, sid = self._waiting[user].popleft()
            if not self._waiting[user]:
                del self._waiting[user]
            self._started[user] = self._started.get(user, 0) + 1
            self._running[user] += 1
            return user, sid

    def done(self, user_id: int) -> None:
        """A check of ``user_id`` ended: a user with nothing left waiting or running starts afresh."""
        with self._cond:
            self._running[user_id] -= 1
            if self._running[user_id] <= 0 and user_id not in self._waiting:
                del self._running[user_id]
                self._started.pop(user_id, None)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class SubmissionChecks:
    """The checks of one ladder's submissions (see the module docstring)."""

    def __init__(self, store: Store, tid: int, settings: WebSettings, cache: ArchiveCache | None = None) -> None:
        self.store, self.tid, self.settings = store, tid, settings
        self.cache = cache or ArchiveCache()
        self.runtimes = submission_runtimes(settings)
        self.sandbox = load_config(settings.sandbox_from, check_programs=False).sandbox if settings.sandbox_from \
            else SandboxSettings()
        self.queue = FairQueue()
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen[str]] = set()
        self._stopping = False
        self._threads = [threading.Thread(target=self._serve, name=f"arena-check-{n}", daemon=True)
                         for n in range(settings.check_concurrency)]
        for thread in self._threads:
            thread.start()

    @property
    def private(self) -> tuple[str, ...]:
        """What no checked bot may be shown: the database's file and the archive cache."""
        return tuple(p for p in (self.store.sqlite_path, str(self.cache.root), str(default_build_root())) if p)

    def resume(self) -> None:
        """Check again the submissions a stopped server left checking."""
        for sid in checking(self.store, self.tid):
            self.start(sid)

    def start(self, sid: int) -> None:
        row = submission(self.store, sid)
        if row is not None:
            self.queue.put(row.user_id, sid)

    def close(self) -> None:
        """Stop: the running checks are killed (their submissions stay checking, for the next start)."""
        with self._lock:
            self._stopping = True
            for process in self._running:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
        self.queue.close()
        for thread in self._threads:
            thread.join()

    def _serve(self) -> None:
        while (taken := self.queue.take()) is not None:
            user, sid = taken
            try:
                self._check_logged(sid)
            finally:
                self.queue.done(user)

    def _check_logged(self, sid: int) -> None:
        try:
            self._check(sid)
        except Exception:  # a check must never take the thread down with it; the submission says so
            log.exception("the check of submission %d failed", sid)
            self._reject(sid, "the check failed on the server: the reason is in its log", None)

    def _reject(self, sid: int, reason: str, report: str | None) -> None:
        """Reject ``sid`` and remove its unpacked copy here, unless something else may play it."""
        reject(self.store, sid, reason, report)
        row = submission(self.store, sid)
        if row is not None and not archive_in_use(self.store, row.archive, besides=sid):
            try:
                if row.command == PACKAGE_SPEC:
                    self._remove_build(row.archive)
                self.cache.remove(row.archive)
            except ArchiveError as exc:
                log.warning("the unpacked copy of rejected submission %d stays: %s", sid, exc)

    def _remove_build(self, sha256: str) -> None:
        """The build of a rejected package, if its check made one (best effort: a leftover is space)."""
        folder = self.cache.root / sha256
        try:
            manifest = read_manifest(folder)
            runtime = self.runtimes.get(manifest.runtime)
            if runtime is not None:
                Builder(self.sandbox).remove(folder, manifest, runtime)
        except (PackageError, OSError) as exc:
            log.warning("the build of rejected package %s stays: %s", sha256[:12], exc)

    def _check(self, sid: int) -> None:
        row = submission(self.store, sid)
        if row is None or row.status != "checking":
            return
        try:
            folder = self.cache.path_for(self.store, row.archive)
        except ArchiveError as exc:
            self._reject(sid, f"the archive cannot be unpacked: {exc}", None)
            return
        with tempfile.TemporaryDirectory(prefix="arena-check-") as work:
            self._run_check(sid, row, folder, Path(work))

    def _run_check(self, sid: int, row: SubmissionRow, folder: Path, work: Path) -> None:
        """Run `referee check` on the submission: a package as the archive it was sent as (so the
        check finds its copy unpacked, and builds it into the cache the ladder's games use); an
        older submission's command at its unpacked folder."""
        target = folder
        if row.command == PACKAGE_SPEC:
            target = work / f"{bot_name(row.user, row.version)}.tar.gz"
            target.write_bytes(self.store.archive_content(row.archive) or b"")
        argv = check_command(self.settings, row.command, self.store.tournament(self.tid).settings, target,
                             self.private) + ["--verdict", str(work / "verdict.json")]
        with self._lock:
            if self._stopping:
                return
            # in the package's folder: the referee's own opponent runs there too (a folder it may read)
            process = subprocess.Popen(argv, cwd=folder, stdout=subprocess.PIPE,
                                       text=True, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True, errors="replace")
            self._running.add(process)
        try:
            output, _ = process.communicate(timeout=self.settings.check_timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            self._reject(sid, f"the check took longer than {self.settings.check_timeout_s:g} s and was stopped", output)
            return
        finally:
            with self._lock:
                self._running.discard(process)
        if self._stopping:  # killed by close(): checked again at the next start
            return
        if process.returncode == EXIT_PLATFORM:  # the platform's fault: no verdict on the bot
            lines = [line.strip() for line in output.splitlines() if line.strip()]
            log.error("the check of submission %d was stopped by a platform fault; it stays checking, and runs "
                      "again at the server's next start: %s", sid, one_line(lines[-1] if lines else "exit status 4"))
            return
        if (reason := verdict(process.returncode, output, read_verdict(work / "verdict.json"))) is not None:
            self._reject(sid, one_line(reason), output)
            return
        try:
            name = accept(self.store, sid, output)
        except IntegrityError:
            self._reject(sid, "the ladder already has a bot of this version's name (added by its operator)", output)
            return
        log.info("submission %d accepted: %s joins the ladder", sid, name)
