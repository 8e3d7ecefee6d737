"""How much CPU a started bot has used: the ``CpuMeter`` seam, and its ``/proc`` implementation.

The referee reads a bot's meter just before it sends a Turn and just after the answer arrives;
the difference is the move's CPU time (docs/protocol.md, "Time limits"). ``ProcTreeMeter``
reads it from the kernel for the bot's whole process tree; the sandbox, which puts each bot
in a cgroup of its own, reads its cgroup's ``cpu.stat`` (v2) or
``cpuacct.usage`` (v1) instead (``CgroupCpuMeter``, referee/sandbox/cgroups.py), which also
counts what this one cannot see (below).

What ``ProcTreeMeter`` counts, walking from the bot's process down through
``/proc/<pid>/task/<tid>/children``, for every live process of the tree:

- the process's own CPU clock (``clock_gettime`` on its process CPU clock, nanoseconds): every
  thread, live or exited;
- the user and system time of the children it has reaped (``cutime`` + ``cstime`` of
  ``/proc/<pid>/stat``, in clock ticks, usually 10 ms): a short-lived child that ran and was
  waited for between two readings is counted there.

What it misses: a process that has left the tree (a double-forked daemon, re-parented to init;
a child whose parent exited before reaping it), and a child that has exited but is not yet
reaped when the second reading is taken (its time reaches its parent's ``cutime`` only when it
is waited for). Each process's threads are listed again only when their number changes, so a
child forked by a thread that started while another of that process ended, between two
readings, is missed until the number changes. The tree is walked at each reading, so a child started and reaped within one
move costs it tick-rounded time, and a reading may come out lower than the previous one when a
child exits unreaped (a move's CPU time is never taken below zero).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Protocol

# Linux encodes another process's CPU clock in the clock id (what glibc's clock_getcpuclockid
# returns): ~pid << 3 | CPUCLOCK_SCHED (2), the scheduler's nanosecond runtime of all its threads.
_CPUCLOCK_SCHED = 2
_MAX_OPEN = 33  # /proc files a meter keeps open (stat and children files); more are opened at each reading
_TICK_NS = 10**9 // os.sysconf("SC_CLK_TCK") if sys.platform == "linux" else 0


class CpuMeter(Protocol):
    """The CPU time a bot's processes have used so far, for timing its moves."""

    def cpu_ns(self) -> int | None:
        """Nanoseconds of CPU used since the bot started; None when it cannot be read (gone)."""
        ...

    def close(self) -> None:
        """Give back what the meter holds open; later readings give None."""
        ...


def proc_metering_problem() -> str | None:
    """Why ``ProcTreeMeter`` cannot work on this machine (one line), or None when it can."""
    if sys.platform != "linux":
        return f"CPU time is measured through Linux's /proc, and this is {sys.platform}"
    if not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"):
        return "/proc/<pid>/task/<tid>/children is missing (a kernel without CONFIG_PROC_CHILDREN)"
    try:
        time.clock_gettime_ns(_clock_id(os.getpid()))
    except OSError as exc:
        return f"cannot read a process's CPU clock: {exc.strerror}"
    return None


