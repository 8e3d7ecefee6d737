"""Control groups for bots: one group per bot process, with its memory, process and CPU limits,
and the counters that say which limit it reached; cgroup v2, else v1 (one folder per controller).

The referee makes a group of its own (``royal-casino-<pid>``) under the groups it is in, and one
group per running bot below it. A bot's processes are put in its group before its program runs
(``join_command``: a shell writes its pid to each ``cgroup.procs``, then execs the rest), so
everything the bot forks is counted and killed with it, daemons included.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import errno
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

CONTROLLERS = ("memory", "pids", "cpu")  # what the limits need; v1 also uses cpuacct for CPU time
CPU_PERIOD_US = 100_000
_KILL_ROUNDS = 100  # of SIGKILL to every process listed, 10 ms apart, before giving up
_GROUP_PREFIX = "royal-casino-"


@dataclass
class CgroupStats:
    """What a bot's group counted: kills by the memory limit, forks refused by the process limit,
    its memory peak and CPU time (None: not counted here)."""

    oom_kills: int = 0
    forks_refused: int = 0
    memory_peak: int | None = None
    cpu_ns: int | None = None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return ""


def _counter(text: str, name: str) -> int:
    """The value of ``name`` in a flat-keyed file (``oom_kill 2`` lines)."""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == name and parts[1].isdigit():
            return int(parts[1])
    return 0


def _number(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


def procs_of(path: Path) -> set[int]:
    """The pids a ``cgroup.procs`` file lists (none when it cannot be read)."""
    return {int(p) for p in _read(path).split() if p.isdigit()}


def signal_all(pids: set[int], sig: int) -> None:
    """Send ``sig`` to each of ``pids``; one that is gone (or not ours to signal) is skipped."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _write(path: Path, value: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(value)


