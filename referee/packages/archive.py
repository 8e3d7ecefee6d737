"""Bot archives (docs/tournaments.md, "Bot archives"): what a bot's ``.tar.gz`` may hold. An
archive is a stranger's upload, so it is checked when it is read from a file (before it is stored)
and again before it is unpacked (arena/play/archives.py), with the limits below.

Refused: anything but a gzip'd tar; more than MAX_GZIP_MEMBERS gzip members; members with an
absolute path or ``..``; paths over MAX_PATH_DEPTH parts or MAX_PATH_BYTES bytes, names over
MAX_NAME_BYTES; members inside a symbolic link or a file; symbolic or hard links that point outside
the archive (a symbolic link resolved as the file system would), chains of more than MAX_LINK_HOPS
links, links that take over MAX_LINK_STEPS steps to resolve; device files, FIFOs, sparse files and
other special entries; a member twice; more than MAX_MEMBERS members (the folders their paths
imply included) or MAX_UNPACKED_BYTES of files; PAX and GNU long-name headers over their limits
(MAX_HEADER_BYTES and below); an archive file over MAX_ARCHIVE_BYTES. ``tarfile``'s ``data``
filter, which the unpacker also applies, would strip a leading ``/`` rather than refuse it, accepts
``a/../b`` and has no size or count limits: hence the checks here, each with its own message.

The check is linear in the archive: every limit also bounds the work (each gzip member, header,
path part, folder and link is looked at a bounded number of times), so any archive within
MAX_ARCHIVE_BYTES is checked in about a second of CPU or less (docs/benchmarks.md).
"""

from __future__ import annotations

import hashlib
import io
import os
import posixpath
import re
import shlex
import stat
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from ..bots.endpoint import BotEndpoint
from ..errors import EndpointError, RefereeError, one_line, quoted

MIB = 1 << 20
MAX_ARCHIVE_BYTES = 64 * MIB  # the .tar.gz file itself
MAX_UNPACKED_BYTES = 64 * MIB  # the sizes of its files, added up
MAX_MEMBERS = 10_000  # files, folders and links
# The tar stream inside the gzip: the files plus the headers around them (a few blocks per member
# at most, long names included). Decompressing stops here, so a gzip bomb costs no more memory.
MAX_TAR_BYTES = MAX_UNPACKED_BYTES + MAX_MEMBERS * 4096 + MIB
# Symbolic links, resolved inside the archive as the file system would (each part of a target in
# turn, a link met on the way followed): at most MAX_LINK_HOPS in a chain (Linux's own limit: a
# longer one fails with ELOOP when used), and the steps of every link's resolution, with the links it
# meets counted each time, added up to at most MAX_LINK_STEPS. Unpacking resolves every link again
# (tarfile's data filter calls realpath, which recurses once per link of a chain): this bounds it.
MAX_LINK_HOPS = 40
MAX_LINK_STEPS = 100_000
# gzip(1) and pigz write one gzip member; `cat a.tar.gz b.tar.gz` joins a few, and gzip reads them
# all, so a few are allowed. Each member costs a decompressor of its own, so not a million of them
# (block-gzip tools such as bgzip write one member per 64 KiB: such an archive is refused).
MAX_GZIP_MEMBERS = 16
GZIP_CHUNK_BYTES = 64 * 1024  # compressed bytes handed to zlib at a time
# A member's path: its parts (folders and name) and its length in bytes (UTF-8), and a link's target's
# length. A deep Python or node_modules tree is 10 to 30 parts; 1,024 bytes is macOS's PATH_MAX and
# leaves the cache's own folders room under Linux's 4,096. Every walk over a path's parents is
# bounded by them. A name (one part) is at most Linux's NAME_MAX: a longer one cannot be unpacked,
# and tarfile answers a link it fails to make by searching every member (quadratic in the links).
MAX_PATH_DEPTH = 64
MAX_PATH_BYTES = 1024
MAX_NAME_BYTES = 255
# PAX headers and GNU long-name headers come before the member they describe, and tarfile reads
# them in Python (some 16 µs a header here), follows a run of them by recursion, and before Python
# 3.11.10 (CVE-2024-6232) parses a PAX header with regular expressions that are quadratic in a run
# of digits and in malformed records. So each is checked before tarfile reads it: its size; how
# many come in a row (GNU tar writes at most two, a long name and a long link target; a PAX writer
# one, after git's global header) and in all (one a member on average); a PAX header's records
# well formed, with no run of more than MAX_PAX_DIGITS digits (a real header's longest is a
# 20-digit number: a size, an inode); and, added up over the archive, PAX data and records (a
# global header's records count once for every member after it, as tarfile applies them to each).
# A real archive has a few records, some 100 bytes, per member (at 10,000 members the limits leave
# 10 records and 400 bytes each). Together they keep the check of any archive's headers under
# about 0.85 s of CPU here, the bytes of a 64 MiB archive adding 0.15 s (docs/benchmarks.md).
MAX_HEADER_BYTES = 64 * 1024
MAX_HEADERS_PER_MEMBER = 2
MAX_EXTENSION_HEADERS = MAX_MEMBERS  # in all: one a member on average
MAX_PAX_DIGITS = 20
MAX_PAX_BYTES = 4 * MIB
MAX_PAX_RECORDS = 100_000
SHA256_HEX = frozenset("0123456789abcdef")
_ZEROS = re.compile(rb"\0*")
_PAX_TYPES = frozenset({tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE})
_LONG_NAME_TYPES = frozenset({tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK})
_DIGITS_MARKED = bytes(1 if 0x30 <= byte <= 0x39 else 0 for byte in range(256))  # bytes.translate: digits to 1
_TOO_MANY_DIGITS = b"\1" * (MAX_PAX_DIGITS + 1)