class ProcTreeMeter:
    """The CPU time of the process ``pid`` and its descendants, read from the kernel (see the
    module docstring for what it counts and misses).

    Cheap enough to read twice per move: every process of the tree keeps its ``stat`` and its
    threads' ``children`` files open from one reading to the next and reads them again in place
    (a /proc file opened for one process never shows another that reuses its pid: it reads empty,
    and the pid is then opened anew), and a process's thread list is listed again only when its
    thread count changes. At most ``_MAX_OPEN`` files stay open per meter; beyond them files are
    opened at each reading. ``close`` closes them."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._tree: dict[int, _Process] = {}  # pid -> its open files, for the processes of the last reading
        self._open = 0  # files open across the tree
        self._closed = False

    def cpu_ns(self) -> int | None:
        if self._closed:
            return None
        root = self._tree.get(self.pid)
        if root is None:  # the root's stat must open: it is the referee's child, not reaped yet
            try:
                root = self._tree[self.pid] = _Process(self.pid, os.open(f"/proc/{self.pid}/stat", os.O_RDONLY))
            except OSError:
                return None
            self._open += 1
        fields = _stat_fields(_pread(root.stat_fd))  # type: ignore[arg-type]
        total = _process_ns(self.pid, fields)
        if total is None:
            return None
        pending, seen = self._children(root, fields), {self.pid}
        while pending:
            pid = pending.pop()
            if pid in seen:  # only if a pid was reused mid-walk: count each once
                continue
            seen.add(pid)
            process, fields = self._stat(pid)
            ns = _process_ns(pid, fields)
            if ns is not None:  # else it exited between the two reads
                total += ns
                if process is not None:
                    pending += self._children(process, fields)
        if len(self._tree) > len(seen):  # processes that left the tree: their files are closed
            for pid in [p for p in self._tree if p not in seen]:
                self._drop(pid)
        return total

    def close(self) -> None:
        """Close the open /proc files; later readings give None."""
        self._closed = True
        for pid in list(self._tree):
            self._drop(pid)

    def __del__(self) -> None:  # BotProcess.stop closes it; this is for a meter dropped without that
        if not self._closed:
            self.close()

    def _stat(self, pid: int) -> tuple[_Process | None, list[bytes]]:
        """A descendant's entry (made on its first reading; None when its stat cannot be read)
        and its stat fields."""
        process = self._tree.get(pid)
        if process is not None:
            text = _pread(process.stat_fd) if process.stat_fd is not None else _read(f"/proc/{pid}/stat")
            if text:
                return process, _stat_fields(text)
            self._drop(pid)  # that process is gone; the pid may be another's now
        path = f"/proc/{pid}/stat"
        fd = self._open_file(path)
        text = _pread(fd) if fd is not None else _read(path)
        if not text:
            if fd is not None:
                self._close_file(fd)
            return None, []
        process = self._tree[pid] = _Process(pid, fd)
        return process, _stat_fields(text)

    def _children(self, process: _Process, fields: list[bytes]) -> list[int]:
        """The process's live children, through the children file of each of its threads
        (``fields``: of its stat, for its thread count)."""
        count = int(fields[17]) if len(fields) > 17 else -1  # num_threads (field 20)
        if count != process.thread_count or count < 0:
            self._list_threads(process)
            process.thread_count = count
        found: list[int] = []
        fds = process.children_fds
        for tid in process.threads:
            fd = fds.get(tid)
            text = _pread(fd) if fd is not None else _read(f"/proc/{process.pid}/task/{tid}/children")
            if text:
                found += [int(c) for c in text.split()]
        return found

    def _list_threads(self, process: _Process) -> None:
        try:
            process.threads = os.listdir(f"/proc/{process.pid}/task")
        except OSError:
            process.threads = []
        fds = process.children_fds
        for tid in [t for t in fds if t not in process.threads]:
            self._close_file(fds.pop(tid))  # an exited thread's file reads empty forever
        for tid in process.threads:
            if tid not in fds:
                fd = self._open_file(f"/proc/{process.pid}/task/{tid}/children")
                if fd is not None:
                    fds[tid] = fd

    def _open_file(self, path: str) -> int | None:
        """``path`` opened to be kept, within the meter's budget; None when over it or gone."""
        if self._open >= _MAX_OPEN:
            return None
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return None
        self._open += 1
        return fd

    def _close_file(self, fd: int) -> None:
        os.close(fd)
        self._open -= 1

    def _drop(self, pid: int) -> None:
        process = self._tree.pop(pid)
        for fd in [process.stat_fd, *process.children_fds.values()]:
            if fd is not None:
                self._close_file(fd)


class _Process:
    """One process of a metered tree: its open stat file, its threads at the last listing (and
    its thread count then), and their open children files."""

    __slots__ = ("pid", "stat_fd", "threads", "thread_count", "children_fds")

    def __init__(self, pid: int, stat_fd: int | None) -> None:
        self.pid = pid
        self.stat_fd = stat_fd
        self.threads: list[str] = []
        self.thread_count = -1
        self.children_fds: dict[str, int] = {}


def _clock_id(pid: int) -> int:
    return (~pid << 3) | _CPUCLOCK_SCHED


def _process_ns(pid: int, fields: list[bytes]) -> int | None:
    """The process's own CPU time (all its threads) plus its reaped children's (from ``fields``
    of its /proc/<pid>/stat); None if it is gone."""
    try:
        own = time.clock_gettime_ns(_clock_id(pid))
    except OSError:
        return None
    try:
        return own + (int(fields[13]) + int(fields[14])) * _TICK_NS
    except (IndexError, ValueError):
        return own


def _stat_fields(stat: bytes) -> list[bytes]:
    """The fields of a /proc/<pid>/stat after "(comm)" up to num_threads (field 20): state (field 3)
    is at 0, so field n is at n - 3 (the meter reads fields 16, 17 and 20; the last item holds the
    rest of the line, unsplit)."""
    return stat[stat.rfind(b")") + 2:].split(None, 18)


def _pread(fd: int) -> bytes:
    """An open /proc file's contents, read again from the start; empty when its process is gone."""
    try:
        return os.pread(fd, 8192, 0)
    except OSError:
        return b""


def _read(path: str) -> bytes:
    """A small /proc file's contents; empty when it cannot be read (the process is gone)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return b""
    try:
        return os.read(fd, 8192)
    except OSError:
        return b""
    finally:
        os.close(fd)
