"""Runtimes: what a bot package's ``runtime`` names (docs/packages.md). A runtime is the host
folders shown read-only to its bots and builds, the folders put first on their PATH, the
variables set for them, and what it offers (for people: versions, packages). The operator names
them; three work out of the box:

- ``python``: the interpreter the referee runs with (its virtual environment, where ``grpcio``
  and ``protobuf`` import) and the SDK (``casino_bot``) on ``PYTHONPATH``, with the package's
  ``deps/`` folder (``pip install --target deps`` in a build);
- ``node``: Node.js with ``@grpc/grpc-js`` and ``@grpc/proto-loader`` (``NODE_PATH``, installed
  by ``npm ci`` in ``runtimes/node/``) and the proto files (``CASINO_PROTO_PATH``);
- ``native``: a linux-x86_64 program the package carries or builds, with the system's shared
  libraries and tools (a compiler where the system has one).

A tournament file's ``[runtimes.NAME]`` tables add runtimes or replace these (``runtimes_from_table``).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import UsageError, quoted
from ..sandbox.view import DEFAULT_PATH, runtime_folders
from .manifest import RESERVED_ENV

CHECKOUT = Path(__file__).resolve().parents[2]  # referee/packages/runtimes.py -> the project's folder
SDK_FOLDER = CHECKOUT / "sample_bots" / "python"  # holds casino_bot, the Python SDK (also installed with the project)
# the default runtimes' own files: runtimes/ of the checkout, or where an installation put them (the
# container image: /srv/runtimes); node/ holds package.json, package-lock.json, node_modules after npm ci
RUNTIMES_HOME = Path(os.environ.get("CASINO_RUNTIMES_HOME") or CHECKOUT / "runtimes")
NODE_FOLDER = RUNTIMES_HOME / "node"
PROTO_FOLDER = CHECKOUT / "proto" if (CHECKOUT / "proto").is_dir() else NODE_FOLDER / "proto"
NPM_CI_TIMEOUT_S = 300
PROBE_TIMEOUT_S = 5
RUNTIME_KEYS = ("description", "folders", "path", "env", "offers")
_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


@dataclass(frozen=True)
class Runtime:
    """One runtime (see the module docstring). ``problem``: why it cannot run bots here (None: it can)."""

    name: str
    description: str
    folders: tuple[str, ...] = ()
    path: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = field(default=())
    offers: tuple[str, ...] = ()
    problem: str | None = None

    @property
    def path_env(self) -> str:
        """The PATH its bots and builds get: its folders first, then the system's."""
        return ":".join([*self.path, DEFAULT_PATH])

    def fingerprint(self) -> str:
        """What a build made with it depends on: its definition (a changed runtime builds anew)."""
        text = json.dumps([self.name, self.folders, self.path, self.env], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly (a queue job carries the operator's runtimes to its workers)."""
        return {"name": self.name, "description": self.description, "folders": list(self.folders),
                "path": list(self.path), "env": dict(self.env), "offers": list(self.offers), "problem": self.problem}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Runtime:
        return cls(name=str(data["name"]), description=str(data["description"]),
                   folders=tuple(map(str, data["folders"])), path=tuple(map(str, data["path"])),
                   env=tuple(sorted((str(k), str(v)) for k, v in data["env"].items())),
                   offers=tuple(map(str, data["offers"])), problem=data.get("problem"))


def python_runtime() -> Runtime:
    """The referee's own interpreter with the SDK: ``run = "python bot.py"`` and ``from casino_bot
    import ...`` work as they do at home in the project's virtual environment."""
    interpreter = os.path.abspath(sys.executable)
    installed = importlib.util.find_spec("casino_bot") is not None  # with the project, in its environment
    problem = None if installed or (SDK_FOLDER / "casino_bot" / "__init__.py").is_file() else \
        "the Python SDK (casino_bot) is not installed: pip install the project (it installs the SDK too)"
    folders = [*runtime_folders(interpreter), *([] if installed else [str(SDK_FOLDER)])]
    import_path = "deps" if installed else f"{SDK_FOLDER}:deps"
    offers = [f"Python {platform.python_version()}", *_versions("grpcio", "protobuf"), "casino_bot (the SDK)"]
    return Runtime("python", "Python with gRPC and the casino_bot SDK; a deps/ folder of the package is on its path",
                   folders=tuple(dict.fromkeys(folders)), path=(os.path.dirname(interpreter),),
                   env=(("PYTHONDONTWRITEBYTECODE", "1"), ("PYTHONPATH", import_path),
                        ("PYTHONUNBUFFERED", "1")),
                   offers=tuple(offers), problem=problem)


def node_runtime() -> Runtime:
    """Node.js (the system's, or the first ``node`` on PATH) with the gRPC packages of
    ``runtimes/node`` and the proto files."""
    node = shutil.which("node", path=f"{DEFAULT_PATH}:{os.environ.get('PATH', '')}")
    modules = NODE_FOLDER / "node_modules"
    problem = None
    if node is None:
        problem = "node is not installed (apt-get install nodejs)"
    elif not (modules / ".package-lock.json").is_file():
        problem = f"its packages are not installed: run npm ci in {NODE_FOLDER} (referee runtimes --install)"
    folders = [*(runtime_folders(os.path.realpath(node)) if node else []), str(NODE_FOLDER), str(PROTO_FOLDER)]
    path = (os.path.dirname(node),) if node and os.path.dirname(node) not in DEFAULT_PATH.split(":") else ()
    offers = [f"@grpc/{name} {_node_package_version(modules / '@grpc' / name)}" for name in ("grpc-js", "proto-loader")]
    return Runtime("node", "Node.js with @grpc/grpc-js, @grpc/proto-loader and the proto files (CASINO_PROTO_PATH)",
                   folders=tuple(dict.fromkeys(folders)), path=path,
                   env=(("CASINO_PROTO_PATH", str(PROTO_FOLDER)), ("NODE_PATH", str(modules))),
                   offers=tuple(offers), problem=problem)


def native_runtime() -> Runtime:
    """A linux-x86_64 program of the package's, with the system's shared libraries and tools."""
    return Runtime("native", f"a {platform.system().lower()}-{platform.machine()} program the package carries or "
                   "builds, with the system's shared libraries and tools (a C++ compiler and gRPC where installed)")


def default_runtimes() -> dict[str, Runtime]:
    return {r.name: r for r in (python_runtime(), node_runtime(), native_runtime())}


def runtimes_from_table(table: Any, folder: Path, where: str = "[runtimes]") -> dict[str, Runtime]:
    """The defaults, with a tournament file's ``[runtimes.NAME]`` tables added or put in their
    place; UsageError with a line per problem (relative folders are from ``folder``)."""
    found = default_runtimes()
    if table is None:
        return found
    problems: list[str] = []
    if not isinstance(table, dict):
        raise UsageError(f"{where} must be a table of runtimes ([runtimes.NAME])")
    for name, spec in table.items():
        at = f"{where[:-1]}.{name}]" if where.endswith("]") else f"{where}.{name}"
        if not _NAME.fullmatch(name):
            problems.append(f"{at}: a runtime's name is a-z 0-9 _ . - (up to 64), not {quoted(name)}")
            continue
        if not isinstance(spec, dict):
            problems.append(f"{at} must be a table")
            continue
        problems += [f"{at} {key}: unknown key (the keys: {', '.join(RUNTIME_KEYS)})" for key in spec
                     if key not in RUNTIME_KEYS]
        base = found.get(name, Runtime(name, f"the operator's runtime {name}"))
        runtime = replace(base, problem=None, offers=() if "offers" in spec or name not in found else base.offers)
        if "description" in spec:
            if isinstance(spec["description"], str) and spec["description"].strip():
                runtime = replace(runtime, description=spec["description"].strip())
            else:
                problems.append(f"{at} description: must be a string")
        for key in ("folders", "path", "offers"):
            if key not in spec:
                continue
            values = spec[key]
            if not isinstance(values, list) or not all(isinstance(v, str) and v and "\0" not in v for v in values):
                problems.append(f"{at} {key}: must be a list of strings")
                continue
            if key != "offers":
                values = [os.path.normpath(folder / Path(v).expanduser()) for v in values]
                missing = [v for v in values if not os.path.isdir(v)]
                if missing:
                    problems.append(f"{at} {key}: {missing[0]} is not a folder here")
                    continue
            runtime = replace(runtime, **{key: tuple(values)})
        if "env" in spec:
            env = spec["env"]
            if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
                problems.append(f"{at} env: must be a table of strings")
            elif bad := [k for k in env if not _ENV_NAME.fullmatch(k) or k in RESERVED_ENV]:
                problems.append(f"{at} env: {quoted(bad[0])} is not a variable a runtime may set")
            else:
                runtime = replace(runtime, env=tuple(sorted(env.items())))
        found[name] = runtime
    if problems:
        raise UsageError("\n".join(problems))
    return found


def describe(runtimes: Mapping[str, Runtime]) -> list[str]:
    """What ``referee runtimes`` prints: each runtime, what it offers (versions probed where it is
    one of the defaults), what it shows and its PATH, or why it cannot run here."""
    lines: list[str] = []
    for runtime in runtimes.values():
        lines.append(f"{runtime.name}: {runtime.description}")
        offers = offered(runtime)
        if offers:
            lines.append(f"  offers: {', '.join(offers)}")
        if runtime.folders:
            lines.append(f"  read-only: {' '.join(runtime.folders)}")
        lines.append(f"  PATH: {runtime.path_env}")
        if runtime.env:
            lines.append("  env: " + " ".join(f"{k}={v}" for k, v in runtime.env))
        if runtime.problem:
            lines.append(f"  cannot run here: {runtime.problem}")
    return lines


@functools.lru_cache(maxsize=32)
def offered(runtime: Runtime) -> tuple[str, ...]:
    """What a runtime offers, for people: the versions of a default runtime's tools probed here
    (Node.js's, the C++ compiler's), then its ``offers``; what `referee runtimes` (text and JSON)
    and the web's /submit page list. Probed once per runtime in a process."""
    return (*_probed(runtime), *runtime.offers)


def install_node_packages() -> str | None:
    """``npm ci`` in the node runtime's folder unless its packages are there (under a lock: several
    processes may ask at once); None when they are, else why they cannot be."""
    import fcntl

    npm = shutil.which("npm")
    if npm is None:
        return "npm is not on PATH"
    with open(NODE_FOLDER / ".npm-ci.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (NODE_FOLDER / "node_modules" / ".package-lock.json").is_file():  # npm writes it last
            return None
        try:
            done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--silent"], cwd=NODE_FOLDER,
                                  capture_output=True, text=True, timeout=NPM_CI_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            return f"npm ci took more than {NPM_CI_TIMEOUT_S} s"
        if done.returncode != 0:
            return f"npm ci failed: {(done.stderr.strip().splitlines() or ['status ' + str(done.returncode)])[-1]}"
    return None


def _versions(*names: str) -> list[str]:
    found = []
    for name in names:
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def _node_package_version(folder: Path) -> str:
    try:
        return str(json.loads((folder / "package.json").read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError):
        return "(not installed)"


def _probed(runtime: Runtime) -> list[str]:
    """The versions of a default runtime's tools here (for ``describe``)."""
    if runtime.folders and runtime.name == "node" and not str(NODE_FOLDER) in runtime.folders:
        return []  # the operator's node: what its offers say
    if runtime.name == "node":
        return [v for v in [_first_line(["node", "--version"], "Node.js ")] if v]
    if runtime.name == "native":
        # pkgconf walks grpc++'s whole tree of requirements (abseil's hundred .pc files) for its
        # version: a second of CPU, past PROBE_TIMEOUT_S on a loaded machine, so that one run
        # listed gRPC and the next did not; its own package is enough (else pkg-config's way)
        grpc = (_first_line(["pkg-config", "--modversion", "--maximum-traverse-depth=1", "grpc++"], "gRPC C++ ")
                or _first_line(["pkg-config", "--modversion", "grpc++"], "gRPC C++ "))
        return [v for v in [_first_line(["g++", "--version"]), grpc] if v]
    return []


def _first_line(argv: list[str], prefix: str = "") -> str | None:
    program = shutil.which(argv[0], path=DEFAULT_PATH)
    if program is None:
        return None
    try:
        done = subprocess.run([program, *argv[1:]], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    first = (done.stdout.strip().splitlines() or [""])[0]
    return f"{prefix}{first}" if done.returncode == 0 and first else None