class ArchiveError(RefereeError):
    """An archive refused (one line saying why; the CLI exits 2), or one that cannot be used."""


@dataclass(frozen=True, slots=True)
class ArchiveEntry:
    """One member of a checked archive: its normalised path, kind, mode and size, and a link's target."""

    name: str
    kind: str  # "file", "dir", "symlink" or "hardlink"
    mode: int
    size: int
    target: str | None = None  # a symlink's target as written; a hard link's member path


@dataclass(frozen=True)
class CheckedArchive:
    """An archive that passed every check: its hash, its size and its members by path."""

    sha256: str
    size: int
    unpacked_bytes: int
    entries: dict[str, ArchiveEntry]
    folders: frozenset[str] = frozenset()  # every folder a member's path passes through (listed or not)

    def is_folder(self, path: str) -> bool:
        """Whether ``path`` (normalised, relative) is a folder of the archive, listed or implied by a member."""
        if path in ("", "."):
            return True
        entry = self.entries.get(path)
        if entry is not None:
            return entry.kind == "dir"
        return path in self.folders

    def resolve(self, path: str) -> ArchiveEntry | None:
        """The entry at ``path``, following symbolic links inside the archive; None if there is none."""
        for _ in range(MAX_LINK_HOPS + 1):  # at most MAX_LINK_HOPS links followed, then what they lead to
            entry = self.entries.get(path)
            if entry is None or entry.kind != "symlink":
                if entry is not None and entry.kind == "hardlink" and entry.target is not None:
                    return self.entries.get(entry.target)
                return entry
            path = posixpath.normpath(posixpath.join(posixpath.dirname(path), entry.target or ""))
        return None


def is_sha256(text: str) -> bool:
    """Whether ``text`` is a sha256 in lower-case hex (as archives are named in the database and the cache)."""
    return len(text) == 64 and set(text) <= SHA256_HEX