@dataclass
class BotCgroup:
    """One bot's group: ``paths`` by controller (v2: the same folder for all)."""

    version: int
    paths: dict[str, Path]
    limited: dict[str, str] = field(default_factory=dict)  # limit -> how ("cgroup")
    final: CgroupStats | None = None  # read once the bot has ended, before the group is removed
    on_close: Callable[[], None] | None = None  # told once the group is gone

    @property
    def folders(self) -> list[Path]:
        return sorted(set(self.paths.values()))

    def procs_files(self) -> list[Path]:
        return [folder / "cgroup.procs" for folder in self.folders]

    def set_limits(self, memory_bytes: int, processes: int, cpus: float) -> None:
        """Write the limits this group's controllers can hold; ``limited`` says which were set."""
        if "memory" in self.paths:
            folder = self.paths["memory"]
            if self.version == 2:
                _write(folder / "memory.max", str(memory_bytes))
                if (folder / "memory.swap.max").exists():
                    _write(folder / "memory.swap.max", "0")
            else:
                _write(folder / "memory.limit_in_bytes", str(memory_bytes))
                if (folder / "memory.memsw.limit_in_bytes").exists():  # memory and swap together
                    _write(folder / "memory.memsw.limit_in_bytes", str(memory_bytes))
            self.limited["memory"] = "cgroup"
        if "pids" in self.paths:
            _write(self.paths["pids"] / "pids.max", str(processes))
            self.limited["processes"] = "cgroup"
        if "cpu" in self.paths:
            quota = max(1000, int(cpus * CPU_PERIOD_US))
            if self.version == 2:
                _write(self.paths["cpu"] / "cpu.max", f"{quota} {CPU_PERIOD_US}")
            else:
                _write(self.paths["cpu"] / "cpu.cfs_period_us", str(CPU_PERIOD_US))
                _write(self.paths["cpu"] / "cpu.cfs_quota_us", str(quota))
            self.limited["cpus"] = "cgroup"

    def stats(self) -> CgroupStats:
        """The counters now (or as they were when the bot ended)."""
        if self.final is not None:
            return self.final
        stats = CgroupStats()
        if self.version == 2:
            folder = self.folders[0]
            stats.oom_kills = _counter(_read(folder / "memory.events"), "oom_kill")
            stats.forks_refused = _counter(_read(folder / "pids.events"), "max")
            stats.memory_peak = _number(_read(folder / "memory.peak"))
            usage = _counter(_read(folder / "cpu.stat"), "usage_usec")
            stats.cpu_ns = usage * 1000 if (folder / "cpu.stat").exists() else None
            return stats
        if "memory" in self.paths:
            stats.oom_kills = _counter(_read(self.paths["memory"] / "memory.oom_control"), "oom_kill")
            stats.memory_peak = _number(_read(self.paths["memory"] / "memory.max_usage_in_bytes"))
        if "pids" in self.paths:
            stats.forks_refused = _counter(_read(self.paths["pids"] / "pids.events"), "max")
        if "cpuacct" in self.paths:
            stats.cpu_ns = _number(_read(self.paths["cpuacct"] / "cpuacct.usage"))
        return stats

    def cpu_meter(self) -> CgroupCpuMeter | None:
        """A meter over this group's CPU count (v2 ``cpu.stat``, v1 ``cpuacct.usage``); None when
        the group has none."""
        if self.version == 2:
            path = self.folders[0] / "cpu.stat"
        elif "cpuacct" in self.paths:
            path = self.paths["cpuacct"] / "cpuacct.usage"
        else:
            return None
        try:
            return CgroupCpuMeter(os.open(path, os.O_RDONLY), self.version)
        except OSError:
            return None

    def pids(self) -> set[int]:
        return set().union(*(procs_of(procs) for procs in self.procs_files()))

    async def kill_all(self) -> bool:
        """SIGKILL every process in the group until none is left; False if some outlived every
        round (they cannot, short of a kernel refusing signals)."""
        if self.version == 2 and (self.folders[0] / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                _write(self.folders[0] / "cgroup.kill", "1")
        for _ in range(_KILL_ROUNDS):
            pids = self.pids()
            if not pids:
                return True
            signal_all(pids, signal.SIGKILL)
            await asyncio.sleep(0.01)
        return not self.pids()

    async def close(self) -> None:
        """Kill what is left, keep the final counters and remove the group's folders."""
        await self.kill_all()
        self._keep_final()
        for _ in range(50):  # a killed task leaves its group a moment after the signal
            if self._remove_folders():
                break
            await asyncio.sleep(0.01)
        self._closed()

    def close_now(self) -> bool:
        """``close`` without waiting, for a stop that was interrupted: SIGKILL what is left, and
        once nothing is, keep the final counters and remove the folders. True when the group is
        gone; else call it again later (``referee/sandbox/process.py``'s ``finish_abandoned``)."""
        pids = self.pids()
        if pids:
            signal_all(pids, signal.SIGKILL)
            return False
        self._keep_final()
        if not self._remove_folders():
            return False
        self._closed()
        return True

    def _keep_final(self) -> None:
        if self.final is None:
            self.final = self.stats()

    def _remove_folders(self) -> bool:
        """Remove the group's folders; False while one is still busy (EBUSY). A folder that cannot
        be removed for another reason is left to the tree's removal at exit."""
        busy = False
        for folder in self.folders:
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError as exc:
                busy = busy or exc.errno == errno.EBUSY
        return not busy

    def _closed(self) -> None:
        if self.on_close is not None:
            self.on_close()
            self.on_close = None


class CgroupCpuMeter:
    """A bot's CPU time as its cgroup counts it, read again in place from one open file (a
    ``CpuMeter``, referee/bots/cpu.py). The kernel adds a running thread's time to the count at
    each scheduler tick and switch, so a reading lags a thread running at that moment by up to a
    tick (1-10 ms); a bot's thread that has answered and gone back to wait is counted in full."""

    def __init__(self, fd: int, version: int) -> None:
        self._fd: int | None = fd
        self._v2 = version == 2

    def cpu_ns(self) -> int | None:
        if self._fd is None:
            return None
        try:
            text = os.pread(self._fd, 4096, 0)
        except OSError:
            return None
        if not self._v2:
            return int(text) if text.strip().isdigit() else None
        for line in text.splitlines():  # "usage_usec 1234" is the first line
            if line.startswith(b"usage_usec "):
                return int(line[11:]) * 1000
        return None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:  # BotProcess.stop closes it; this is for a meter dropped without that
        self.close()


@dataclass
class CgroupTree:
    """Where this referee makes its bots' groups: ``bases`` by controller, each the referee's
    own parent group (``royal-casino-<pid>``), made on first use and removed at exit."""

    version: int
    bases: dict[str, Path]
    made: set[Path] = field(default_factory=set)
    _count: int = 0
    live: int = 0  # bot groups that exist now

    def new_group(self, label: str) -> BotCgroup:
        """A new group for one bot process; OSError when it cannot be made."""
        self._count += 1
        name = f"{_safe(label)}-{self._count}"
        paths: dict[str, Path] = {}
        try:
            for controller, base in self.bases.items():
                if base not in self.made:
                    base.mkdir(exist_ok=True)
                    self.made.add(base)
                    if self.version == 2:
                        wanted = " ".join(f"+{c}" for c in CONTROLLERS if c in self.bases)
                        _write(base / "cgroup.subtree_control", wanted)
                folder = base / name
                if folder not in paths.values():
                    folder.mkdir()
                paths[controller] = folder
        except OSError:
            for folder in set(paths.values()):
                with contextlib.suppress(OSError):
                    folder.rmdir()
            raise
        self.live += 1
        self._weigh()
        return BotCgroup(self.version, paths, on_close=self._released)

    def _released(self) -> None:
        self.live -= 1
        self._weigh()

    def _weigh(self) -> None:
        """Give the referee's parent cpu group the weight of as many ordinary processes as it has
        bots, so each bot competes for CPU as it would outside a sandbox (a group weighs as one
        process: without this, all the referee's bots together would weigh as one)."""
        base = self.bases.get("cpu")
        if base is None or base not in self.made:
            return
        with contextlib.suppress(OSError):
            if self.version == 2:
                _write(base / "cpu.weight", str(min(10_000, 100 * max(1, self.live))))
            else:
                _write(base / "cpu.shares", str(min(262_144, 1024 * max(1, self.live))))

    def remove(self) -> None:
        """Remove the referee's parent groups (empty once every bot group is gone)."""
        for base in self.made:
            for child in _children(base):
                with contextlib.suppress(OSError):
                    child.rmdir()
            with contextlib.suppress(OSError):
                base.rmdir()
        self.made.clear()


def _safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in label)[:64] or "bot"


