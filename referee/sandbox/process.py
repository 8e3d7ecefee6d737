"""A bot process in its sandbox: started through the cgroup join, prlimit, setpriv and (in mode
"bwrap") bubblewrap; ended with everything it started; its end described with the limit that
ended it ("killed by the sandbox: memory limit (512 MiB)").

What the platform cannot do for it is a PlatformFault, never the bot's startup failure: a uid
lease, a cgroup or a sandbox it cannot set up ("sandbox": bubblewrap's JSON status tells its
set-up failing from the bot's own exit), a runtime outside the bot's folder its uid cannot reach
or run ("runtime"). Its own folder, program and exit stay the bot's."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import shlex
import signal
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from ..bots.endpoint import BotEndpoint
from ..bots.cpu import CpuMeter
from ..bots.faults import PLATFORM_ERRNOS
from ..bots.launcher import ADDRESS_ENV, BotProcess
from ..errors import PlatformFault, platform_fault
from ..metrics import SANDBOX_KILLS
from .bwrap import SOCKET_MOUNT, BwrapPlan, bwrap_argv, prlimit_argv, setpriv_argv
from .cgroups import BotCgroup, join_command, signal_all
from .machine import Machine
from .seccomp import program, program_fd
from .settings import MIB, SandboxSettings, pass_env_from_environment
from .uids import UidLease, take_uid
from .view import SYSTEM_ROOTS, DEFAULT_PATH, BotView, bot_view, etc_entries, inside, shown_problem, system_entries

HOME_INSIDE = "/tmp"
SETUP_LOG_TAIL = 4096  # bytes of a bot's log read for the line bwrap left when its set-up failed
_MAX_LINKS = 40  # symbolic links followed from a bot's program
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
        self._status_fd: int | None = None  # the read end of bwrap's --json-status-fd
        self._status: list[dict[str, object]] | None = None  # what it wrote, read once it ended

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
                with _sandbox_step("cannot open the bots' socket folder to their uids"):
                    socket_folder.parent.chmod(0o711)  # it may pass through to its own folder, not list the others
            if problem := runtime_problem(view, self.mode):  # outside its folder: the platform's to fix
                raise PlatformFault("runtime", f"bot {self.log_path.stem}: {problem}")
            if problem := uid_problem(view, self.mode, [str(socket_folder)]):
                raise PermissionError(problem)
            with _sandbox_step("cannot lease a uid for the bot"):
                self.uid = take_uid(settings.uid_first, settings.uid_count)
        if machine.cgroups is not None:
            with _sandbox_step("cannot make the bot's cgroup"):
                self.cgroup = machine.cgroups.new_group(self.log_path.stem)
                self.cgroup.set_limits(settings.memory_mib * MIB, settings.processes, settings.cpus)
        limited = self.cgroup.limited if self.cgroup else {}
        self.rlimits = {"nofile": settings.open_files, "fsize": settings.file_size_mib * MIB, "core": 0}
        if "processes" not in limited:
            self.rlimits["nproc"] = settings.processes  # per uid: the bot's own (root, or its user namespace)
        if "memory" not in limited:
            self.rlimits["data"] = settings.memory_mib * MIB  # per process: heap and private mappings

        uid = self.uid.uid if self.uid else os.getuid()
        with _sandbox_step("cannot give the bot its folders"):
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
            with _sandbox_step("cannot hand bubblewrap its filter and status pipe"):
                seccomp_fd = program_fd(code) if code is not None else None
                self.pass_fds = () if seccomp_fd is None else (seccomp_fd,)  # start() hands them over, then closes them
                self._status_fd, status_write = os.pipe2(os.O_CLOEXEC)
                self.pass_fds += (status_write,)
            plan = BwrapPlan(bwrap=tools["bwrap"] or "bwrap", command=(*inner, *view.argv), cwd=view.cwd,
                             env=tuple(sorted(env.items())), system=tuple(system_entries()),
                             etc=tuple(etc_entries(self.network)), read_only=view.read_only,
                             socket_folder=str(socket_folder), tmp_bytes=settings.tmp_mib * MIB,
                             as_root=machine.as_root, seccomp_fd=seccomp_fd, status_fd=status_write,
                             writable=self.writable, network=self.network)
            argv, outer_env, cwd = bwrap_argv(plan), {"PATH": DEFAULT_PATH}, "/"
        else:  # "limits": the host's file system and network, its own uid (root), limits, a clean environment
            home = socket_folder / "home"
            with _sandbox_step("cannot make the bot's home folder"):
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

    async def exit_fault(self) -> PlatformFault | None:
        """Its log not written, or (mode "bwrap") a sandbox that could not be set up: bubblewrap
        ended on its own with no "exit-code" in its JSON status, so the bot's command never ran
        (a mount, namespace or filter that failed; the cgroup join, before it). A bot killed by
        its cgroup's memory limit, or whose command ran and exited, is the bot's."""
        fault = self.platform_fault()
        if fault is not None or self.mode != "bwrap" or self.process is None:
            return fault
        code = self.process.returncode
        if code is None or code < 0:  # running, or killed by a signal (the referee's stop): not its set-up
            return None
        if self.cgroup is not None and self.cgroup.stats().oom_kills:
            return None
        if any("exit-code" in doc for doc in self._read_status()):
            return None
        said = await self._setup_line()
        return PlatformFault("sandbox", f"the sandbox of bot {self.log_path.stem} could not be set up (status {code}, "
                                        f"before its command ran){': ' + said if said else ''}")

    def _read_status(self) -> list[dict[str, object]]:
        """bubblewrap's JSON status documents, read (once) after it ended: one a line."""
        if self._status is None:
            data = b""
            if self._status_fd is not None:
                os.set_blocking(self._status_fd, False)
                with contextlib.suppress(OSError):
                    while len(data) < 65536 and (chunk := os.read(self._status_fd, 4096)):
                        data += chunk
            self._status = []
            for line in data.decode(errors="replace").splitlines():
                with contextlib.suppress(ValueError):
                    doc = json.loads(line)
                    if isinstance(doc, dict):
                        self._status.append(doc)
        return self._status

    async def _setup_line(self) -> str:
        """The last line the failed set-up left in the bot's log (bwrap's or the cgroup join's)."""
        if self.log is not None:
            await asyncio.to_thread(self.log.finish, 1.0)
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(0, f.seek(0, 2) - SETUP_LOG_TAIL))
                lines = f.read().decode("utf-8", errors="replace").splitlines()
        except OSError:
            return ""
        said = [line.strip() for line in lines if line.strip() and not line.startswith("--- ")]
        return "".join(c if c.isprintable() else " " for c in said[-1])[:300] if said else ""

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
        if self._status_fd is not None:
            os.close(self._status_fd)
            self._status_fd = None

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


