"""From a bot package to a bot the referee can start, the same way everywhere (docs/packages.md):
a folder is packed into an archive and a ``.tar.gz`` is read (either is checked with every limit a
server's upload gets, referee/packages/archive.py), unpacked into this machine's cache, its
``bot.toml`` read, its runtime found, its build run once (build.py), and its ``run`` command made
an endpoint: started from the package's root (the built copy), the runtime's folders shown
read-only, its programs first on PATH, its variables set. `referee check PACKAGE`, `referee match
--bot PACKAGE`, `arena compare`, a tournament's ``package``, a queue worker and the web's
submission check all come through here."""

from __future__ import annotations

import asyncio
import io
import os
import posixpath
import shutil
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..bots.endpoint import BotEndpoint
from ..sandbox.settings import SandboxSettings
from .archive import CheckedArchive, check_archive, open_archive, read_archive_file
from .build import Builder, Built
from .cache import UnpackCache
from .manifest import MANIFEST, MAX_MANIFEST_BYTES, Manifest, PackageError, parse_manifest, read_manifest
from .runtimes import Runtime, default_runtimes
from .tree import pack

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")


def is_package(spec: str) -> bool:
    """Whether a ``--bot`` value names a bot package: a folder holding ``bot.toml``, or a
    ``.tar.gz`` file (anything else is a command or an address)."""
    text = spec.strip()
    if text.endswith(ARCHIVE_SUFFIXES) and os.path.isfile(text):
        return True
    return os.path.isdir(text) and os.path.isfile(os.path.join(text, MANIFEST))


def package_archive(path: str | Path) -> tuple[bytes, CheckedArchive]:
    """A package as an archive, checked: a folder packed (tree.pack), a ``.tar.gz`` read;
    PackageError (or ArchiveError) saying why it cannot be one."""
    path = Path(path)
    content = pack(path) if path.is_dir() else read_archive_file(path)
    return content, check_archive(content)


@dataclass(frozen=True)
class PackageBot:
    """A package made a bot: its endpoint, what its bot.toml said, its runtime, and its build
    (None: it has no build step)."""

    endpoint: BotEndpoint
    manifest: Manifest
    runtime: Runtime
    built: Built | None
    folder: Path  # the package's unpacked (source) folder


class Packages:
    """This machine's way from packages to bots: the runtimes offered (default: the built-in
    ones), the unpack cache, the builder under ``settings``."""

    def __init__(self, settings: SandboxSettings, runtimes: Mapping[str, Runtime] | None = None,
                 unpacked: UnpackCache | None = None, builder: Builder | None = None) -> None:
        self.settings = settings
        self.runtimes = dict(runtimes) if runtimes is not None else default_runtimes()
        self.unpacked = unpacked or UnpackCache()
        self.builder = builder or Builder(settings)

    def unpack(self, path: str | Path) -> tuple[Path, CheckedArchive]:
        """``path`` (a folder or a ``.tar.gz``) checked and unpacked here: its folder."""
        content, checked = package_archive(path)
        return self.unpacked.path_for(checked.sha256, lambda: content, str(path)), checked

    async def bot(self, folder: Path, label: str, archive: str | None = None) -> PackageBot:
        """The bot of the package unpacked at ``folder`` (built if it has a build), shown as ``label``."""
        manifest = await asyncio.to_thread(read_manifest, folder)
        runtime = self.runtimes.get(manifest.runtime)
        if runtime is None:
            raise PackageError(f"{MANIFEST}: runtime {manifest.runtime!r} is not offered here (the runtimes: "
                               f"{', '.join(sorted(self.runtimes))}; referee runtimes lists them)")
        if runtime.problem:
            raise PackageError(f"runtime {runtime.name!r} cannot run here: {runtime.problem}")
        built = await self.builder.build(folder, manifest, runtime, label) if manifest.build else None
        root = built.folder if built else folder
        return PackageBot(endpoint(label, manifest, runtime, root, archive), manifest, runtime, built, folder)

    async def bot_from_path(self, path: str) -> PackageBot:
        """The bot of the package at ``path`` (a folder or a ``.tar.gz``), as `referee check` takes it."""
        folder, checked = await asyncio.to_thread(self.unpack, path)
        return await self.bot(folder, path, checked.sha256)

    def bot_sync(self, folder: Path, label: str, archive: str | None = None) -> PackageBot:
        """``bot`` from a thread that runs no event loop (the arena's database thread)."""
        return asyncio.run(self.bot(folder, label, archive))


def endpoint(label: str, manifest: Manifest, runtime: Runtime, root: Path, archive: str | None) -> BotEndpoint:
    """How the referee starts a package's bot: its ``run`` from ``root``, the program looked up in
    the package (a path) or on the runtime's PATH (a name)."""
    program, *arguments = manifest.run
    if "/" in program:
        path = os.path.normpath(os.path.join(root, program))
        if not (path == str(root) or path.startswith(str(root) + os.sep)):
            raise PackageError(f"{MANIFEST}: run's program {program!r} is outside the package")
        if not os.path.isfile(path) or not os.access(path, os.X_OK):
            raise PackageError(f"{MANIFEST}: run's program {program!r} is not an executable file of the package"
                               + (" after its build" if manifest.build else ""))
    else:
        found = shutil.which(program, path=runtime.path_env)
        if found is None:
            raise PackageError(f"{MANIFEST}: run's program {program!r} is not on runtime {runtime.name}'s PATH "
                               f"({runtime.path_env})")
        path = found
    env = {**dict(manifest.env), **dict(runtime.env), "PATH": runtime.path_env}
    return BotEndpoint(spec=label, command=(path, *arguments), cwd=str(root), env=tuple(sorted(env.items())),
                       archive=archive, read_only=runtime.folders)


def manifest_of(content: bytes) -> Manifest:
    """The checked bot.toml of a package archive's bytes, read without unpacking it (the web's
    upload, a tournament file's package); PackageError when it has none or it is wrong."""
    _, tar_bytes = open_archive(content)
    with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:") as tar:
        for member in tar:
            if member.isfile() and posixpath.normpath(member.name) == MANIFEST:
                if member.size > MAX_MANIFEST_BYTES:
                    raise PackageError(f"{MANIFEST} is larger than {MAX_MANIFEST_BYTES // 1024} KiB")
                extracted = tar.extractfile(member)
                assert extracted is not None
                try:
                    return parse_manifest(extracted.read().decode("utf-8"))
                except UnicodeDecodeError:
                    raise PackageError(f"{MANIFEST} is not UTF-8 text") from None
    raise PackageError(f"it has no {MANIFEST} at its root: not a bot package (docs/packages.md)")
