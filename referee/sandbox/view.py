"""What a bot can see in its sandbox: its program, its own folder, its runtime, and the system's
read-only folders; nothing else of the host (docs/sandbox.md, "What a bot sees").

- The bot's folder: its working directory, the endpoint's ``cwd`` (a package's or an archive's
  root, a ``cwd`` of the tournament file) or, without one, the folder it is started in (the
  referee's own working directory). Never a folder its arguments name: a command's arguments are
  the bot author's to write (``python ../other/secret.py`` shows nothing more).
- Its runtime: every folder its program lives in outside the system's folders, following its
  symbolic links (a virtual environment's ``python`` leads to the interpreter it was made from);
  for a virtual environment also the source folders its editable installs point to (``pip
  install -e``), so a venv's own packages import.
- The system: ``/usr`` and the ``/bin``, ``/sbin``, ``/lib*`` links or folders, and a short list
  of ``/etc`` entries an interpreter needs (``ETC_ENTRIES``); never shadow, ssh, or package
  manager credentials.
- The settings' ``read_only`` paths, and the endpoint's (a bot package's runtime, referee/packages/).

No path shown may hold a private path (``shown_problem``): the referee's logs and sockets, the
arena's database, logs and archive cache, the settings' ``private`` paths; nor lie inside one,
but for the bot's own folder (a stored archive's folder lies inside the archive cache).
"""

from __future__ import annotations

import ast
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..bots.endpoint import BotEndpoint

SYSTEM_ROOTS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_ENTRIES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "timezone", "nsswitch.conf",
               "passwd", "group", "hosts", "host.conf", "gai.conf", "protocols", "services", "mime.types", "ssl",
               "ca-certificates", "os-release", "debian_version", "python3", "python3.11", "python3.12",
               "python3.13", "nodejs", "java-17-openjdk", "java-21-openjdk")
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
_MAX_LINKS = 40  # symbolic links followed from a program
_MAX_SITE_FILES = 500  # .pth and editable-finder files read from one virtual environment
_MAX_SITE_BYTES = 256 << 10


@dataclass(frozen=True)
class BotView:
    """A bot's command and the host paths it may read (each shown at the same path inside)."""

    argv: tuple[str, ...]  # argv[0] resolved to an absolute path (the sandbox's PATH may not find it)
    cwd: str  # its working directory (a host path, the same inside): its own folder
    runtime: tuple[str, ...]
    extra: tuple[str, ...]
    path_env: str  # the PATH it gets unless its spec sets one: its program's folder first

    @property
    def read_only(self) -> tuple[str, ...]:
        """Every path it may read besides the system's: no path twice, none inside another."""
        return minimal_paths([self.cwd, *self.runtime, *self.extra])

    @property
    def bot_folder(self) -> str:
        """Its own folder: its working directory."""
        return self.cwd


def inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or below it (both absolute and normalised)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def under_system(path: str) -> bool:
    return any(inside(path, root) for root in SYSTEM_ROOTS) or inside(path, "/etc")


def minimal_paths(paths: Iterable[str]) -> tuple[str, ...]:
    """``paths`` normalised and sorted, without duplicates, paths below another, or paths the
    system folders already show."""
    clean = sorted({os.path.normpath(p) for p in paths if p})
    kept: list[str] = []
    for path in clean:
        if under_system(path) or any(inside(path, k) for k in kept):
            continue
        kept.append(path)
    return tuple(kept)


def resolve_program(program: str, cwd: str, env_path: str) -> str:
    """The absolute path of the program a command starts, as the referee would run it (a path is
    taken from ``cwd``, a name looked up on ``env_path``); FileNotFoundError when there is none."""
    if os.sep in program:
        path = os.path.normpath(os.path.join(cwd, program))
    else:
        found = shutil.which(program, path=env_path)
        if found is None:
            raise FileNotFoundError(f"no program {program!r} on PATH")
        path = os.path.normpath(os.path.abspath(found))
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise FileNotFoundError(f"{path} is not an executable file")
    return path


def runtime_folders(program: str) -> list[str]:
    """The folders a program needs outside the system's, following its symbolic links: for each
    file on the way, its installation (the folder above ``bin``, else its own folder)."""
    found: list[str] = []
    path = program
    for _ in range(_MAX_LINKS):
        folder = os.path.dirname(path)
        if not under_system(path):
            prefix = os.path.dirname(folder) if os.path.basename(folder) == "bin" else folder
            for place in dict.fromkeys((prefix, os.path.realpath(prefix))):  # a linked venv: both
                if place not in found and place != "/" and not under_system(place):
                    found.append(place)
            if os.path.isfile(os.path.join(prefix, "pyvenv.cfg")):
                found += [p for p in venv_sources(prefix) if p not in found]
        if not os.path.islink(path):
            break
        path = os.path.normpath(os.path.join(folder, os.readlink(path)))
    return found


