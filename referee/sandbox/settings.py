"""The sandbox's settings in one place: every limit with its default, checked when made.

The same settings come from the tournament file's ``[sandbox]`` table (``from_table``), from the
``referee`` command's flags, or from the defaults; docs/sandbox.md describes each.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError

MODES = ("auto", "bwrap", "limits", "none")
PASS_ENV_VARIABLE = "CASINO_SANDBOX_PASS_ENV"  # names (comma-separated) the operator lets through
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
MIB = 1 << 20


class SandboxSettingsError(UsageError):
    """Bad sandbox settings: one line per problem (``errors``), each naming the setting."""

    def __init__(self, *errors: str) -> None:
        super().__init__(*errors)
        self.errors: tuple[str, ...] = errors

    def __str__(self) -> str:
        return "\n".join(self.errors)


# (low, high) of every numeric setting: outside it is a typo or a setting that cannot work
# (a Python gRPC bot needs about 8 threads and 40 MiB to start).
RANGES: dict[str, tuple[float, float]] = {
    "memory_mib": (32, 1 << 20),
    "processes": (8, 1 << 16),
    "cpus": (0.01, 1024),
    "open_files": (16, 1 << 20),
    "file_size_mib": (1, 1 << 20),
    "tmp_mib": (1, 1 << 20),
    "log_cap_mib": (0.0625, 1 << 20),
    "uid_first": (1000, 2**32 - 2),
    "uid_count": (1, 1 << 24),
    "build_memory_mib": (32, 1 << 20),
    "build_processes": (8, 1 << 16),
    "build_cpus": (0.01, 1024),
    "build_time_s": (1, 86_400),
    "build_log_mib": (0.0625, 1 << 20),
    "build_size_mib": (1, 1 << 20),
    "build_tmp_mib": (1, 1 << 20),
}
FLOAT_SETTINGS = ("cpus", "log_cap_mib", "build_cpus", "build_log_mib")
PATH_SETTINGS = ("read_only", "private", "build_sources")


def pass_env_from_environment() -> tuple[str, ...]:
    """Names in CASINO_SANDBOX_PASS_ENV (the operator's environment): variables of the referee's
    environment every bot also gets (added to ``pass_env``), e.g. a marker to find bot processes by."""
    text = os.environ.get(PASS_ENV_VARIABLE, "")
    return tuple(name for name in (part.strip() for part in text.split(",")) if _ENV_NAME.fullmatch(name))


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


@dataclass(frozen=True)
class SandboxSettings:
    """How every bot process is confined (docs/sandbox.md). ``mode``: "auto" (bubblewrap where it
    works, else "limits" with a one-line warning), "bwrap" (bubblewrap or refuse), "limits"
    (own uid, rlimits, cgroups, clean environment, no namespaces), "none" (no sandbox)."""

    mode: str = "auto"
    memory_mib: int = 512  # the bot's processes together (cgroup), else each one's data (RLIMIT_DATA)
    processes: int = 128  # processes and threads together (pids cgroup), else RLIMIT_NPROC of its uid
    cpus: float = 1.0  # CPU bandwidth in cores (cpu cgroup quota); not limited without a cpu cgroup
    open_files: int = 1024  # RLIMIT_NOFILE
    file_size_mib: int = 64  # RLIMIT_FSIZE: the largest file it may write
    tmp_mib: int = 64  # its private /tmp (and /dev/shm), each a tmpfs of this size
    log_cap_mib: float = 4.0  # of its stdout and stderr kept in its log; the rest is discarded
    read_only: tuple[str, ...] = ()  # more host paths it may read (e.g. a runtime outside its folder)
    # host paths no bot is ever shown: no folder holding one, nothing inside one but a bot's own
    # folder (the arena adds its database, bot logs and archive cache; referee/sandbox/view.py)
    private: tuple[str, ...] = ()
    pass_env: tuple[str, ...] = ()  # names of the referee's environment variables it also gets
    uid_first: int = 800_000  # the uids bots run as when the referee is root: uid_first ...
    uid_count: int = 10_000  # ... uid_first + uid_count - 1, one per running bot
    # a bot package's build (referee/packages/build.py): once per package version, in the same
    # sandbox as its bot with its folder writable, and limits of its own (a compiler needs more)
    build_memory_mib: int = 2048
    build_processes: int = 512
    build_cpus: float = 2.0
    build_time_s: int = 600  # wall time: then it is stopped, and fails
    build_log_mib: float = 1.0  # of its output kept (the owner sees its end)
    build_size_mib: int = 1024  # the package's folder after the build, at most (and the largest file)
    build_tmp_mib: int = 1024  # its private /tmp
    build_network: bool = False  # the host's network for builds (pip or npm from the internet); never for bots
    build_sources: tuple[str, ...] = ()  # host folders builds may read: wheels, npm tarballs (CASINO_BUILD_SOURCES)

    def __post_init__(self) -> None:
        errors = self.problems()
        if errors:
            raise SandboxSettingsError(*errors)

    def problems(self) -> list[str]:
        """One line per bad setting (empty when all are good)."""
        errors = []
        if self.mode not in MODES:
            errors.append(f"sandbox mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        for name, (low, high) in RANGES.items():
            value = getattr(self, name)
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if name in FLOAT_SETTINGS:
                ok = number and math.isfinite(value) and low <= value <= high
            else:
                ok = number and isinstance(value, int) and low <= value <= high
            if not ok:
                kind = "a number" if name in FLOAT_SETTINGS else "a whole number"
                errors.append(f"sandbox {name} must be {kind} from {_number(low)} to {_number(high)}, not {value!r}")
        if not isinstance(self.build_network, bool):
            errors.append(f"sandbox build_network must be true or false, not {self.build_network!r}")
        for name in PATH_SETTINGS:
            paths = getattr(self, name)
            if not isinstance(paths, tuple) or not all(isinstance(p, str) for p in paths):
                errors.append(f"sandbox {name} must be a list of paths")
                continue
            for path in paths:
                if not os.path.isabs(path) or "\0" in path or not path.isprintable():
                    errors.append(f"sandbox {name} paths must be absolute, not {path!r}")
        if not isinstance(self.pass_env, tuple) or not all(
                isinstance(n, str) and _ENV_NAME.fullmatch(n) for n in self.pass_env):
            errors.append(f"sandbox pass_env must be environment variable names, not {self.pass_env!r}")
        return errors

    def for_build(self) -> SandboxSettings:
        """The settings a package's build runs under: these, with the build's own limits, and its
        sources among what it may read."""
        return dataclasses.replace(self, memory_mib=self.build_memory_mib, processes=self.build_processes,
                                   cpus=self.build_cpus, tmp_mib=self.build_tmp_mib, log_cap_mib=self.build_log_mib,
                                   file_size_mib=max(self.file_size_mib, self.build_size_mib),
                                   read_only=(*self.read_only, *self.build_sources))

    @property
    def log_cap_bytes(self) -> int:
        return int(self.log_cap_mib * MIB)

    def replace(self, **changes: Any) -> SandboxSettings:
        """A copy with ``changes`` (None values ignored: a flag that was not given)."""
        given = {k: v for k, v in changes.items() if v is not None}
        return dataclasses.replace(self, **given) if given else self

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The settings' names: the keys of a ``[sandbox]`` table."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_table(cls, table: Mapping[str, Any], where: str = "[sandbox]") -> SandboxSettings:
        """The settings of a TOML ``[sandbox]`` table; SandboxSettingsError lists every problem,
        each starting with ``where`` and the key."""
        known = cls.keys()
        errors = [f"{where} {key}: unknown setting (the settings: {', '.join(known)})"
                  for key in table if key not in known]
        values: dict[str, Any] = {}
        for key, value in table.items():
            if key not in known:
                continue
            if key in (*PATH_SETTINGS, "pass_env"):
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    errors.append(f"{where} {key}: must be a list of strings")
                    continue
                value = tuple(value)
            if key in FLOAT_SETTINGS and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            values[key] = value
        if errors:
            raise SandboxSettingsError(*errors)
        try:
            return cls(**values)
        except SandboxSettingsError as exc:
            raise SandboxSettingsError(*(f"{where} {line.removeprefix('sandbox ')}" for line in exc.errors)) from None