@contextlib.contextmanager
def _sandbox_step(what: str) -> Iterator[None]:
    """A step of setting up a bot's sandbox: an OSError in it is the platform's (PlatformFault
    "sandbox"; "descriptors", "memory" or "disk" when its errno says the machine is short of one)."""
    try:
        yield
    except OSError as exc:
        if exc.errno in PLATFORM_ERRNOS:
            raise platform_fault(exc, what) from exc
        raise PlatformFault("sandbox", f"{what}: {exc.strerror or exc}") from exc


def runtime_problem(view: BotView, mode: str) -> str | None:
    """Why a bot with a uid of its own (a root referee's) could not reach or run what it is given
    outside its own folder, or None: its runtime and extra paths not readable by others (in mode
    "limits" also a folder on the way others may not pass), or its program, when that lies outside
    its folder (an interpreter, a runtime's), behind a folder others may not pass or not executable
    by others. The platform's to fix (PlatformFault "runtime"); the same in its own folder is the
    bot's (``uid_problem``)."""
    outside = [path for path in view.read_only if not inside(path, view.cwd)]
    try:
        _check_readable_by_others(outside)
        if mode == "limits":
            _check_passable_by_others(outside)
        if not inside(view.argv[0], view.cwd):
            _check_runnable_by_others(view.argv[0], [*view.read_only, *SYSTEM_ROOTS] if mode == "bwrap" else [])
    except PermissionError as exc:
        return f"its runtime: {exc}"
    return None


def _check_runnable_by_others(program: str, mounts: list[str]) -> None:
    """PermissionError naming the first folder others may not pass (o+x) on the way to ``program``
    or to a link it leads through, or the file others may not execute. Folders are checked from the
    mount that shows them (``mounts``; bwrap makes the folders above a mount itself), else from /."""
    path = program
    for _ in range(_MAX_LINKS):
        shown_from = max((m for m in mounts if inside(path, m)), key=len, default="/")
        folder = os.path.dirname(path)
        on_the_way = []
        while inside(folder, shown_from) and folder != "/":
            on_the_way.append(folder)
            folder = os.path.dirname(folder)
        for folder in reversed(on_the_way):
            try:
                mode = os.stat(folder).st_mode
            except OSError:
                continue  # not there: the start itself will say
            if not mode & stat.S_IXOTH:
                raise PermissionError(f"the bot's own uid cannot pass through {folder} (mode {stat.S_IMODE(mode):04o}) "
                                      f"to its program {program}: chmod o+x it")
        if not os.path.islink(path):
            break
        path = os.path.normpath(os.path.join(os.path.dirname(path), os.readlink(path)))
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # not there: the start itself will say
    if not mode & stat.S_IXOTH:
        raise PermissionError(f"its program {path} is not executable by the bot's own uid (mode "
                              f"{stat.S_IMODE(mode):04o}): chmod o+x it")


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


def _check_readable_by_others(paths: BotView | list[str]) -> None:
    """A bot with a uid of its own reads its folder and runtime (a view's ``read_only``, or
    ``paths``) as "others" do: PermissionError naming the first path it could not read (a private
    folder, e.g. one made by mktemp)."""
    for path in (paths.read_only if isinstance(paths, BotView) else paths):
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