def venv_sources(venv: str) -> list[str]:
    """The folders a virtual environment's packages point to outside it: directories named in its
    ``.pth`` files and the package folders of setuptools' editable finders (``MAPPING``)."""
    found: list[str] = []
    sites = sorted({p.resolve() for p in Path(venv).glob("lib*/python3*/site-packages")})  # lib64 -> lib
    files = [f for site in sites for f in sorted(site.iterdir())
             if f.suffix == ".pth" or (f.name.startswith("__editable__") and f.name.endswith("_finder.py"))]
    for file in files[:_MAX_SITE_FILES]:
        try:
            text = file.read_bytes()[:_MAX_SITE_BYTES].decode("utf-8", errors="replace")
        except OSError:
            continue
        if file.suffix == ".pth":
            for line in text.splitlines():
                line = line.strip()
                if line and not line.startswith(("#", "import ", "import\t")):
                    path = os.path.normpath(os.path.join(file.parent, line))
                    if os.path.isdir(path):
                        found.append(path)
        else:
            found += [p for p in _editable_mapping(text) if os.path.isdir(p)]
    return [p for i, p in enumerate(found) if not inside(p, venv) and p not in found[:i]]


def _editable_mapping(source: str) -> list[str]:
    """The paths in ``MAPPING = {...}`` of a setuptools editable finder (read, never run)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    paths: list[str] = []
    for node in tree.body:
        target, value = None, None
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            target, value = node.target.id, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        if target == "MAPPING" and value is not None:
            try:
                mapping = ast.literal_eval(value)
            except ValueError:
                continue
            if isinstance(mapping, dict):
                paths += [os.path.normpath(v) for v in mapping.values() if isinstance(v, str) and os.path.isabs(v)]
    return paths


def bot_view(endpoint: BotEndpoint, extra: Iterable[str], environ: Mapping[str, str]) -> BotView:
    """What ``endpoint``'s bot sees (reads the file system: programs, links, a venv's files);
    FileNotFoundError when its program cannot be found."""
    cwd = os.path.normpath(os.path.join(os.getcwd(), endpoint.cwd)) if endpoint.cwd else os.getcwd()
    env = dict(endpoint.env)
    program = resolve_program(endpoint.command[0], cwd, env.get("PATH", environ.get("PATH", DEFAULT_PATH)))
    argv = (program, *endpoint.command[1:])
    runtime = runtime_folders(program)
    program_dir = os.path.dirname(program)
    path_env = DEFAULT_PATH if under_system(program_dir) else f"{program_dir}:{DEFAULT_PATH}"
    return BotView(argv=argv, cwd=cwd, runtime=tuple(runtime),
                   extra=tuple(os.path.normpath(p) for p in (*extra, *endpoint.read_only)), path_env=path_env)


def system_entries() -> list[tuple[str, str | None]]:
    """The system folders there are here: (path, the target when it is a symbolic link)."""
    entries: list[tuple[str, str | None]] = []
    for root in SYSTEM_ROOTS:
        if os.path.islink(root):
            entries.append((root, os.readlink(root)))
        elif os.path.isdir(root):
            entries.append((root, None))
    return entries


def etc_entries(network: bool = False) -> list[str]:
    """The /etc entries of ``ETC_ENTRIES`` there are here (with the network, its resolver's too)."""
    names = (*ETC_ENTRIES, "resolv.conf") if network else ETC_ENTRIES
    return [f"/etc/{name}" for name in names if os.path.lexists(f"/etc/{name}")]


def shown_problem(view: BotView, private: Iterable[tuple[str, str]]) -> str | None:
    """Why ``view`` may not be shown to a bot, or None: a path shown is ``/``, holds one of the
    ``private`` paths ((what it is, its path), e.g. ("the arena's database", "/srv/cup.db")), or
    lies inside one (the bot's own folder may: a stored archive's folder is inside the cache).
    Paths are compared as given and with their symbolic links resolved."""
    secrets = [(what, _forms(path)) for what, path in private]
    own = _forms(view.cwd)
    for path in view.read_only:
        if path == "/":
            return "the bot's folder would be / (all of the host): give it a folder of its own (cwd)"
        forms = _forms(path)
        for what, secret in secrets:
            if any(inside(s, f) for s in secret for f in forms):
                return (f"{path} holds {what} ({min(secret)}): give the bot a folder of its own (cwd), not one "
                        "with the tournament's files")
            if not forms & own and any(inside(f, s) for s in secret for f in forms):
                return f"{path} is inside {what} ({min(secret)}): a bot is shown no part of it but its own folder"
    return None


def _forms(path: str) -> set[str]:
    """A path absolute and normalised, and with its symbolic links resolved."""
    return {os.path.normpath(os.path.abspath(path)), os.path.realpath(path)}
