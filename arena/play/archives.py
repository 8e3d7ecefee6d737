"""Bot archives on a machine that plays games: stored in the database once by sha256
(``store_archive_file``), unpacked on first use into a local cache (``ArchiveCache``), and the
endpoint a bot row starts from here (``bot_endpoint``). docs/tournaments.md, "Bot archives".

The cache is ``<root>/<sha256>/`` (the archive's root) beside ``<root>/<sha256>.tree``, a digest
of the unpacked tree written before the folder appears. A folder is made in a temporary folder
beside it and renamed into place, so two processes unpacking the same archive at once both end
with one complete folder, and no process ever sees half of one. A folder whose files no longer
match its digest (edited, truncated, partly deleted) is not used: it is moved aside, a warning is
logged, and the archive is unpacked again from the database.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import io
import logging
import os
import shutil
import stat
import tarfile
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

from referee.bots.endpoint import BotEndpoint

from referee.packages.archive import ArchiveError, check_archive, is_sha256, open_archive, read_archive_file
from ..config import ConfigError, TournamentConfig
from ..errors import quoted, shown
from ..store.store import BotRow, Store

log = logging.getLogger(__name__)
CACHE_ENV = "ARENA_ARCHIVE_CACHE"
CACHE_SUBDIR = Path("royal-casino-arena") / "archives"
TREE_FORMAT = "royal-casino-archive-tree 1"
# Readable by the sandbox's per-bot uids, and read-only for everyone: a bot (or an interpreter's
# byte-code cache) cannot change the cached copy that the next game starts from.
FOLDER_MODE, FILE_MODE, PROGRAM_MODE = 0o555, 0o444, 0o555
# The cache's root: others (a bot's uid) may pass through to an archive's folder, not list the
# others; a tree's digest is the arena's alone.
ROOT_MODE, TREE_MODE = 0o711, 0o600


def default_cache_root() -> Path:
    """``$ARENA_ARCHIVE_CACHE``, else ``$XDG_CACHE_HOME/royal-casino-arena/archives``, else
    ``~/.cache/royal-casino-arena/archives``."""
    if explicit := os.environ.get(CACHE_ENV):
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"  # the spec ignores a relative one
    return base / CACHE_SUBDIR


class ArchiveCache:
    """Unpacked bot archives on this machine (see the module docstring). One instance remembers the
    folders it has checked, so a long-running process hashes each folder's files once."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(os.path.abspath(root if root is not None else default_cache_root()))
        self._checked: set[str] = set()
        self._lock = threading.Lock()

    def path_for(self, store: Store, sha256: str) -> Path:
        """The folder holding archive ``sha256`` unpacked, unpacking it from ``store`` the first time;
        ArchiveError when the database has no such archive, its copy does not match its hash, or
        the archive is refused (arena/bot_archive.py)."""
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
        content = store.archive_content(sha256)
        if content is None:
            raise ArchiveError(f"archive {sha256[:12]} is not in the database {store.url_for_people}")
        if hashlib.sha256(content).hexdigest() != sha256:
            raise ArchiveError(f"the database's copy of archive {sha256[:12]} does not match its sha256: it is "
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
        if not hasattr(tarfile, "data_filter"):  # Python 3.11.4+; the filter is the unpacker's second line
            raise ArchiveError("unpacking bot archives needs Python 3.11.4 or later (tarfile's data filter)")
        _, tar_bytes = open_archive(content)  # the checks again: the database may hold anything
        self._make_root()
        try:
            work = Path(tempfile.mkdtemp(prefix=f".{sha256}.", dir=self.root))
        except OSError as exc:
            raise ArchiveError(f"cannot unpack into the archive cache {shown(str(self.root))}: "
                               f"{exc.strerror or exc}") from None
        try:
            with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:") as tar:
                tar.extractall(work, filter="data")
            _open_up(work)
            _write_atomically(self._tree_file(sha256), tree_digest(work))  # before the folder: see the docstring
            try:
                os.rename(work, folder)
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY) or not folder.is_dir():
                    raise
                log.info("archive %s was unpacked by another process at the same time", sha256[:12])
        except tarfile.TarError as exc:
            raise ArchiveError(f"archive {sha256[:12]} cannot be unpacked: {exc}") from None
        except OSError as exc:
            raise ArchiveError(f"archive {sha256[:12]} cannot be unpacked into {shown(str(self.root))}: "
                               f"{exc.strerror or exc}") from None
        finally:
            if work.exists():
                _remove_tree(work)

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
        _remove_tree(aside)


