"""A bot package's build step (``build`` in its bot.toml, docs/packages.md): run once per package
version and runtime on each machine, in the same sandbox as its bot (its own uid, no network
unless the operator allows it, the runtime's folders and tools), with the limits of its own that
``SandboxSettings.for_build`` gives (memory, processes, CPU, a private /tmp, its output kept up to
``build_log_mib``), a wall-time cap (``build_time_s``) and a size cap on the package's folder
after it (``build_size_mib``, watched while it runs). Its folder is a copy of the package's,
writable by the build's uid; once the build succeeds it is made read-only and kept by a key of
what it depends on (the package's tree, the runtime, the build command and settings), so each
machine builds a package once: a second check, a tournament, a queue worker find it built.

A failed, too-long or too-large build is a ``BuildFailed`` with its log's end (for the package's
owner); nothing of it is left running (the sandbox's stop ends every process of its group), and
its copy is removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import stat
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..bots.endpoint import BotEndpoint
from ..bots.launcher import Launcher
from ..sandbox.process import give_tree
from ..sandbox.settings import SandboxSettings
from .cache import ROOT_MODE, TREE_MODE, cache_base
from .manifest import Manifest, PackageError
from .runtimes import Runtime
from .tree import open_up, remove_tree, tree_digest

BUILD_CACHE_ENV = "CASINO_BUILD_CACHE"
BUILD_SUBDIR = Path("royal-casino-arena") / "builds"
SOURCES_ENV = "CASINO_BUILD_SOURCES"  # the operator's package sources, ':'-separated, for build commands
SHELL = "/bin/sh"
LOG_TAIL_BYTES = 4096  # of a failed build's log, shown to the package's owner
SIZE_POLL_S = 0.5  # how often the folder's size is looked at while the build runs
LOCK_POLL_S = 0.2


def default_build_root() -> Path:
    """``$CASINO_BUILD_CACHE``, else ``$XDG_CACHE_HOME/royal-casino-arena/builds``, else
    ``~/.cache/royal-casino-arena/builds``."""
    if explicit := os.environ.get(BUILD_CACHE_ENV):
        return Path(explicit).expanduser()
    return cache_base() / BUILD_SUBDIR


class BuildFailed(PackageError):
    """A build that did not succeed: why (one line) and the end of its log (the owner's)."""

    def __init__(self, reason: str, log_tail: str = "") -> None:
        super().__init__(f"build failed: {reason}")
        self.reason, self.log_tail = reason, log_tail


@dataclass(frozen=True)
class Built:
    """A package built (or found built): its folder, read-only, and how it came to be."""

    folder: Path
    cached: bool
    seconds: float  # the build's own time (0 when it was found built)


class Builder:
    """Builds packages on this machine under ``settings`` (their ``for_build`` limits) into
    ``root`` (default: ``default_build_root``); ``launcher`` is made from the build settings when
    not given (tests and the bench pass their own)."""

    def __init__(self, settings: SandboxSettings, root: Path | None = None, launcher: Launcher | None = None) -> None:
        self.settings = settings
        self.root = Path(os.path.abspath(root if root is not None else default_build_root()))
        self._launcher = launcher

    @property
    def launcher(self) -> Launcher:
        if self._launcher is None:
            from ..sandbox import make_launcher

            self._launcher = make_launcher(self.settings.for_build())
        return self._launcher

    def key(self, source: Path, manifest: Manifest, runtime: Runtime) -> str:
        """What a build depends on, hashed: the package's tree, its runtime, its build command and
        environment, and the build settings that change what it can make."""
        s = self.settings
        parts = [tree_digest(source), runtime.fingerprint(), manifest.build, manifest.env, s.build_network,
                 s.build_sources]
        return hashlib.sha256(json.dumps(parts, sort_keys=True, default=list).encode()).hexdigest()

    async def build(self, source: Path, manifest: Manifest, runtime: Runtime, label: str) -> Built:
        """``source`` (a package's unpacked folder, read-only) built by its ``manifest.build`` in
        ``runtime``, or found built; BuildFailed when it fails, PackageError when it cannot start."""
        assert manifest.build is not None
        key = await asyncio.to_thread(self.key, source, manifest, runtime)
        self._make_root()
        folder = self.root / key
        async with self._locked(key):
            if await asyncio.to_thread(self._intact, key):
                return Built(folder, cached=True, seconds=0.0)
            if folder.exists():  # a copy that no longer matches its digest: built again
                remove_tree(folder)
            return await self._build(source, manifest, runtime, label, key)

    async def _build(self, source: Path, manifest: Manifest, runtime: Runtime, label: str, key: str) -> Built:
        work = Path(tempfile.mkdtemp(prefix=f".{key[:16]}.", dir=self.root))
        try:
            work.chmod(0o711)
            package = work / "package"
            sockets = work / "sockets"
            await asyncio.to_thread(_writable_copy, source, package)
            sockets.mkdir(mode=0o700)
            log_path = work / "build.log"
            endpoint = BotEndpoint(
                spec=f"the build of {label}", command=(SHELL, "-c", manifest.build), cwd=str(package),
                env=tuple(sorted({**dict(manifest.env), **dict(runtime.env), "PATH": runtime.path_env,
                                  SOURCES_ENV: ":".join(self.settings.build_sources)}.items())),
                read_only=runtime.folders)
            started = time.monotonic()
            failure = await self._run(endpoint, f"unix:{sockets / 'build.sock'}", log_path, package)
            seconds = time.monotonic() - started
            if failure is not None:
                raise BuildFailed(failure, _tail(log_path))
            await asyncio.to_thread(self._keep, package, key)
            return Built(self.root / key, cached=False, seconds=seconds)
        finally:
            await asyncio.to_thread(remove_tree, work)

    async def _run(self, endpoint: BotEndpoint, address: str, log_path: Path, package: Path) -> str | None:
        """Run the build; why it failed, or None."""
        s = self.settings
        limit = s.build_size_mib << 20
        try:
            process = await self.launcher.launch(endpoint, address, log_path, writable=(str(package),),
                                                 network=s.build_network)
        except OSError as exc:
            raise PackageError(f"the build cannot start: {exc}") from None
        assert process.process is not None
        try:
            deadline = time.monotonic() + s.build_time_s
            while process.process.returncode is None:
                if time.monotonic() >= deadline:
                    # a fork bomb's survivors may outlive it: the limit it met is said too
                    return f"it ran longer than {s.build_time_s} s (build_time_s) and was stopped{process.limit_note()}"
                if await asyncio.to_thread(_size, package, limit) > limit:
                    return f"its folder grew past {s.build_size_mib} MiB (build_size_mib) and it was stopped"
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(process.process.wait(), SIZE_POLL_S)
        finally:
            await process.stop()
        if process.process.returncode != 0:
            return process.exit_description
        if await asyncio.to_thread(_size, package, limit) > limit:
            return f"its folder is larger than {s.build_size_mib} MiB (build_size_mib)"
        return None

    def remove(self, source: Path, manifest: Manifest, runtime: Runtime) -> None:
        """Delete the build of ``source`` here, if there is one (a rejected submission's: nothing
        will play it, and a build may be far larger than its package)."""
        if manifest.build is None:
            return
        key = self.key(source, manifest, runtime)
        with contextlib.suppress(OSError):
            (self.root / f"{key}.tree").unlink()
        if (self.root / key).is_dir():
            aside = self.root / f".{key[:16]}.removed.{uuid.uuid4().hex[:8]}"
            with contextlib.suppress(OSError):
                os.rename(self.root / key, aside)
                remove_tree(aside)

    def _keep(self, package: Path, key: str) -> None:
        """The built folder made the referee's again and read-only for all, its digest written,
        and moved into place (rename: no one sees half of it)."""
        if os.geteuid() == 0:
            give_tree(package, os.getuid())
        for top, dirs, files in os.walk(package):  # what the build left unwritable: ours to open up
            for name in (*dirs, *files):
                with contextlib.suppress(OSError):
                    path = os.path.join(top, name)
                    if not os.path.islink(path):
                        os.chmod(path, os.lstat(path).st_mode | stat.S_IRUSR | stat.S_IWUSR |
                                 (stat.S_IXUSR if os.path.isdir(path) else 0))
        open_up(package)
        _write_private(self.root / f"{key}.tree", tree_digest(package))
        os.rename(package, self.root / key)

    def _intact(self, key: str) -> bool:
        folder, digest = self.root / key, self.root / f"{key}.tree"
        try:
            return folder.is_dir() and tree_digest(folder) == digest.read_text(encoding="utf-8")
        except OSError:
            return False

    def _make_root(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            info = self.root.stat()
            if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) != ROOT_MODE:
                self.root.chmod(ROOT_MODE)
        except OSError as exc:
            raise PackageError(f"cannot make the build cache {self.root}: {exc.strerror or exc} "
                               f"(set {BUILD_CACHE_ENV} to another folder)") from None

    @contextlib.asynccontextmanager
    async def _locked(self, key: str):  # type: ignore[no-untyped-def]
        """One build of a key at a time on this machine (two workers, one package): the second
        waits for the first's (bounded by a build's time) and finds it built."""
        fd = os.open(self.root / f"{key}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            deadline = time.monotonic() + self.settings.build_time_s + 60
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise PackageError("another process has been building this package for longer than a "
                                           "build may take") from None
                    await asyncio.sleep(LOCK_POLL_S)
            yield
        finally:
            os.close(fd)


def _writable_copy(source: Path, target: Path) -> None:
    """A copy of the package's folder its build may write: folders 0755, files 0644 (0755 programs)."""
    shutil.copytree(source, target, symlinks=True)
    for top, dirs, files in os.walk(target):
        for name in dirs:
            os.chmod(os.path.join(top, name), 0o755)
        for name in files:
            path = os.path.join(top, name)
            if not os.path.islink(path):
                os.chmod(path, 0o755 if os.lstat(path).st_mode & 0o100 else 0o644)
    target.chmod(0o755)


def _size(folder: Path, stop_over: int) -> int:
    """The bytes of ``folder``'s files (links not followed), counted up to just past ``stop_over``."""
    total = 0
    for top, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(top, name)).st_blocks * 512
            if total > stop_over:
                return total
    return total


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as file:
            file.seek(max(0, file.seek(0, 2) - LOG_TAIL_BYTES))
            return file.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _write_private(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, TREE_MODE), "w",
                   encoding="utf-8") as file:
        file.write(text)
    os.replace(temporary, path)