def _children(folder: Path) -> list[Path]:
    try:
        return [p for p in folder.iterdir() if p.is_dir()]
    except OSError:
        return []


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """The cgroup mounts: (mount point, mounted root, fstype, options), from mountinfo."""
    found = []
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        left, _, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if len(fields) < 5 or len(rest) < 3 or rest[0] not in ("cgroup", "cgroup2"):
            continue
        options = set(rest[2].split(",")) | set(fields[5].split(",") if len(fields) > 5 else [])
        found.append((fields[4].replace("\\040", " "), fields[3], rest[0], options))
    return found


def _own_groups() -> dict[str, str]:
    """This process's group by controller ("" for the v2 hierarchy), from /proc/self/cgroup."""
    groups: dict[str, str] = {}
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in (parts[1].split(",") if parts[1] else [""]):
            groups[controller] = parts[2]
    return groups


def _under(mount: str, root: str, group: str) -> Path | None:
    """The folder of ``group`` (a path in the hierarchy) in a mount of the hierarchy's ``root``."""
    if root != "/" and not (group == root or group.startswith(root.rstrip("/") + "/")):
        return None
    relative = group[len(root):] if root != "/" else group
    return Path(mount) / relative.lstrip("/")


def _usable(base: Path) -> bool:
    """Whether this process may make a group in ``base`` (it tries, and removes what it made)."""
    probe = base / f"{_GROUP_PREFIX}probe-{os.getpid()}"
    try:
        probe.mkdir()
    except FileExistsError:
        pass
    except OSError:
        return False
    with contextlib.suppress(OSError):
        probe.rmdir()
    return True


