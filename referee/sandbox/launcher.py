"""The sandbox launcher and the one place a mode is chosen: ``make_launcher(settings)`` gives the
Launcher every match and tournament starts its bots with, and says, once per process and in one
line, what it could not have (bubblewrap, cgroups, a uid of the bots' own) or that it is off."""

from __future__ import annotations

import functools
import os
import pwd
import sys
from collections.abc import Callable
from pathlib import Path

from ..bots.endpoint import BotEndpoint
from ..bots.launcher import BotProcess, Launcher, LocalLauncher
from ..errors import UsageError
from .machine import Machine, probe
from .process import SandboxedProcess, finish_abandoned, limit_lines, runtime_problem, uid_problem
from .settings import SandboxSettings
from .view import bot_view, etc_entries, shown_problem, system_entries

BWRAP_HINT = "sh scripts/setup-system.sh sandbox"  # how this project installs it
MAX_NOTES = 1000  # limit lines kept for `referee check` (a long tournament notes the first ones)
_SAID: set[str] = set()


class SandboxUnavailableError(UsageError):
    """The sandbox asked for cannot be made on this machine (one line: what is missing)."""


def warn_once(line: str) -> None:
    """Print ``line`` as the referee's warning on stderr, once per process."""
    if line not in _SAID:
        _SAID.add(line)
        sys.stderr.write(f"referee: warning: {line}\n")
        sys.stderr.flush()


class SandboxLauncher:
    """Starts each bot in a sandbox of its own (mode "bwrap" or "limits"; docs/sandbox.md)."""

    def __init__(self, settings: SandboxSettings, mode: str, machine: Machine) -> None:
        self.settings = settings
        self.mode = mode
        self.machine = machine
        self.notes: list[tuple[str, str]] = []  # (log file, what was limited) of the bots it started

    async def launch(self, endpoint: BotEndpoint, address: str, log_path: Path, writable: tuple[str, ...] = (),
                     network: bool = False) -> BotProcess:
        finish_abandoned()
        process = SandboxedProcess(endpoint, address, log_path, self.settings, self.mode, self.machine, self.note,
                                   writable, network)
        try:
            await process.start()
        except BaseException:
            try:
                await process.cleanup()
            except BaseException:  # interrupted in turn: killed now, its group given back later
                process.kill_now()
                raise
            raise
        return process

    def note(self, log_name: str, line: str) -> None:
        if len(self.notes) < MAX_NOTES:
            self.notes.append((log_name, line))

    def limit_lines(self) -> list[str]:
        """Each limit with how it is enforced here ("memory 512 MiB (cgroup)")."""
        return limit_lines(self.settings, self.mode, self.cgroup_limits())

    def cgroup_limits(self) -> dict[str, str]:
        """Which limits a bot's cgroup would hold here."""
        tree = self.machine.cgroups
        if tree is None:
            return {}
        have = {"memory": "memory", "pids": "processes", "cpu": "cpus"}
        return {limit: "cgroup" for controller, limit in have.items() if controller in tree.bases}

    def view_problem(self, endpoint: BotEndpoint) -> str | None:
        """Why a bot of ``endpoint`` could not be started here for what it would be shown (its
        folder holds a private path, its program is missing, its uid could not read its files), or
        None; the referee's own logs and sockets are checked at each start (not known before)."""
        if not endpoint.is_process:
            return None
        try:
            view = bot_view(endpoint, self.settings.read_only, os.environ)
        except OSError as exc:
            return str(exc)
        if problem := shown_problem(view, [("a private path", path) for path in self.settings.private]):
            return problem
        if self.machine.as_root and (problem := runtime_problem(view, self.mode) or uid_problem(view, self.mode)):
            return problem + ("" if self.mode == "bwrap" else f" (or install bubblewrap, {BWRAP_HINT}: its "
                              "namespaces show a bot its folders without the host's on the way)")
        return None

    def describe(self, endpoint: BotEndpoint) -> list[str]:
        """What a bot of ``endpoint`` gets: its mode, uid, limits and what it may read (for
        ``referee check``)."""
        uid = (f"a uid of its own from {self.settings.uid_first}" if self.machine.as_root
               else f"uid {os.getuid()} ({_user()}) like the referee")
        if self.mode == "bwrap":
            calls = ("system calls filtered (seccomp)" if self.machine.seccomp_problem is None
                     else f"no system-call filter ({self.machine.seccomp_problem})")
            lines = [(f"sandbox: bwrap: own PID, network, IPC, UTS namespaces (no network), {uid}, no capabilities, "
                      f"{calls}, clean environment")]
        else:
            lines = [(f"sandbox: limits: {uid}, clean environment; host files and network as that uid sees them "
                      "(no namespaces)")]
        lines.append("limits: " + ", ".join(self.limit_lines()))
        if self.mode == "bwrap" and endpoint.is_process:
            try:
                view = bot_view(endpoint, self.settings.read_only, os.environ)
            except OSError as exc:
                return [*lines, f"cannot start it: {exc}"]
            system = [path for path, _ in system_entries()] + ["/etc (" + str(len(etc_entries())) + " entries)"]
            lines.append("read-only: system " + " ".join(system))
            lines.append(f"read-only: its folder {view.bot_folder} (its working directory)")
            for path in view.read_only:
                if path != view.bot_folder and path in view.runtime:
                    lines.append(f"read-only: its runtime {path}")
            for path in view.read_only:
                if path in view.extra and path not in view.runtime:
                    kind = "its runtime" if path in endpoint.read_only else "extra"
                    lines.append(f"read-only: {kind} {path}")
            lines.append("writable: its socket folder, /tmp and /dev/shm (private)")
        return lines