def tree_digest(folder: Path) -> str:
    """A digest of a folder's tree: every path, its kind, whether a file is executable, and each
    file's sha256 or link's target; the same for the same archive on any machine. A file's hard
    links share its inode, so it is hashed once (an archive may hold 9,999 links to a 63 MiB file,
    which adds nothing to its unpacked size: hashed once each, that was 620 GB to read)."""
    lines = [TREE_FORMAT]
    hashed: dict[tuple[int, int], str] = {}  # by inode: hard links to one file are read once, not once each
    for path in _walk(folder):
        relative = path.relative_to(folder).as_posix()
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            lines.append(f"l {relative!r} {os.readlink(path)!r}")
        elif stat.S_ISDIR(info.st_mode):
            lines.append(f"d {relative!r}")
        elif stat.S_ISREG(info.st_mode):
            inode = (info.st_dev, info.st_ino)
            if inode not in hashed:
                hashed[inode] = _file_sha256(path)
            lines.append(f"f {relative!r} {'x' if info.st_mode & 0o100 else '-'} {hashed[inode]}")
        else:
            lines.append(f"? {relative!r}")  # nothing unpacks one: a sign of tampering
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogateescape")).hexdigest() + "\n"


def _walk(folder: Path) -> Iterator[Path]:
    for top, dirs, files in os.walk(folder):
        dirs.sort()
        base = Path(top)
        for name in sorted([*dirs, *files]):
            yield base / name


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _open_up(folder: Path) -> None:
    """Folders r-x and files r-- for all, programs keeping their x bits (a root arena's bots run as
    other uids); the folders last, while they can still be written."""
    folders = [folder]
    for path in _walk(folder):
        info = os.lstat(path)
        if stat.S_ISDIR(info.st_mode):
            folders.append(path)
        elif stat.S_ISREG(info.st_mode):
            path.chmod(PROGRAM_MODE if info.st_mode & 0o100 else FILE_MODE)
    for path in reversed(folders):
        path.chmod(FOLDER_MODE)


def _remove_tree(folder: Path) -> None:
    """Delete a folder of the cache, read-only folders included (best effort: a leftover is only space)."""
    for top, dirs, _ in os.walk(folder):
        for name in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(top, name), 0o700)
    with contextlib.suppress(OSError):
        folder.chmod(0o700)
    shutil.rmtree(folder, ignore_errors=True)


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, TREE_MODE), "w",
                   encoding="utf-8") as file:
        file.write(text)
    os.replace(temporary, path)


def store_archive_file(store: Store, path: str | Path, expected: str | None = None) -> str:
    """Read and check the archive file at ``path``, store it (once) and return its sha256.
    ``expected``: the hash it had when the tournament file was read; when the database already
    holds that one the file is not read again, and a file that changed since is refused."""
    if expected is not None and store.has_archive(expected):
        return expected
    content = read_archive_file(path)
    checked = check_archive(content)
    if expected is not None and checked.sha256 != expected:
        raise ArchiveError("changed while the tournament was being opened: run the command again")
    store.put_archive(checked.sha256, content)
    return checked.sha256


def store_config_archives(store: Store, config: TournamentConfig) -> dict[str, str]:
    """Store the archives of a tournament file's bots; each bot's archive hash, by name. A
    problem is a ConfigError naming the file, the bot and the archive."""
    hashes: dict[str, str] = {}
    for number, bot in enumerate(config.bots, start=1):
        if bot.archive is None:
            continue
        try:
            hashes[bot.name] = store_archive_file(store, bot.archive, bot.archive_sha256)
        except ArchiveError as exc:
            raise ConfigError(f"{shown(config.path.name)}: [[bots]] #{number} ({quoted(bot.name)}) archive "
                              f"{shown(bot.archive)} {exc}") from None
    return hashes


def bot_endpoint(store: Store, row: BotRow, cache: ArchiveCache) -> BotEndpoint:
    """How this machine starts a stored bot: its command as stored, or for a bot with an archive,
    its command in the archive unpacked here (``cwd`` inside it) carrying the archive's hash."""
    if row.archive is None:
        return BotEndpoint.parse(row.spec, cwd=row.cwd, env=row.env)
    root = cache.path_for(store, row.archive)
    cwd = root / row.cwd if row.cwd else root
    return dataclasses.replace(BotEndpoint.parse(row.spec, cwd=str(cwd), env=row.env), archive=row.archive)
