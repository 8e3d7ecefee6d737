"""Unpacked bot archives on this machine (a bot package's files, or an arena bot's archive).

The cache is ``<root>/<sha256>/`` (the archive's root) beside ``<root>/<sha256>.tree``, a digest
of the unpacked tree written before the folder appears. A folder is made in a temporary folder
beside it and renamed into place, so two processes unpacking the same archive at once both end
with one complete folder, and no process ever sees half of one. A folder whose files no longer
match its digest (edited, truncated, partly deleted) is not used: it is moved aside, a warning is
logged, and the archive is unpacked again from where it is kept (the database, for the arena).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import stat
import tempfile
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

from ..errors import quoted, shown
from .archive import ArchiveError, is_sha256
from .tree import remove_tree, tree_digest, unpack

log = logging.getLogger(__name__)
CACHE_ENV = "ARENA_ARCHIVE_CACHE"
CACHE_SUBDIR = Path("royal-casino-arena") / "archives"
# The cache's root: others (a bot's uid) may pass through to an archive's folder, not list the
# others; a tree's digest is the referee's alone.
ROOT_MODE, TREE_MODE = 0o711, 0o600


def cache_base() -> Path:
    """``$XDG_CACHE_HOME``, else ``~/.cache``: where the project's caches go."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"  # the spec ignores a relative one


def default_cache_root() -> Path:
    """``$ARENA_ARCHIVE_CACHE``, else ``$XDG_CACHE_HOME/royal-casino-arena/archives``, else
    ``~/.cache/royal-casino-arena/archives``."""
    if explicit := os.environ.get(CACHE_ENV):
        return Path(explicit).expanduser()
    return cache_base() / CACHE_SUBDIR


class UnpackCache:
    """Unpacked bot archives on this machine (see the module docstring). One instance remembers the
    folders it has checked, so a long-running process hashes each folder's files once."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(os.path.abspath(root if root is not None else default_cache_root()))
        self._checked: set[str] = set()
        self._lock = threading.Lock()

    def path_for(self, sha256: str, content_of: Callable[[], bytes | None], kept_in: str) -> Path:
        """The folder holding archive ``sha256`` unpacked, unpacking ``content_of()`` the first time;
        ArchiveError when there is no such archive (None) in ``kept_in`` (where it was looked for),
        the copy there does not match its hash, or the archive is refused (archive.py)."""
        if not is_sha256(sha256):
            raise ArchiveError(f"{quoted(sha256)} is not the sha256 of an archive")
        folder = self.root / sha256
        with self._lock:
            if sha256 in self._checked and folder.is_dir():
                return folder
        self._make_root()
        if folder.is_dir():
            if self._intact(folder):
                return self._remember(sha256, folder)
            log.warning("the cached archive %s no longer matches what was unpacked: unpacking it again", folder)
            self._discard(folder)
        content = content_of()
        if content is None:
            raise ArchiveError(f"archive {sha256[:12]} is not in {kept_in}")
        if hashlib.sha256(content).hexdigest() != sha256:
            raise ArchiveError(f"the copy of archive {sha256[:12]} in {kept_in} does not match its sha256: it is "
                               "damaged; store the bot's archive again")
        self._unpack(content, sha256, folder)
        return self._remember(sha256, folder)

    def remove(self, sha256: str) -> None:
        """Delete archive ``sha256``'s unpacked copy on this machine, and its digest (a rejected
        submission's: nothing plays it, and it could take many times its archive's size); the
        database keeps the archive. A later ``path_for`` unpacks it again."""
        if not is_sha256(sha256):
            return
        with self._lock:
            self._checked.discard(sha256)
        self._discard(self.root / sha256)
        with contextlib.suppress(OSError):
            self._tree_file(sha256).unlink()

    def _remember(self, sha256: str, folder: Path) -> Path:
        with self._lock:
            self._checked.add(sha256)
        return folder

    def _make_root(self) -> None:
        """The cache's root, made if missing; its mode ROOT_MODE when this user owns it (a root made
        by an older version was 0755: others could list every archive in it)."""
        try:
            if not self.root.is_dir():
                self.root.mkdir(parents=True, exist_ok=True)
            info = self.root.stat()
            if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) != ROOT_MODE:
                self.root.chmod(ROOT_MODE)
        except OSError as exc:
            raise ArchiveError(f"cannot create the archive cache {shown(str(self.root))}: "
                               f"{exc.strerror or exc} (set {CACHE_ENV} to another folder)") from None

    def _unpack(self, content: bytes, sha256: str, folder: Path) -> None:
        self._make_root()
        try:
            work = Path(tempfile.mkdtemp(prefix=f".{sha256}.", dir=self.root))
        except OSError as exc:
            raise ArchiveError(f"cannot unpack into the archive cache {shown(str(self.root))}: "
                               f"{exc.strerror or exc}") from None
        try:
            unpack(content, work)
            _write_atomically(self._tree_file(sha256), tree_digest(work))  # before the folder: see the docstring
            try:
                os.rename(work, folder)
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY) or not folder.is_dir():
                    raise
                log.info("archive %s was unpacked by another process at the same time", sha256[:12])
        except ArchiveError as exc:
            raise ArchiveError(f"archive {sha256[:12]} {exc}") from None
        except OSError as exc:
            raise ArchiveError(f"archive {sha256[:12]} cannot be unpacked into {shown(str(self.root))}: "
                               f"{exc.strerror or exc}") from None
        finally:
            if work.exists():
                remove_tree(work)

    def _tree_file(self, sha256: str) -> Path:
        return self.root / f"{sha256}.tree"

    def _intact(self, folder: Path) -> bool:
        """Whether ``folder`` holds what was unpacked there (its files against the digest beside it)."""
        try:
            expected = self._tree_file(folder.name).read_text(encoding="utf-8")
        except OSError:
            return False
        try:
            return tree_digest(folder) == expected
        except OSError:
            return False

    def _discard(self, folder: Path) -> None:
        """Move a folder out of the way (at once, so no one starts a bot in it), then delete it."""
        aside = self.root / f".{folder.name}.damaged.{uuid.uuid4().hex[:8]}"
        try:
            os.rename(folder, aside)
        except FileNotFoundError:  # another process moved it first
            return
        except OSError as exc:
            raise ArchiveError(f"the cached archive {shown(str(folder))} is damaged and cannot be moved away: "
                               f"{exc.strerror or exc}") from None
        remove_tree(aside)


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, TREE_MODE), "w",
                   encoding="utf-8") as file:
        file.write(text)
    os.replace(temporary, path)