def _user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def _missing_cgroups(machine: Machine) -> str:
    """What the rlimits stand in for, when cgroups (or some controllers) are missing."""
    if machine.cgroups is None:
        return f"no cgroups ({machine.cgroup_problem}): memory and processes limited by rlimits, CPU not limited"
    if machine.cgroup_problem:
        return f"cgroups incomplete ({machine.cgroup_problem}): rlimits stand in"
    return ""


def make_launcher(settings: SandboxSettings, machine: Machine | None = None,
                  warn: Callable[[str], None] = warn_once) -> Launcher:
    """The launcher for ``settings`` on this machine; SandboxUnavailableError when its mode cannot
    be had here (mode "auto" falls back from bwrap to limits instead, saying so)."""
    if settings.mode == "none":
        warn("sandbox off (mode \"none\"): bots run as this user with the referee's environment, files and "
             "network, and no limits")
        return LocalLauncher(settings.log_cap_bytes)
    machine = machine or probe()
    for path in settings.read_only:
        if not os.path.exists(path):
            raise UsageError(f"sandbox read_only path {path} does not exist")
    if machine.limits_problem:
        raise SandboxUnavailableError(f"sandbox mode {settings.mode!r} cannot run here: {machine.limits_problem} "
                                      "(or use mode \"none\")")
    mode = settings.mode
    notes = []
    if mode in ("auto", "bwrap"):
        if machine.bwrap_problem is None:
            mode = "bwrap"
        elif mode == "bwrap":
            raise SandboxUnavailableError(f"sandbox mode \"bwrap\" cannot run here: {machine.bwrap_problem}")
        else:
            mode = "limits"
            notes.append(f"no bubblewrap sandbox ({machine.bwrap_problem}): bots run in mode \"limits\" "
                         "(no namespaces: they see the host's files and network)")
    if mode == "bwrap" and machine.seccomp_problem:
        notes.append(f"no system-call filter ({machine.seccomp_problem})")
    if mode == "limits" and not machine.as_root:
        notes.append(f"mode \"limits\" without root: bots run as {_user()}, not a uid of their own")
    cgroups = _missing_cgroups(machine)
    if cgroups:
        notes.append(cgroups)
    if notes:
        warn("sandbox: " + "; ".join(notes))
    return SandboxLauncher(settings, mode, machine)


@functools.cache
def default_launcher() -> Launcher:
    """The launcher of the default settings (what a match gets when its caller names none)."""
    return make_launcher(SandboxSettings())
