"""The system-call filter of a bot in mode "bwrap": a seccomp program bubblewrap installs before it
runs the bot (``--seccomp FD``), inherited by everything the bot starts, that no process of the
bot can remove. Every call is allowed but the ones below, which a bot playing cards never needs
and which reach the parts of the kernel a sandboxed process has most often broken out through
(Docker's default profile refuses the same ones). Built with libseccomp (through pyseccomp).

A refused call fails with EPERM, as the kernel answers a process without the privilege, so a
program that probes for a feature (io_uring in libuv, for one) falls back as it would there;
``clone3`` fails with ENOSYS, so the C library uses ``clone``, whose flags can be checked.
"""

from __future__ import annotations

import errno
import functools
import os
from typing import Any

# call -> why a bot is refused it; each is refused outright
REFUSED: dict[str, str] = {
    "unshare": "new namespaces: a user namespace of its own opens kernel paths meant for root",
    "setns": "entering other namespaces",
    "mount": "mounts (possible inside a user namespace)",
    "umount2": "unmounts",
    "pivot_root": "a new root",
    "chroot": "a new root",
    "open_tree": "the new mount API",
    "move_mount": "the new mount API",
    "fsopen": "the new mount API",
    "fsconfig": "the new mount API",
    "fsmount": "the new mount API",
    "fspick": "the new mount API",
    "mount_setattr": "the new mount API",
    "keyctl": "the kernel keyring, shared across namespaces",
    "add_key": "the kernel keyring",
    "request_key": "the kernel keyring",
    "bpf": "eBPF programs",
    "perf_event_open": "performance counters (a side channel on other processes)",
    "userfaultfd": "page-fault handling, a common exploit aid",
    "io_uring_setup": "io_uring, a large and often-exploited kernel surface",
    "io_uring_enter": "io_uring",
    "io_uring_register": "io_uring",
    "ptrace": "tracing (its own processes only, but a common exploit aid)",
    "process_vm_readv": "reading another process's memory",
    "process_vm_writev": "writing another process's memory",
    "kcmp": "comparing kernel objects of processes",
    "open_by_handle_at": "opening files by handle, around the mounts it sees",
    "name_to_handle_at": "file handles",
    "kexec_load": "loading a kernel",
    "kexec_file_load": "loading a kernel",
    "init_module": "kernel modules",
    "finit_module": "kernel modules",
    "delete_module": "kernel modules",
    "quotactl": "disk quotas",
    "swapon": "swap",
    "swapoff": "swap",
    "acct": "process accounting",
    "syslog": "the kernel log",
    "lookup_dcookie": "kernel profiling",
    "fanotify_init": "watching the file system",
}
# clone with any of these flags makes a namespace, as unshare does (CLONE_NEWTIME has no bit of
# its own in clone's flags: it shares CSIGNAL's, and clone3 and unshare are refused anyway)
CLONE_NEW_FLAGS = {"CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000,
                   "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
                   "CLONE_NEWNET": 0x40000000}


def _library() -> Any:
    """pyseccomp (libseccomp through ctypes); ImportError/RuntimeError where libseccomp is absent."""
    import pyseccomp

    return pyseccomp


@functools.cache
def program() -> tuple[bytes | None, str | None]:
    """(the filter as a BPF program, None) or (None, why there is none here: one phrase); built
    once a process."""
    try:
        seccomp = _library()
    except (ImportError, RuntimeError, OSError) as exc:
        return None, f"libseccomp is not usable ({exc}): apt-get install libseccomp2"
    try:
        refuse = seccomp.ERRNO(errno.EPERM)
        rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
        for name in REFUSED:
            rules.add_rule(refuse, name)
        for flag in CLONE_NEW_FLAGS.values():
            rules.add_rule(refuse, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
        rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
        fd = os.memfd_create("casino-seccomp-build", os.MFD_CLOEXEC)
        try:
            rules.export_bpf(_Fd(fd))
            os.lseek(fd, 0, os.SEEK_SET)
            return _read_all(fd), None
        finally:
            os.close(fd)
    except (OSError, RuntimeError, ValueError) as exc:
        return None, f"libseccomp could not build the filter: {exc}"


class _Fd:
    """What libseccomp's export wants: something with a ``fileno``."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def fileno(self) -> int:
        return self._fd


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def program_fd(code: bytes) -> int:
    """A file descriptor to read ``code`` from, from its start (bwrap's ``--seccomp FD``); the
    caller passes it to the child and closes it."""
    fd = os.memfd_create("casino-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, code)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