def find_tree() -> tuple[CgroupTree | None, str]:
    """Where bots' groups can be made here, and which controllers are missing and why ("" when
    all are there); (None, why) when none can be."""
    name = f"{_GROUP_PREFIX}{os.getpid()}"
    own = _own_groups()
    mounts = _mounts()
    v2 = [(m, r) for m, r, kind, _ in mounts if kind == "cgroup2"]
    if v2 and "" in own:
        mount, root = v2[0]
        base = _under(mount, root, own[""])
        if base is not None:
            available = set(_read(base / "cgroup.controllers").split())
            enabled = set(_read(base / "cgroup.subtree_control").split())
            wanted = [c for c in CONTROLLERS if c in available]
            if wanted and all(c in enabled for c in wanted) and _usable(base):
                tree = CgroupTree(2, {c: base / name for c in wanted})
                _clean_stale(base)
                missing = [c for c in CONTROLLERS if c not in wanted]
                return _registered(tree), f"cgroup v2 has no {', '.join(missing)} controller" if missing else ""
    bases: dict[str, Path] = {}
    absent: list[str] = []  # controllers not mounted here
    refused: list[str] = []  # folders where this process may not make groups
    for controller in (*CONTROLLERS, "cpuacct"):
        mount = next(((m, r) for m, r, kind, opts in mounts if kind == "cgroup" and controller in opts), None)
        if mount is None or controller not in own:
            absent.append(controller)
            continue
        base = _under(mount[0], mount[1], own[controller])
        if base is None or not _usable(base):
            refused.append(str(base or mount[0]))
            continue
        _clean_stale(base)
        bases[controller] = base / name
    absent = [c for c in absent if c in CONTROLLERS]
    why = "; ".join([*([f"no {', '.join(absent)} controller"] if absent else []),
                     *([f"may not make groups in {', '.join(refused)}"] if refused else [])])
    if not any(c in bases for c in CONTROLLERS):
        return None, why or "no cgroup controllers"
    return _registered(CgroupTree(1, bases)), "" if all(c in bases for c in CONTROLLERS) else why


def _registered(tree: CgroupTree) -> CgroupTree:
    atexit.register(tree.remove)
    return tree


def _clean_stale(base: Path) -> None:
    """Remove the groups of referees that are gone (killed before they could clean up), and kill
    what still runs in them: a bot outlives its killed referee only through bubblewrap's known
    start-up race (its ``--die-with-parent`` is set in its child after the fork, so a parent killed
    in between leaves the child running: containers/bubblewrap#633); the next referee ends it."""
    for folder in _children(base):
        if not folder.name.startswith(_GROUP_PREFIX):
            continue
        pid = folder.name[len(_GROUP_PREFIX):]
        if not pid.isdigit() or Path(f"/proc/{pid}").exists():
            continue
        for child in _children(folder):
            for _ in range(_KILL_ROUNDS):  # bounded: SIGKILL ends every process of the group at once
                pids = procs_of(child / "cgroup.procs")
                if not pids:
                    break
                signal_all(pids, signal.SIGKILL)
                time.sleep(0.01)
            with contextlib.suppress(OSError):
                child.rmdir()
        with contextlib.suppress(OSError):
            folder.rmdir()


def join_command(procs_files: list[Path], shell: str = "/bin/sh") -> list[str]:
    """The argv prefix that puts the process in the groups (``procs_files``), then execs the
    rest of the command line in place (status 125 when a group cannot be joined)."""
    script = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
    return [shell, "-c", script, "sh", *(str(p) for p in procs_files), "--"]
