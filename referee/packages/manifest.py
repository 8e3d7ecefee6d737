"""``bot.toml``, the file at a bot package's root that says how it is built and run (docs/packages.md):

```toml
runtime = "python"              # required: a runtime the operator offers (`referee runtimes`)
run = "python bot.py"           # required: started from the package's root, the runtime's programs first on PATH
build = "pip install --no-index --find-links wheels -r requirements.txt --target deps"   # optional, by sh -c
```

Optional too: ``format = 1`` (this contract's version: 1, the only one), ``name`` (what the
package calls its bot) and ``env`` (a table of variables for its build and its run). Any other key
is refused with a "did you mean" line, as the tournament file's are; every problem is one line."""

from __future__ import annotations

import difflib
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import RefereeError, one_line, quoted

MANIFEST = "bot.toml"
FORMAT = 1  # the version of this contract
MAX_MANIFEST_BYTES = 64 * 1024
MAX_COMMAND_CHARS = 4096
KEYS = ("format", "runtime", "run", "build", "name", "env")
_RUNTIME_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
RESERVED_ENV = ("PATH", "HOME", "TMPDIR", "CASINO_BOT_ADDRESS")  # the sandbox's and the runtime's to set


class PackageError(RefereeError):
    """A bot package that cannot be used: its manifest, its files, its runtime or its build (one
    line per problem in ``problems``; the commands exit 2)."""

    def __init__(self, *problems: str) -> None:
        super().__init__(*problems)
        self.problems: tuple[str, ...] = problems

    def __str__(self) -> str:
        return "; ".join(self.problems)


@dataclass(frozen=True)
class Manifest:
    """A package's ``bot.toml``, checked."""

    runtime: str
    run: tuple[str, ...]  # argv
    build: str | None = None  # a shell command line
    name: str | None = None
    env: tuple[tuple[str, str], ...] = field(default=())
    format: int = FORMAT


def read_manifest(folder: Path) -> Manifest:
    """The ``bot.toml`` at ``folder``'s root; PackageError with every problem found."""
    path = folder / MANIFEST
    try:
        if not path.is_file() or path.is_symlink():
            raise PackageError(f"{folder} is not a bot package: it has no {MANIFEST} file at its root "
                               "(docs/packages.md)")
        if path.stat().st_size > MAX_MANIFEST_BYTES:
            raise PackageError(f"{MANIFEST} is larger than {MAX_MANIFEST_BYTES // 1024} KiB")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PackageError(f"cannot read {MANIFEST}: {exc}") from None
    return parse_manifest(text)


def parse_manifest(text: str) -> Manifest:
    """A ``bot.toml``'s text, checked (see the module docstring)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PackageError(f"{MANIFEST} is not TOML: {one_line(str(exc))}") from None
    problems = [f"{MANIFEST}: unknown key {quoted(key)}{_did_you_mean(key)}" for key in data if key not in KEYS]
    fmt = data.get("format", FORMAT)
    if fmt != FORMAT or isinstance(fmt, bool):
        problems.append(f"{MANIFEST}: format must be {FORMAT} (the only version of bot.toml), not {fmt!r}")
    runtime = _string(data, "runtime", problems, required=True)
    if runtime is not None and not _RUNTIME_NAME.fullmatch(runtime):
        problems.append(f"{MANIFEST}: runtime must be a runtime's name (a-z 0-9 _ . -), not {quoted(runtime)}")
    run_text = _string(data, "run", problems, required=True)
    run: tuple[str, ...] = ()
    if run_text is not None:
        try:
            run = tuple(shlex.split(run_text))
        except ValueError as exc:
            problems.append(f"{MANIFEST}: run is not a command line: {exc}")
        if run_text.strip() and not run and not any("run" in p for p in problems):
            problems.append(f"{MANIFEST}: run is empty")
    build = _string(data, "build", problems)
    name = _string(data, "name", problems)
    env: dict[str, str] = {}
    if "env" in data:
        if not isinstance(data["env"], dict):
            problems.append(f"{MANIFEST}: env must be a table of strings, e.g. env = {{ LEVEL = \"3\" }}")
        else:
            for key, value in data["env"].items():
                if not _ENV_NAME.fullmatch(key) or key in RESERVED_ENV or key.startswith("CASINO_"):
                    problems.append(f"{MANIFEST}: env {quoted(key)} is not a variable a package may set "
                                    f"(names A-Z a-z 0-9 _, not {', '.join(RESERVED_ENV)} or CASINO_*)")
                elif not isinstance(value, str) or "\0" in value or len(value) > MAX_COMMAND_CHARS:
                    problems.append(f"{MANIFEST}: env {key} must be a string of at most {MAX_COMMAND_CHARS} characters")
                else:
                    env[key] = value
    if problems:
        raise PackageError(*problems)
    assert runtime is not None
    return Manifest(runtime=runtime, run=run, build=build, name=name, env=tuple(sorted(env.items())), format=FORMAT)


def _string(data: dict[str, Any], key: str, problems: list[str], required: bool = False) -> str | None:
    if key not in data:
        if required:
            problems.append(f"{MANIFEST}: {key} is missing (see docs/packages.md)")
        return None
    value = data[key]
    if not isinstance(value, str) or not value.strip():
        problems.append(f"{MANIFEST}: {key} must be a non-empty string, not {value!r}"[:200])
        return None
    if len(value) > MAX_COMMAND_CHARS or "\0" in value:
        problems.append(f"{MANIFEST}: {key} must be at most {MAX_COMMAND_CHARS} characters, without NUL")
        return None
    return value.strip()


def _did_you_mean(key: str) -> str:
    close = difflib.get_close_matches(key, KEYS, n=1)
    return f' (did you mean "{close[0]}"?)' if close else f" (the keys: {', '.join(KEYS)})"
