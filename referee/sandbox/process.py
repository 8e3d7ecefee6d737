"""A bot process in its sandbox: started through the cgroup join, prlimit, setpriv and (in mode
"bwrap") bubblewrap; ended with everything it started; its end described with the limit that
ended it ("killed by the sandbox: memory limit (512 MiB)")."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import shlex
import signal
import stat
import threading
from collections.abc import Callable
from pathlib import Path

from ..bots.endpoint import BotEndpoint
from ..bots.cpu import CpuMeter
from ..bots.launcher import ADDRESS_ENV, BotProcess
from ..metrics import SANDBOX_KILLS
from .bwrap import SOCKET_MOUNT, BwrapPlan, bwrap_argv, prlimit_argv, setpriv_argv
from .cgroups import BotCgroup, join_command, signal_all
from .machine import Machine
from .seccomp import program, program_fd
from .settings import MIB, SandboxSettings, pass_env_from_environment
from .uids import UidLease, take_uid
from .view import DEFAULT_PATH, BotView, bot_view, etc_entries, shown_problem, system_entries

HOME_INSIDE = "/tmp"
# Bots whose stop was interrupted (a match cancelled again while it stopped them): killed, but
# their group or uid not yet given back; finished before each launch. Without this, such a group
# stayed until exit and kept counting in the referee's CPU weight (``CgroupTree._weigh``).
_ABANDONED: list[SandboxedProcess] = []
_ABANDONED_LOCK = threading.Lock()


def finish_abandoned() -> None:
    """Give back the groups and uids of interrupted stops whose processes have gone since."""
    with _ABANDONED_LOCK:
        _ABANDONED[:] = [process for process in _ABANDONED if not process.finish_now()]


def limit_lines(settings: SandboxSettings, mode: str, limited: dict[str, str]) -> list[str]:
    """Each limit with how it is enforced ("memory 512 MiB (cgroup)"); ``limited``: the limits a
    cgroup holds."""
    s = settings
    return [
        f"memory {s.memory_mib} MiB ({'cgroup' if 'memory' in limited else 'RLIMIT_DATA, per process'})",
        f"processes {s.processes} ({'cgroup' if 'processes' in limited else 'RLIMIT_NPROC of its uid'})",
        f"CPU {s.cpus:g} core(s) (cgroup)" if "cpus" in limited else "CPU not limited (no cpu cgroup)",
        f"open files {s.open_files} (RLIMIT_NOFILE)",
        f"file size {s.file_size_mib} MiB (RLIMIT_FSIZE)",
        *([f"/tmp and /dev/shm {s.tmp_mib} MiB each (tmpfs)"] if mode == "bwrap" else []),
        f"log {s.log_cap_mib:g} MiB",
    ]


class SandboxedProcess(BotProcess):
    """A bot started by a ``SandboxLauncher`` in its mode ("bwrap" or "limits"); ``note`` hears
    each limit it reached, once it has stopped."""

    def __init__(self, endpoint: BotEndpoint, address: str, log_path: Path, settings: SandboxSettings, mode: str,
                 machine: Machine, note: Callable[[str, str], None], writable: tuple[str, ...] = (),
                 network: bool = False) -> None:
        super().__init__(endpoint, address, log_path, settings.log_cap_bytes)
        self.writable = writable  # folders it may write (a package's build folder), given to its uid
        self.network = network  # the host's network (a build the operator lets reach it)
        self.settings = settings
        self.mode = mode
        self.machine = machine
        self.note = note
        self.uid: UidLease | None = None
        self.cgroup: BotCgroup | None = None
        self.rlimits: dict[str, int] = {}
        self.view: BotView | None = None

    # --- starting -------------------------------------------------------------------------

    def command(self) -> tuple[list[str], dict[str, str], str | None]:
        try:
            return self._command()
        except BaseException:
            self._release()
            raise

    def _command(self) -> tuple[list[str], dict[str, str], str | None]:
        machine, settings, tools = self.machine, self.settings, self.machine.tools
        view = self.view = bot_view(self.endpoint, settings.read_only, os.environ)
        socket_folder = Path(self.address.removeprefix("unix:")).parent
        if problem := shown_problem(view, self.private_paths(socket_folder)):
            raise PermissionError(problem)
        if machine.as_root:
            if self.mode == "limits":  # no mount namespace: its uid walks the host's paths
                socket_folder.parent.chmod(0o711)  # it may pass through to its own folder, not list the others
            if problem := uid_problem(view, self.mode, [str(socket_folder)]):
                raise PermissionError(problem)
            self.uid = take_uid(settings.uid_first, settings.uid_count)
        if machine.cgroups is not None:
            self.cgroup = machine.cgroups.new_group(self.log_path.stem)
            self.cgroup.set_limits(settings.memory_mib * MIB, settings.processes, settings.cpus)
        limited = self.cgroup.limited if self.cgroup else {}
        self.rlimits = {"nofile": settings.open_files, "fsize": settings.file_size_mib * MIB, "core": 0}
        if "processes" not in limited:
            self.rlimits["nproc"] = settings.processes  # per uid: the bot's own (root, or its user namespace)
        if "memory" not in limited:
            self.rlimits["data"] = settings.memory_mib * MIB  # per process: heap and private mappings

        uid = self.uid.uid if self.uid else os.getuid()
        if self.uid is not None:
            os.chown(socket_folder, uid, uid)
            for folder in self.writable:
                give_tree(Path(folder), uid)
        socket_folder.chmod(0o700)
        env = self._environment(view)
        inner = [*prlimit_argv(tools["prlimit"] or "prlimit", self.rlimits)]
        if self.mode == "bwrap":
            if machine.as_root:
                inner += setpriv_argv(tools["setpriv"] or "setpriv", uid, True)
            env.update({"HOME": HOME_INSIDE, "TMPDIR": HOME_INSIDE,
                        ADDRESS_ENV: f"unix:{SOCKET_MOUNT}/{Path(self.address).name}"})
            code = program()[0] if machine.seccomp_problem is None else None
            if code is not None:
                self.pass_fds = (program_fd(code),)  # start() hands it to bwrap and closes it
            plan = BwrapPlan(bwrap=tools["bwrap"] or "bwrap", command=(*inner, *view.argv), cwd=view.cwd,
                             env=tuple(sorted(env.items())), system=tuple(system_entries()),
                             etc=tuple(etc_entries(self.network)), read_only=view.read_only,
                             socket_folder=str(socket_folder), tmp_bytes=settings.tmp_mib * MIB,
                             as_root=machine.as_root, seccomp_fd=self.pass_fds[0] if self.pass_fds else None,
                             writable=self.writable, network=self.network)
            argv, outer_env, cwd = bwrap_argv(plan), {"PATH": DEFAULT_PATH}, "/"
        else:  # "limits": the host's file system and network, its own uid (root), limits, a clean environment
            home = socket_folder / "home"
            home.mkdir(mode=0o700, exist_ok=True)
            if self.uid is not None:
                os.chown(home, uid, uid)
            env.update({"HOME": str(home), "TMPDIR": str(home), ADDRESS_ENV: self.address})
            inner += setpriv_argv(tools["setpriv"] or "setpriv", uid, machine.as_root)
            argv, outer_env, cwd = [*inner, *view.argv], env, view.cwd
        if self.cgroup is not None:
            argv = [*join_command(self.cgroup.procs_files(), tools["sh"] or "/bin/sh"), *argv]
        return argv, outer_env, cwd

    def private_paths(self, socket_folder: Path) -> list[tuple[str, str]]:
        """What this bot may not be shown: the referee's logs and the bots' sockets, and the
        settings' private paths (the arena's database, logs and archive cache among them)."""
        return [("the referee's logs", str(self.log_path.parent)), ("the bots' sockets", str(socket_folder.parent)),
                *(("a private path", path) for path in self.settings.private)]

    def _environment(self, view: BotView) -> dict[str, str]:
        """What the bot's environment holds besides HOME, TMPDIR and its address: PATH, the
        variables ``pass_env`` (and CASINO_SANDBOX_PASS_ENV) name, and its spec's ``env``."""
        env = {"PATH": view.path_env}
        env.update((name, os.environ[name]) for name in (*self.settings.pass_env, *pass_env_from_environment())
                   if name in os.environ)
        env.update(self.endpoint.env)
        return env

    def header(self) -> str:
        parts = [f"sandbox {self.mode}"]
        if self.uid is not None:
            parts.append(f"uid {self.uid.uid}")
        if self.mode == "bwrap":
            parts.append("system calls filtered" if self.machine.seccomp_problem is None else "no system-call filter")
        parts += limit_lines(self.settings, self.mode, self.cgroup.limited if self.cgroup else {})
        return f"{super().header()} ({'; '.join(parts)})"

    # --- its end --------------------------------------------------------------------------

    def terminate(self) -> None:
        """SIGTERM to the bot itself: in "bwrap" its processes are below bubblewrap's (which would
        die of a SIGTERM and take the bot with it by SIGKILL), so they are signalled one by one:
        every process of its cgroup, or below bubblewrap's, except bubblewrap's own."""
        if self.mode != "bwrap" or self.process is None:
            super().terminate()
            return
        outer = self.process.pid
        pids = (self.cgroup.pids() if self.cgroup is not None else _descendants(outer)) - {outer}
        signal_all(pids, signal.SIGTERM)  # bubblewrap's init among them ignores it: its namespace's pid 1

    def kill_now(self) -> None:
        """Also every process of its cgroup, else (root, no cgroup) of its uid: one round of
        SIGKILL, without waiting (``cleanup``'s rounds may not come). Its group and uid are given
        back as soon as those processes are gone: now, or before the next launch (or at exit)."""
        super().kill_now()
        if not self.finish_now():
            with _ABANDONED_LOCK:
                if not _ABANDONED:
                    atexit.register(finish_abandoned)  # after the cgroup tree's removal: runs before it
                _ABANDONED.append(self)

    def finish_now(self) -> bool:
        """One round of ``cleanup`` that does not wait: SIGKILL what is left of the bot; once
        nothing is, remove its group and give its uid back. True when that is done."""
        if self.cgroup is not None:
            if not self.cgroup.close_now():
                return False
        elif self.uid is not None:
            pids = _uid_pids(self.uid.uid)
            if pids:
                signal_all(pids, signal.SIGKILL)
                return False
        self._release()
        return True

    def returncode_signal(self, code: int) -> int | None:
        if code < 0:
            return -code
        if self.mode == "bwrap" and code > 128:  # bwrap exits 128 + the signal that killed the bot
            with contextlib.suppress(ValueError):
                return signal.Signals(code - 128).value
        return None

    def death_reason(self) -> str | None:
        code = self.process.returncode if self.process else None
        if code is None or self.cgroup is None:
            return None
        killed = self.returncode_signal(code) == signal.SIGKILL
        if killed and self.cgroup.stats().oom_kills:
            return f"killed by the sandbox: memory limit ({self.settings.memory_mib} MiB)"
        return None

    def limit_note(self) -> str:
        if self.cgroup is not None and self.cgroup.stats().forks_refused:
            return f" (it had reached its process limit, {self.settings.processes})"
        return ""

    @property
    def exit_description(self) -> str:
        text = super().exit_description
        return text if text == "running" else text + self.limit_note()

    def limits_reached(self) -> list[str]:
        lines = []
        if self.cgroup is not None:
            stats = self.cgroup.stats()
            if stats.oom_kills:
                lines.append(f"memory limit ({self.settings.memory_mib} MiB) reached: "
                             f"{stats.oom_kills} process(es) killed")
            if stats.forks_refused:
                lines.append(f"process limit ({self.settings.processes}) reached: "
                             f"{stats.forks_refused} new process(es) or thread(s) refused")
        return lines + super().limits_reached()

    def make_meter(self) -> CpuMeter:
        """Its cgroup's own CPU count when it has one (one file read in place: a fraction of a
        /proc tree walk, and it counts every process of the bot, daemons included), else the
        process tree's."""
        meter = self.cgroup.cpu_meter() if self.cgroup is not None else None
        return meter if meter is not None else super().make_meter()

    def cpu_seconds(self) -> float | None:
        """CPU time of everything the bot ran so far (its cgroup's count; None without one)."""
        if self.cgroup is None:
            return None
        ns = self.cgroup.stats().cpu_ns
        return None if ns is None else ns / 1e9

    async def cleanup(self) -> None:
        """Everything of the bot ends with it: its cgroup's processes, else (root, no cgroup) every
        process of its uid; then its uid and group are given back."""
        try:
            if self.cgroup is not None:
                await self.cgroup.close()
            elif self.uid is not None:
                await _kill_uid(self.uid.uid)
        finally:
            self._release()
            if self.cgroup is not None:  # its final counters: what the sandbox ended
                stats = self.cgroup.stats()
                if stats.oom_kills:
                    SANDBOX_KILLS.labels("memory").inc(stats.oom_kills)
                if stats.forks_refused:
                    SANDBOX_KILLS.labels("pids").inc()
            for line in self.limits_reached():
                self.note(self.log_path.name, line)

    def _release(self) -> None:
        if self.uid is not None:
            self.uid.release()
            self.uid = None

    def described_command(self) -> str:
        return shlex.join(self.view.argv) if self.view else shlex.join(self.endpoint.command)


