"""A package's folder on disk: its digest (the same tree, the same digest, on any machine), packed
into an archive, a checked archive unpacked into one, made read-only for every uid, and removed. The arena's archive
cache (arena/play/archives.py) and the package builds (build.py) share these."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import shutil
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path

from .archive import MAX_UNPACKED_BYTES, ArchiveError, open_archive

TREE_FORMAT = "royal-casino-archive-tree 1"
# Readable by the sandbox's per-bot uids, and read-only for everyone: a bot (or an interpreter's
# byte-code cache) cannot change the copy that the next game starts from.
FOLDER_MODE, FILE_MODE, PROGRAM_MODE = 0o555, 0o444, 0o555


def tree_digest(folder: Path) -> str:
    """A digest of a folder's tree: every path, its kind, whether a file is executable, and each
    file's sha256 or link's target; the same for the same archive on any machine. A file's hard
    links share its inode, so it is hashed once (an archive may hold 9,999 links to a 63 MiB file,
    which adds nothing to its unpacked size: hashed once each, that was 620 GB to read)."""
    lines = [TREE_FORMAT]
    hashed: dict[tuple[int, int], str] = {}  # by inode: hard links to one file are read once, not once each
    for path in walk(folder):
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


def walk(folder: Path) -> Iterator[Path]:
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


def open_up(folder: Path) -> None:
    """Folders r-x and files r-- for all, programs keeping their x bits (a root arena's bots run as
    other uids); the folders last, while they can still be written."""
    folders = [folder]
    for path in walk(folder):
        info = os.lstat(path)
        if stat.S_ISDIR(info.st_mode):
            folders.append(path)
        elif stat.S_ISREG(info.st_mode):
            path.chmod(PROGRAM_MODE if info.st_mode & 0o100 else FILE_MODE)
    for path in reversed(folders):
        path.chmod(FOLDER_MODE)


def remove_tree(folder: Path) -> None:
    """Delete a folder of the cache, read-only folders included (best effort: a leftover is only space)."""
    for top, dirs, _ in os.walk(folder):
        for name in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(top, name), 0o700)
    with contextlib.suppress(OSError):
        folder.chmod(0o700)
    shutil.rmtree(folder, ignore_errors=True)




def unpack(content: bytes, folder: Path) -> None:
    """Unpack archive ``content`` (checked again here: it may come from anywhere) into the empty
    ``folder``, read-only for everyone (``open_up``); ArchiveError when it cannot be."""
    if not hasattr(tarfile, "data_filter"):  # Python 3.11.4+; the filter is the unpacker's second line
        raise ArchiveError("unpacking bot archives needs Python 3.11.4 or later (tarfile's data filter)")
    _, tar_bytes = open_archive(content)
    try:
        with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:") as tar:
            tar.extractall(folder, filter="data")
    except tarfile.TarError as exc:
        raise ArchiveError(f"cannot be unpacked: {exc}") from None
    open_up(folder)


SKIPPED = frozenset({".git", ".hg", ".svn", "__pycache__"})  # left out when a folder is packed


def pack(folder: Path) -> bytes:
    """A bot package's folder as a ``.tar.gz`` (what `referee check FOLDER`, `arena bots add` and
    the web all check and store): its files, folders and symbolic links in name order, the same
    bytes for the same tree on any machine (no times, owners or modes but the execute bit), without
    version-control folders and byte-code caches (``SKIPPED``). ArchiveError when it holds what an
    archive may not (a FIFO, a device) or more than an archive's files may add up to."""
    buffer = io.BytesIO()
    total = 0
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, compresslevel=6) as gz, \
            tarfile.open(fileobj=gz, mode="w:", format=tarfile.PAX_FORMAT) as tar:
        for path in _package_files(folder):
            name = path.relative_to(folder).as_posix()
            info = os.lstat(path)
            entry = tarfile.TarInfo(name)
            entry.mtime, entry.uid, entry.gid, entry.uname, entry.gname = 0, 0, 0, "", ""
            if stat.S_ISLNK(info.st_mode):
                entry.type, entry.linkname, entry.mode = tarfile.SYMTYPE, os.readlink(path), 0o777
                tar.addfile(entry)
            elif stat.S_ISDIR(info.st_mode):
                entry.type, entry.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(entry)
            elif stat.S_ISREG(info.st_mode):
                total += info.st_size
                if total > MAX_UNPACKED_BYTES:
                    raise ArchiveError(f"holds more than {MAX_UNPACKED_BYTES // (1 << 20)} MiB of files: a bot package "
                                       "may hold at most that (leave out what its build makes or its runtime offers)")
                entry.size, entry.mode = info.st_size, 0o755 if info.st_mode & 0o100 else 0o644
                with open(path, "rb") as file:
                    tar.addfile(entry, file)
            else:
                raise ArchiveError(f"holds {name}, which is neither a file, a folder nor a link")
    return buffer.getvalue()


def _package_files(folder: Path) -> Iterator[Path]:
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED)
        base = Path(top)
        for name in sorted([*dirs, *files]):
            yield base / name