def read_archive_file(path: str | Path) -> bytes:
    """The bytes of the archive file at ``path``; ArchiveError when it cannot be read or is too large
    (the size is looked at before anything is read)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a folder, or a FIFO that would block the read
            raise ArchiveError("is not a file")
        with open(path, "rb") as file:
            info = os.fstat(file.fileno())
            if info.st_size > MAX_ARCHIVE_BYTES:
                raise ArchiveError(_too_large(info.st_size))
            content = file.read(MAX_ARCHIVE_BYTES + 1)
    except OSError as exc:
        raise ArchiveError(f"cannot be read: {exc.strerror or exc}") from None
    if len(content) > MAX_ARCHIVE_BYTES:  # it grew while being read
        raise ArchiveError(_too_large(len(content)))
    return content


def check_archive(content: bytes) -> CheckedArchive:
    """Every check of the module docstring on an archive's bytes; ArchiveError (one line) on the first problem."""
    return open_archive(content)[0]


def open_archive(content: bytes) -> tuple[CheckedArchive, bytes]:
    """``check_archive``, and the tar stream inside the gzip (for the unpacker: no second decompression)."""
    if len(content) > MAX_ARCHIVE_BYTES:
        raise ArchiveError(_too_large(len(content)))
    tar_bytes = _gunzip(content)
    entries: dict[str, ArchiveEntry] = {}
    folders: set[str] = set()  # the folders the members' paths pass through
    unlisted = 0  # those of them that are not members themselves: unpacking makes them too
    total = 0
    try:
        with _BoundedTar(tar_bytes) as tar:
            for count, member in enumerate(tar, start=1):
                if count > MAX_MEMBERS:
                    raise ArchiveError(f"has more than {MAX_MEMBERS} members: a bot archive may have at most "
                                       f"{MAX_MEMBERS} files, folders and links")
                entry = _entry(member, entries)
                if entry is None:
                    continue
                total += entry.size
                if total > MAX_UNPACKED_BYTES:
                    raise ArchiveError(f"unpacks to more than {MAX_UNPACKED_BYTES // MIB} MiB: a bot archive's files "
                                       f"may add up to at most {MAX_UNPACKED_BYTES // MIB} MiB")
                entries[entry.name] = entry
                if entry.name in folders:
                    unlisted -= 1
                parent = posixpath.dirname(entry.name)
                while parent and parent not in folders:  # each folder once: linear in the folders
                    folders.add(parent)
                    if parent not in entries:
                        unlisted += 1
                    parent = posixpath.dirname(parent)
                if len(entries) + unlisted > MAX_MEMBERS:
                    raise ArchiveError(f"has more than {MAX_MEMBERS} members, counting the folders its paths imply: a "
                                       f"bot archive may have at most {MAX_MEMBERS} files, folders and links")
    except tarfile.TarError as exc:
        raise ArchiveError(f"is not a gzip'd tar archive (.tar.gz): the gzip data holds no valid tar archive "
                           f"({one_line(str(exc))})") from None
    if any(entries[name].kind != "dir" for name in folders if name in entries):
        _refuse_members_inside_non_folders(entries)
    _LinkResolver(entries).check_all()
    checked = CheckedArchive(sha256=hashlib.sha256(content).hexdigest(), size=len(content), unpacked_bytes=total,
                             entries=entries, folders=frozenset(folders))
    return checked, tar_bytes


def _refuse_members_inside_non_folders(entries: dict[str, ArchiveEntry]) -> None:
    """The refusal of the first member (in the archive's order) inside a symbolic link or a file,
    naming the nearest one above it (called once one is known to hold a member). A link would let a
    member be written anywhere; a file cannot hold one (unpacking it fails, and tarfile answers each
    link it fails to make by searching every member). Each folder's nearest holder is found once."""
    holders = {name: entry for name, entry in entries.items() if entry.kind != "dir"}
    nearest: dict[str, str | None] = {"": None}  # a folder: the deepest link or file at or above it
    for entry in entries.values():
        folder, below = posixpath.dirname(entry.name), []
        while folder not in nearest:
            below.append(folder)
            folder = posixpath.dirname(folder)
        holder = nearest[folder]
        for folder in reversed(below):
            holder = folder if folder in holders else holder
            nearest[folder] = holder
        if holder is not None and holders[holder].kind == "symlink":
            raise ArchiveError(f"member {quoted(entry.name)} is inside the symbolic link {quoted(holder)}: "
                               "a member may not be written through a link")
        if holder is not None:
            raise ArchiveError(f"member {quoted(entry.name)} is inside the file {quoted(holder)}: only a folder "
                               "may hold members")


