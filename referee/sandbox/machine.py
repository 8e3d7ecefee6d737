"""What this machine offers a sandbox, found once per process: the tools (bwrap, setpriv,
prlimit), whether bubblewrap can really make a bot's sandbox here (it is tried, with the same
command line a bot gets), and where cgroups can be made."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from .bwrap import BwrapPlan, bwrap_argv, prlimit_argv, setpriv_argv
from .cgroups import CgroupTree, find_tree
from .seccomp import program, program_fd
from .view import DEFAULT_PATH, etc_entries, system_entries, under_system

PROBE_UID = 65534  # the uid bwrap's trial runs as, when the referee is root ("nobody")
PROBE_TIMEOUT_S = 10
# a trial past its deadline is made again, with a fresh one: the deadline is wall-clock time, and
# a process stopped while bwrap ran (SIGSTOP, a paused VM, a machine swapping) finds it passed on
# waking, however fast bwrap was; the answer holds for the whole process (a worker's every game),
# so one such pause must not turn "auto" into "limits" for good
PROBE_TRIES = 2


@dataclass(frozen=True)
class Machine:
    """The machine as a sandbox sees it; a problem is None when the thing works."""

    as_root: bool
    tools: dict[str, str | None]  # bwrap, setpriv, prlimit, sh: absolute paths, None when missing
    bwrap_problem: str | None
    limits_problem: str | None  # for "limits": setpriv and prlimit, in the system's folders
    cgroups: CgroupTree | None
    cgroup_problem: str  # "" when memory, pids and cpu controllers are all there
    seccomp_problem: str | None = None  # why mode "bwrap" has no system-call filter here (None: it has)


TOOLS_PATH_ENV = "CASINO_SANDBOX_TOOLS_PATH"  # where bwrap, setpriv, prlimit and sh are looked for (tests hide one)


def _tool(name: str) -> str | None:
    found = shutil.which(name, path=os.environ.get(TOOLS_PATH_ENV) or f"{DEFAULT_PATH}:/usr/sbin:/sbin")
    return os.path.realpath(found) if found else None


def _limits_problem(tools: dict[str, str | None]) -> str | None:
    for name in ("setpriv", "prlimit"):
        path = tools[name]
        if path is None:
            return f"no {name} (util-linux) on PATH"
        if not under_system(path):
            return f"{name} is {path}, outside the system's folders a sandbox shows"
    return None


def system_sandbox_argv(tools: dict[str, str | None], as_root: bool, command: list[str], folder: str,
                        seccomp_fd: int | None = None) -> list[str]:
    """bwrap's argv that runs ``command`` (a program of the system's folders) as a bot's sandbox
    runs one, with nothing of a bot's own shown: prlimit, and as root setpriv to the probe's uid
    (``folder``, its socket folder, is then given to that uid). For the probe and the benchmarks."""
    inner = prlimit_argv(tools["prlimit"] or "prlimit", {"core": 0})
    if as_root:
        inner += setpriv_argv(tools["setpriv"] or "setpriv", PROBE_UID, True)
        os.chown(folder, PROBE_UID, PROBE_UID)
    plan = BwrapPlan(bwrap=tools["bwrap"] or "bwrap", command=(*inner, *command), cwd="/",
                     env=(("PATH", DEFAULT_PATH),), system=tuple(system_entries()), etc=tuple(etc_entries()),
                     read_only=(), socket_folder=folder, tmp_bytes=1 << 20, as_root=as_root, seccomp_fd=seccomp_fd)
    return bwrap_argv(plan)


def _try_bwrap(tools: dict[str, str | None], as_root: bool, seccomp: bool = False) -> str | None:
    """Make a sandbox as a bot's is made and run ``true`` in it (with ``seccomp``, under the
    bots' system-call filter); None when that worked, else why not."""
    bwrap, true = tools["bwrap"], _tool("true")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed (apt-get install bubblewrap)"
    if true is None or not under_system(true):
        return "no true(1) in the system's folders to try bubblewrap with"
    problem = _limits_problem(tools)
    if problem:
        return problem
    with tempfile.TemporaryDirectory(prefix="casino-probe-") as folder:
        code = program()[0] if seccomp else None
        fd = program_fd(code) if code is not None else None
        try:
            argv = system_sandbox_argv(tools, as_root, [true], folder, fd)
            for tries_left in reversed(range(PROBE_TRIES)):
                if fd is not None:
                    os.lseek(fd, 0, os.SEEK_SET)  # bwrap reads the filter from the shared offset
                try:
                    done = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                                          env={"PATH": DEFAULT_PATH}, check=False,
                                          pass_fds=(fd,) if fd is not None else ())
                    break
                except subprocess.TimeoutExpired:
                    if not tries_left:
                        raise
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bwrap could not be run: {exc}"
        finally:
            if fd is not None:
                os.close(fd)
    if done.returncode != 0:
        said = " ".join(done.stderr.split())[:300] or f"status {done.returncode}"
        return f"{'bwrap --seccomp' if seccomp else 'bwrap'} fails here: {said}"
    return None


@functools.cache
def probe() -> Machine:
    """This machine, looked at once per process (bwrap is tried: about 10 ms)."""
    as_root = os.geteuid() == 0
    tools = {name: _tool(name) for name in ("bwrap", "setpriv", "prlimit", "sh")}
    cgroups, cgroup_problem = find_tree()
    bwrap_problem = _try_bwrap(tools, as_root)
    seccomp_problem = program()[1]
    if bwrap_problem is None and seccomp_problem is None:
        seccomp_problem = _try_bwrap(tools, as_root, seccomp=True)
    return Machine(as_root=as_root, tools=tools, bwrap_problem=bwrap_problem,
                   limits_problem=_limits_problem(tools), cgroups=cgroups, cgroup_problem=cgroup_problem,
                   seccomp_problem=seccomp_problem)
