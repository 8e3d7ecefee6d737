"""The bubblewrap command line for one bot: a pure function of a ``BwrapPlan`` (no file system, no
environment read here), so every option is unit-tested and nothing else knows about bwrap.

What it asks of bwrap (docs/sandbox.md): new PID, network, IPC, UTS and cgroup namespaces (no
network at all: only a loopback device of its own); ``--die-with-parent`` and ``--new-session``;
no capabilities; a clean environment; the system's folders, a short list of /etc entries and the
bot's own paths read-only, each at its host path; private tmpfs /tmp and /dev/shm of bounded
size; its socket folder, and only it, writable at ``SOCKET_MOUNT``; a system-call filter
(``--seccomp``, referee/sandbox/seccomp.py) where one can be built; its status as JSON
(``--json-status-fd``), which says whether the sandbox was set up and the command run: a bwrap
that ends without an "exit-code" failed its set-up, the platform's fault, not the bot's.

Run by root, bwrap makes the namespaces without a user namespace and the command inside starts
with ``setpriv``, which takes the bot's own uid and gid and drops every capability, bounding set
included (bwrap keeps only CAP_SETUID, CAP_SETGID and CAP_SETPCAP for that one step). Run by
another user, bwrap makes a user namespace too (``--unshare-user --disable-userns``): the bot
keeps that user's uid on the host and cannot make namespaces of its own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

SOCKET_MOUNT = "/run/casino"  # where a bot finds its socket folder inside its sandbox
HOSTNAME = "bot"
ROOT_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")  # kept only for setpriv, which drops them


@dataclass(frozen=True)
class BwrapPlan:
    """Everything one bot's sandbox is made of (paths are absolute and normalised)."""

    bwrap: str
    command: tuple[str, ...]  # what runs inside (prlimit, setpriv when root, then the bot)
    cwd: str
    env: tuple[tuple[str, str], ...]
    system: tuple[tuple[str, str | None], ...]  # (/usr, None), (/lib, "usr/lib") for a symbolic link
    etc: tuple[str, ...]  # /etc entries, each read-only
    read_only: tuple[str, ...]  # the bot's folder, runtime and extra paths (none inside another)
    socket_folder: str
    tmp_bytes: int
    as_root: bool  # the referee is root: no user namespace, setpriv takes the bot's uid
    seccomp_fd: int | None = None  # where bwrap reads the bot's system-call filter (referee/sandbox/seccomp.py)
    status_fd: int | None = None  # where bwrap writes its JSON status: "exit-code" only once the command ran
    writable: tuple[str, ...] = ()  # bound read-write over what is shown (a package's build folder)
    network: bool = False  # the host's network (a package's build, when the operator allows it); never a bot's


def _visible(path: str, mounted: list[str]) -> bool:
    return any(path == m or path.startswith(m.rstrip("/") + "/") for m in mounted)


def _parents(path: str) -> list[str]:
    """``/a/b/c`` -> ``/a``, ``/a/b`` (not ``/`` or the path itself)."""
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def bwrap_argv(plan: BwrapPlan) -> list[str]:
    """The argv that runs ``plan.command`` in its sandbox."""
    args = [plan.bwrap, "--unshare-pid", *([] if plan.network else ["--unshare-net"]), "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try"]
    if not plan.as_root:
        args += ["--unshare-user", "--disable-userns"]
    args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if plan.seccomp_fd is not None:
        args += ["--seccomp", str(plan.seccomp_fd)]
    if plan.status_fd is not None:
        args += ["--json-status-fd", str(plan.status_fd)]
    if plan.as_root:
        for cap in ROOT_CAPS:
            args += ["--cap-add", cap]
    args += ["--hostname", HOSTNAME, "--clearenv"]
    for name, value in plan.env:
        args += ["--setenv", name, value]

    # Folders inside host mounts exist; anything else (on the sandbox's own root, or on its
    # private /tmp, which a bot folder may be below) is made, readable by the bot (0755).
    mounted = [path for path, _ in plan.system]
    empty = ["/tmp", "/dev/shm"]  # tmpfs mounts: they exist, what is below them does not
    made: list[str] = []

    def exists(folder: str) -> bool:
        below_empty = any(folder.startswith(e + "/") for e in empty)
        return folder in made or folder in empty or (_visible(folder, mounted) and not below_empty)

    def make(folder: str) -> None:
        for parent in [*_parents(folder), folder]:
            if parent != "/" and not exists(parent):
                args.extend(["--perms", "0755", "--dir", parent])
                made.append(parent)

    for path, link in plan.system:
        args += ["--symlink", link, path] if link is not None else ["--ro-bind", path, path]
    if plan.etc:
        make("/etc")
        for entry in plan.etc:
            args += ["--ro-bind", entry, entry]
        mounted += list(plan.etc)
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += ["--perms", "1777", "--size", str(plan.tmp_bytes), "--tmpfs", "/tmp"]
    args += ["--perms", "1777", "--size", str(plan.tmp_bytes), "--tmpfs", "/dev/shm"]
    mounted += ["/proc", "/dev"]
    for path in plan.read_only:
        make(os.path.dirname(path))
        args += ["--ro-bind", path, path]
        mounted.append(path)
    for path in plan.writable:  # after the read-only ones: over them
        make(os.path.dirname(path))
        args += ["--bind", path, path]
        mounted.append(path)
    make(os.path.dirname(SOCKET_MOUNT))
    args += ["--bind", plan.socket_folder, SOCKET_MOUNT]
    mounted.append(SOCKET_MOUNT)
    make(plan.cwd)  # when not shown: an empty folder; its relative paths still reach the shown ones below it
    args += ["--chdir", plan.cwd, "--", *plan.command]
    return args


def setpriv_argv(setpriv: str, uid: int, as_root: bool) -> list[str]:
    """The setpriv prefix of a bot's command: as root, its own uid and gid, no groups and no
    capabilities at all; otherwise only no-new-privileges. Both: killed when its parent dies."""
    if as_root:
        return [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--bounding-set=-all",
                "--inh-caps=-all", "--no-new-privs", "--pdeathsig=KILL", "--"]
    return [setpriv, "--no-new-privs", "--pdeathsig=KILL", "--"]


def prlimit_argv(prlimit: str, limits: dict[str, int]) -> list[str]:
    """The prlimit prefix that sets each of ``limits`` (prlimit's resource names: nofile, fsize,
    nproc, data, core, cpu) as both soft and hard limit."""
    return [prlimit, *(f"--{name}={value}:{value}" for name, value in sorted(limits.items())), "--"]
