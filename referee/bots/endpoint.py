"""Bot endpoints: an address of a running bot, a command the referee starts, or (trusted code
only) a Python SDK bot that plays in the referee's own process (BotEndpoint)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import EndpointError

_HOST_PORT = re.compile(r"^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.\-]+):(\d{1,5})$")
INPROCESS_PREFIX = "inprocess:"
# what every place that runs strangers' bots answers to an in-process one (its code would run
# unsandboxed in that process): the web's submissions, ladders open to them, the Referee service
INPROCESS_REFUSED = ("in-process bots (inprocess:) run unsandboxed in the referee's own process: "
                     "only for trusted code, refused here")



@dataclass(frozen=True, slots=True)
class BotEndpoint:
    """Where a bot is: ``address`` (a gRPC target) or ``command`` (argv to start). ``archive``: the
    sha256 of the archive its files were unpacked from, when they were (the arena's bot archives);
    the referee only records it, so a game record says which code played. ``read_only``: what its
    sandbox shows it besides its folder (a package's runtime)."""

    spec: str
    address: str | None = None
    command: tuple[str, ...] = ()
    cwd: str | None = None
    env: tuple[tuple[str, str], ...] = field(default=())
    archive: str | None = None
    # host paths a sandbox also shows it, read-only: its runtime's folders (a bot package's,
    # referee/packages/); each at its own path
    read_only: tuple[str, ...] = field(default=())
    # an in-process bot (``inprocess:PATH.py[:CLASS]``): the file's absolute path and the class
    # named ("" for the file's one CasinoBot subclass); it plays in the referee's process
    inprocess: str | None = None
    inprocess_class: str = ""

    @property
    def is_process(self) -> bool:
        """A command the referee starts as a process of its own (not an address, not in-process)."""
        return not self.address and not self.inprocess

    @staticmethod
    def is_inprocess(spec: str) -> bool:
        """True for an ``inprocess:`` spec."""
        return spec.strip().startswith(INPROCESS_PREFIX)

    @staticmethod
    def is_address(spec: str) -> bool:
        """True for ``unix:...`` and ``host:port`` specs (what a client may name remotely)."""
        text = spec.strip()
        return text.startswith("unix:") or bool(_HOST_PORT.match(text))

    @classmethod
    def parse(cls, spec: str, *, cwd: str | None = None, env: dict[str, str] | None = None,
              trusted: bool = False) -> "BotEndpoint":
        """``unix:/path`` or ``host:port`` is an address; ``cmd:...`` or anything else is a command;
        ``inprocess:PATH.py[:CLASS]`` is an in-process bot, accepted only when the caller says its
        code is ``trusted`` (the command line, a tournament file), refused everywhere else.

        A command's program must exist (on PATH or as a path) and be an executable file, so typos
        and a script without its execute bit fail before a match starts, not as start-up forfeits.
        """
        text = spec.strip()
        if not text:
            raise EndpointError("empty bot endpoint")
        if text.startswith(INPROCESS_PREFIX):
            if not trusted:
                raise EndpointError(f"bot {_shown(spec)}: {INPROCESS_REFUSED}")
            return cls._inprocess(spec, text[len(INPROCESS_PREFIX):].strip(), cwd, env)
        if text.startswith("unix:"):
            if len(text) <= len("unix:"):
                raise EndpointError(f"bad bot address {spec!r}: unix: needs a socket path")
            return cls(spec=spec, address=text)
        if text.startswith("cmd:"):
            text = text[len("cmd:"):].strip()
        elif (address := _HOST_PORT.match(text)) is not None:
            port = int(address.group(2))
            if not 0 < port < 65536:
                raise EndpointError(f"bad bot address {spec!r}: port must be 1..65535")
            return cls(spec=spec, address=text)
        try:
            argv = tuple(shlex.split(text))
        except ValueError as exc:
            raise EndpointError(f"bad bot command {spec!r}: {exc}") from None
        if not argv:
            raise EndpointError(f"bad bot command {spec!r}")
        program = argv[0]
        base = Path(cwd) if cwd else Path.cwd()
        if os.sep in program:
            path = base / program
            try:
                exists, is_dir = path.exists(), path.is_dir()
            except OSError as exc:  # e.g. a folder on the way that we may not enter
                raise EndpointError(f"bad bot command {spec!r}: cannot look at {_shown(program)}: "
                                    f"{exc.strerror or exc}") from None
            if not exists:
                raise EndpointError(f"unknown bot {spec!r}: {_shown(program)} does not exist")
            if is_dir:
                raise EndpointError(f"bad bot command {spec!r}: {_shown(program)} is a directory, not a program")
            if not os.access(path, os.X_OK):  # root too: X_OK needs an execute bit on a file
                raise EndpointError(f"bad bot command {spec!r}: {_shown(program)} is not executable "
                                    "(chmod +x it, or start it through its interpreter, e.g. python3 bot.py)")
        elif shutil.which(program) is None:
            raise EndpointError(f"unknown bot {spec!r}: no program {program!r} on PATH")
        return cls(spec=spec, command=argv, cwd=cwd, env=tuple(sorted((env or {}).items())))

    @classmethod
    def _inprocess(cls, spec: str, text: str, cwd: str | None, env: dict[str, str] | None) -> "BotEndpoint":
        """``PATH.py[:CLASS]``: the file must exist and CLASS be a Python name; the class itself
        is looked up when the bot is loaded (referee/bots/inprocess.py)."""
        path, _, name = text.partition(".py:") if ".py:" in text else (text, "", "")
        if name or text.endswith(".py:"):
            path += ".py"
        if not path.endswith(".py"):
            raise EndpointError(f"bad bot {_shown(spec)}: inprocess: names a Python file, PATH.py[:CLASS]")
        if name and not name.isidentifier():
            raise EndpointError(f"bad bot {_shown(spec)}: {_shown(name)} is not a class name")
        full = (Path(cwd) if cwd else Path.cwd()) / path
        if not full.is_file():
            raise EndpointError(f"unknown bot {_shown(spec)}: {_shown(path)} is not a file")
        return cls(spec=spec, cwd=cwd, env=tuple(sorted((env or {}).items())), inprocess=str(full.resolve()),
                   inprocess_class=name)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (for a job queue to carry it); ``from_dict`` reads it back."""
        data = {"spec": self.spec, "address": self.address, "command": list(self.command), "cwd": self.cwd,
                "env": dict(self.env), "archive": self.archive, "read_only": list(self.read_only)}
        if self.inprocess:
            data.update(inprocess=self.inprocess, inprocess_class=self.inprocess_class)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "BotEndpoint":
        """Inverse of ``to_dict``; EndpointError on anything else. The program is not looked up
        again: whoever made the endpoint checked it, and the machine that starts it reports a
        missing one as a start-up failure."""
        try:
            address, command, env = data["address"], data["command"], data["env"]
            inprocess = data.get("inprocess")
            if inprocess is not None:  # trusted: whoever wrote the dict made it from a trusted spec
                if not isinstance(inprocess, str) or address is not None or command:
                    raise EndpointError("an in-process bot endpoint has a file, no address or command")
                return cls(spec=str(data["spec"]), cwd=data["cwd"], env=tuple(sorted(env.items())),
                           inprocess=inprocess, inprocess_class=str(data.get("inprocess_class", "")))
            if (address is None) == (not command):
                raise EndpointError("a bot endpoint is an address or a command, not both or neither")
            if not all(isinstance(a, str) for a in command) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
                raise EndpointError("a bot endpoint's command and env hold strings")
            archive = data.get("archive")  # absent in endpoints written before archives
            if archive is not None and not isinstance(archive, str):
                raise EndpointError("a bot endpoint's archive is a sha256 string or null")
            read_only = data.get("read_only", [])  # absent in endpoints written before packages
            if not isinstance(read_only, list) or not all(isinstance(p, str) and os.path.isabs(p) for p in read_only):
                raise EndpointError("a bot endpoint's read_only holds absolute paths")
            return cls(spec=str(data["spec"]), address=None if address is None else str(address),
                       command=tuple(command), cwd=None if data["cwd"] is None else str(data["cwd"]),
                       env=tuple(sorted(env.items())), archive=archive, read_only=tuple(read_only))
        except (KeyError, TypeError, AttributeError) as exc:
            raise EndpointError(f"malformed bot endpoint: {exc!r}") from None


def _shown(text: str) -> str:
    """A path as it is when printable, else its repr: an error message stays one line."""
    return text if text.isprintable() else repr(text)