@dataclass(frozen=True, slots=True)
class _Resolved:
    """Where a symbolic link leads inside the archive ("" is its root), the longest chain of links
    behind it (itself included), and the steps of resolving it, those of the links it meets included."""

    path: str
    hops: int
    steps: int


class _LinkResolver:
    """Resolves every symbolic link of an archive as the file system would, each link once
    (memoised): linear in the links' targets' parts; a chain over MAX_LINK_HOPS, a loop, a target
    that leaves the archive on the way, or more than MAX_LINK_STEPS steps in all is refused."""

    def __init__(self, entries: dict[str, ArchiveEntry]) -> None:
        self.entries = entries
        self.resolved: dict[str, _Resolved] = {}

    def check_all(self) -> None:
        steps = 0
        for name, entry in self.entries.items():
            if entry.kind == "symlink":
                steps += self.follow(name, 1).steps
                if steps > MAX_LINK_STEPS:
                    raise ArchiveError(f"has symbolic links that take more than {MAX_LINK_STEPS} steps to resolve "
                                       f"(at {quoted(name)}): a bot archive's links may take at most {MAX_LINK_STEPS}, "
                                       "each part of a target a step, a link met on the way counted each time")

    def follow(self, link: str, depth: int) -> _Resolved:
        """The resolution of ``link``, reached as the ``depth``-th link of a chain."""
        known = self.resolved.get(link)
        if depth > MAX_LINK_HOPS or (known is not None and depth - 1 + known.hops > MAX_LINK_HOPS):
            raise ArchiveError(f"member {quoted(link)} is a symbolic link in a chain of more than {MAX_LINK_HOPS} "
                               f"links, or a loop of them: a link may lead through at most {MAX_LINK_HOPS}")
        if known is not None:
            return known
        current, hops, steps = posixpath.dirname(link), 0, 0
        for part in (self.entries[link].target or "").split("/"):
            steps += 1
            if part in ("", "."):
                continue
            if part == "..":
                if not current:
                    raise ArchiveError(f"member {quoted(link)} is a symbolic link to "
                                       f"{quoted(self.entries[link].target or '')}, outside the archive")
                current = posixpath.dirname(current)
                continue
            current = f"{current}/{part}" if current else part
            entry = self.entries.get(current)
            if entry is not None and entry.kind == "symlink":
                behind = self.follow(current, depth + 1)
                current, hops, steps = behind.path, max(hops, behind.hops), steps + behind.steps
        self.resolved[link] = resolved = _Resolved(current, hops + 1, steps)
        return resolved


def command_problem(archive: CheckedArchive, spec: str, cwd: str | None) -> str | None:
    """Why ``spec`` cannot start from ``archive`` with its working directory at ``cwd`` (a folder of
    the archive, None for its root), or None. A program named by a relative path must be an
    executable file of the archive; any other program is looked up on this machine as usual."""
    if BotEndpoint.is_address(spec):
        return f"{quoted(spec)} is an address: an archive only applies to a command"
    text = spec.strip().removeprefix("cmd:").strip()
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        return f"bad bot command {quoted(spec)}: {exc}"
    if not argv:
        return f"bad bot command {quoted(spec)}"
    program = argv[0]
    if os.sep not in program or os.path.isabs(program):
        try:
            BotEndpoint.parse(spec)
        except EndpointError as exc:
            return one_line(str(exc))
        return None
    path = posixpath.normpath(posixpath.join(cwd or "", program))
    if path == ".." or path.startswith("../"):
        return f"{quoted(program)} is outside the archive"
    entry = archive.resolve(path)
    where = f" (looked for {quoted(path)})" if cwd else ""
    if entry is None:
        return f"{quoted(program)} is not in the archive{where}"
    if entry.kind != "file":
        return f"{quoted(program)} is a {'folder' if entry.kind == 'dir' else entry.kind} in the archive, not a program"
    if not entry.mode & 0o100:
        return (f"{quoted(program)} is not executable in the archive (chmod +x it before packing, or start it "
                "through its interpreter, e.g. python3 bot.py)")
    return None