def give_tree(folder: Path, uid: int) -> None:
    """Make ``folder`` and everything in it ``uid``'s (its user and group), not following links:
    a build's folder for the build's uid, and back to the referee's after it."""
    os.lchown(folder, uid, uid)
    for top, dirs, files in os.walk(folder):
        for name in (*dirs, *files):
            os.lchown(os.path.join(top, name), uid, uid)


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid``, from /proc/<pid>/task/<tid>/children (empty where the kernel
    does not keep those lists)."""
    found: set[int] = set()
    todo = [pid]
    while todo and len(found) < 100_000:
        for task in Path(f"/proc/{todo.pop()}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                for child in task.read_text().split():
                    if int(child) not in found:
                        found.add(int(child))
                        todo.append(int(child))
    return found


def uid_problem(view: BotView, mode: str, more: list[str] = ()) -> str | None:  # type: ignore[assignment]
    """Why a bot with a uid of its own (a root referee's) could not read what ``view`` shows it, or
    None: a path not readable by others, or in mode "limits" (no mount namespace) a folder on the
    way to one, or to ``more`` (its socket folder), that others may not pass through."""
    try:
        _check_readable_by_others(view)
        if mode == "limits":
            _check_passable_by_others([*view.read_only, *more])
    except PermissionError as exc:
        return str(exc)
    return None


def _check_readable_by_others(view: BotView) -> None:
    """A bot with a uid of its own reads its folder and runtime as "others" do: PermissionError
    naming the first path it could not read (a private folder, e.g. one made by mktemp)."""
    for path in view.read_only:
        try:
            mode = os.stat(path).st_mode
        except OSError as exc:
            raise PermissionError(f"cannot show {path} to the bot: {exc.strerror}") from None
        need = (stat.S_IROTH | stat.S_IXOTH) if stat.S_ISDIR(mode) else stat.S_IROTH
        if mode & need != need:
            raise PermissionError(f"{path} is not readable by the bot's own uid (mode {stat.S_IMODE(mode):04o}): "
                                  f"chmod o+r{'x' if stat.S_ISDIR(mode) else ''} it")


def _check_passable_by_others(paths: list[str]) -> None:
    """In mode "limits" a bot with a uid of its own reaches its files and socket through the host's
    folders: PermissionError naming the first folder on the way others may not pass (o+x)."""
    for path in paths:
        folder = os.path.dirname(os.path.abspath(path))
        while folder != "/":
            try:
                mode = os.stat(folder).st_mode
            except OSError:
                mode = stat.S_IXOTH  # not there to check: the start itself will say
            if not mode & stat.S_IXOTH:
                raise PermissionError(f"the bot's own uid cannot pass through {folder} (mode {stat.S_IMODE(mode):04o}) "
                                      f"to reach {path}: chmod o+x it (or, for its socket, use a TMPDIR others may "
                                      "pass through)")
            folder = os.path.dirname(folder)


def _uid_pids(uid: int) -> set[int]:
    """The processes running as ``uid``."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    found.add(int(entry.name))
    return found


async def _kill_uid(uid: int, rounds: int = 100) -> None:
    """SIGKILL every process of ``uid`` until there are none (a bot's own uid: nothing else runs as it)."""
    for _ in range(rounds):
        found = _uid_pids(uid)
        if not found:
            return
        signal_all(found, signal.SIGKILL)
        await asyncio.sleep(0.01)