def archive_folder(text: str) -> str | None:
    """A ``cwd`` given with an archive, normalised: a folder inside it (None: its root); ArchiveError
    for an absolute path or one with ``..``."""
    if text.startswith("/") or ".." in text.split("/"):
        raise ArchiveError(f"{quoted(text)} must be a folder inside the archive: a relative path without ..")
    path = posixpath.normpath(text)
    return None if path == "." else path


class _BoundedTar(tarfile.TarFile):
    """tarfile reading a tar stream held in memory, each PAX and GNU long-name header checked before
    tarfile reads it (``_BoundedHeader``); the counts are this stream's."""

    def __init__(self, tar_bytes: bytes) -> None:
        self.tar_bytes = tar_bytes
        self.headers_in_a_row = 0
        self.extension_headers = 0
        self.pax_bytes = 0
        self.pax_records = 0
        super().__init__(fileobj=io.BytesIO(tar_bytes), mode="r", tarinfo=_BoundedHeader)


class _BoundedHeader(tarfile.TarInfo):
    """A tar header as tarfile reads it, with the extension headers bounded (see MAX_HEADER_BYTES).
    ``_proc_member`` is where tarfile hands each header to its kind's reader: the hook its own
    comments offer subclasses."""

    def _proc_member(self, tar: tarfile.TarFile) -> tarfile.TarInfo:
        bounded = cast(_BoundedTar, tar)
        if self.type == tarfile.GNUTYPE_SPARSE:  # its reader loops over any number of blocks: refused first
            raise ArchiveError(f"member {quoted(self.name)} is a sparse file: pack it as a plain file")
        if self.type not in _PAX_TYPES and self.type not in _LONG_NAME_TYPES:
            bounded.headers_in_a_row = 0
            _count_pax_records(bounded, len(tar.pax_headers))  # the global records, applied to this member
            return super()._proc_member(tar)
        where = f"at byte {self.offset} of the tar stream"
        kind = "PAX" if self.type in _PAX_TYPES else "GNU long-name"
        bounded.headers_in_a_row += 1
        bounded.extension_headers += 1
        if bounded.headers_in_a_row > MAX_HEADERS_PER_MEMBER:
            raise ArchiveError(f"has more than {MAX_HEADERS_PER_MEMBER} PAX or GNU long-name headers in a row "
                               f"({where}): a member may have at most {MAX_HEADERS_PER_MEMBER}")
        if bounded.extension_headers > MAX_EXTENSION_HEADERS:
            raise ArchiveError(f"has more than {MAX_EXTENSION_HEADERS} PAX and GNU long-name headers: a bot archive "
                               f"may have at most {MAX_EXTENSION_HEADERS}, one a member on average")
        if self.size > MAX_HEADER_BYTES:
            raise ArchiveError(f"has a {kind} header of {self.size} bytes ({where}): a header may hold at most "
                               f"{MAX_HEADER_BYTES // 1024} KiB")
        if self.type in _PAX_TYPES:
            bounded.pax_bytes += self.size
            if bounded.pax_bytes > MAX_PAX_BYTES:
                raise ArchiveError(f"has more than {MAX_PAX_BYTES // MIB} MiB of PAX headers: a bot archive's PAX "
                                   f"headers may add up to at most {MAX_PAX_BYTES // MIB} MiB")
            start = self.offset + tarfile.BLOCKSIZE
            blocks = bounded.tar_bytes[start:start + -(-self.size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE]
            if blocks.translate(_DIGITS_MARKED).find(_TOO_MANY_DIGITS) >= 0:  # what tarfile's search reads
                raise ArchiveError(f"has a PAX header with more than {MAX_PAX_DIGITS} digits in a row ({where}): "
                                   f"at most {MAX_PAX_DIGITS} (longer runs make Python's tarfile slow: CVE-2024-6232)")
            records = _pax_records(blocks[:self.size], where)
            _count_pax_records(bounded, records + (len(tar.pax_headers) if self.type != tarfile.XGLTYPE else 0))
        return super()._proc_member(tar)


def _pax_records(data: bytes, where: str) -> int:
    """How many records a PAX header's data holds; ArchiveError unless it is only well-formed records
    ("LENGTH KEYWORD=VALUE" and a newline, LENGTH counting the whole record), none for a sparse file.
    tarfile's own parse of such records is linear."""
    count, position = 0, 0
    while position < len(data):
        space = data.find(b" ", position, position + 12)
        end = position + int(data[position:space]) if space > position and data[position:space].isdigit() else 0
        equals = data.find(b"=", space + 1, end) if space + 4 <= end <= len(data) else -1
        if equals <= space + 1 or data[end - 1] != 0x0A:
            raise ArchiveError(f"has a damaged PAX header ({where}): each record must be LENGTH KEYWORD=VALUE and "
                               "a newline")
        if data.startswith(b"GNU.sparse.", space + 1):
            raise ArchiveError(f"has a sparse file ({where}, a PAX header with GNU.sparse records): pack it as a "
                               "plain file")
        count += 1
        position = end
    return count


def _count_pax_records(tar: _BoundedTar, records: int) -> None:
    tar.pax_records += records
    if tar.pax_records > MAX_PAX_RECORDS:
        raise ArchiveError(f"has more than {MAX_PAX_RECORDS} PAX records: a bot archive may have at most "
                           f"{MAX_PAX_RECORDS} (a global header's count once for every member after it)")


def _entry(member: tarfile.TarInfo, seen: dict[str, ArchiveEntry]) -> ArchiveEntry | None:
    """The checked entry of one member (None for the archive's root folder itself)."""
    raw = member.name
    encoded = raw.encode("utf-8", "surrogateescape")  # the path as the file system sees it
    if len(encoded) > MAX_PATH_BYTES:
        raise ArchiveError(f"member {quoted(raw)} has a path of {len(encoded)} bytes: a member's path may be at "
                           f"most {MAX_PATH_BYTES} bytes")
    if (longest := max(map(len, encoded.split(b"/")))) > MAX_NAME_BYTES:
        raise ArchiveError(f"member {quoted(raw)} has a name of {longest} bytes in its path: a folder's or file's "
                           f"name may be at most {MAX_NAME_BYTES} bytes")
    if raw.startswith("/"):
        raise ArchiveError(f"member {quoted(raw)} has an absolute path: every member must be relative to the "
                           "archive's root")
    if ".." in raw.split("/"):
        raise ArchiveError(f"member {quoted(raw)} has .. in its path: every member must stay inside the archive")
    path = posixpath.normpath(raw)
    if path == ".":
        if not member.isdir():
            raise ArchiveError(f"member {quoted(raw)} is not a folder")
        return None
    if (depth := path.count("/") + 1) > MAX_PATH_DEPTH:
        raise ArchiveError(f"member {quoted(raw)} is {depth} parts deep: a member's path may have at most "
                           f"{MAX_PATH_DEPTH} parts (its folders and its name)")
    if path in seen:
        raise ArchiveError(f"member {quoted(path)} appears twice: each path may appear once")
    if (member.issym() or member.islnk()) and (length := len(member.linkname.encode("utf-8", "surrogateescape"))) \
            > MAX_PATH_BYTES:
        raise ArchiveError(f"member {quoted(raw)} is a link to a path of {length} bytes: a link's target may be at "
                           f"most {MAX_PATH_BYTES} bytes")
    if member.ischr() or member.isblk():
        raise ArchiveError(f"member {quoted(raw)} is a device file: only files, folders and links are allowed")
    if member.isfifo():
        raise ArchiveError(f"member {quoted(raw)} is a FIFO: only files, folders and links are allowed")
    if member.issparse():
        raise ArchiveError(f"member {quoted(raw)} is a sparse file: pack it as a plain file")
    if member.issym():
        target = member.linkname
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        if target.startswith("/") or resolved == ".." or resolved.startswith("../"):
            raise ArchiveError(f"member {quoted(raw)} is a symbolic link to {quoted(target)}, outside the archive")
        return ArchiveEntry(path, "symlink", member.mode, 0, target)
    if member.islnk():
        target = member.linkname
        if target.startswith("/") or ".." in target.split("/"):
            raise ArchiveError(f"member {quoted(raw)} is a hard link to {quoted(target)}, outside the archive")
        linked = seen.get(posixpath.normpath(target))
        if linked is None or linked.kind != "file":
            raise ArchiveError(f"member {quoted(raw)} is a hard link to {quoted(target)}, which is not a file "
                               "before it in the archive")
        return ArchiveEntry(path, "hardlink", linked.mode, 0, linked.name)
    if member.isdir():
        return ArchiveEntry(path, "dir", member.mode, 0)
    if member.isreg():
        return ArchiveEntry(path, "file", member.mode, member.size)
    raise ArchiveError(f"member {quoted(raw)} is a special entry (tar type {member.type!r}): only files, folders and "
                       "links are allowed")


def _gunzip(content: bytes) -> bytes:
    """The tar stream inside a gzip (every gzip member, as gzip itself reads them), at most MAX_TAR_BYTES.
    zlib is handed GZIP_CHUNK_BYTES at a time, so what a member leaves over (``unused_data``, copied
    by zlib) is at most one chunk, never the rest of the archive: linear in the archive's size."""
    if content[:2] != b"\x1f\x8b":
        raise ArchiveError("is not a gzip'd tar archive (.tar.gz): it does not start as gzip data does")
    out = bytearray()
    view = memoryview(content)
    position, members = 0, 0
    try:
        while position < len(content):
            members += 1
            if members > MAX_GZIP_MEMBERS:
                raise ArchiveError(f"has more than {MAX_GZIP_MEMBERS} gzip members: a bot archive may join at most "
                                   f"{MAX_GZIP_MEMBERS} (gzip writes one: pack it again with tar -czf)")
            inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            while not inflate.eof:
                if position >= len(content):
                    raise ArchiveError("is not a gzip'd tar archive (.tar.gz): the gzip data is cut short")
                chunk = view[position:position + GZIP_CHUNK_BYTES]
                position += len(chunk)
                out += inflate.decompress(chunk, MAX_TAR_BYTES + 1 - len(out))
                if len(out) > MAX_TAR_BYTES or inflate.unconsumed_tail:
                    raise ArchiveError(f"unpacks to more than {MAX_UNPACKED_BYTES // MIB} MiB: a bot archive's "
                                       f"files may add up to at most {MAX_UNPACKED_BYTES // MIB} MiB")
            position -= len(inflate.unused_data)  # the start of what follows this member
            padding = _ZEROS.match(content, position)  # gzip(1) skips zeros between members
            position = padding.end() if padding else position
            if position < len(content) and content[position:position + 2] != b"\x1f\x8b":
                raise ArchiveError("is not a gzip'd tar archive (.tar.gz): other data follows the gzip data")
    except zlib.error as exc:
        raise ArchiveError(f"is not a gzip'd tar archive (.tar.gz): the gzip data is damaged ({exc})") from None
    return bytes(out)


def _too_large(size: int) -> str:
    return (f"is {size} bytes: a bot archive may be at most {MAX_ARCHIVE_BYTES} bytes "
            f"({MAX_ARCHIVE_BYTES // MIB} MiB)")
