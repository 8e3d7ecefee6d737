"""Bot-archive check benchmark: the CPU time of ``check_archive`` (arena/bot_archive.py) on
adversarial archives built in memory, each as large as an upload may be.

Usage: python bench/bench_archive_check.py [--sizes 10,64] [--runs 5] [--timeout 120] [--cases A,B]
                                           [--code DIR] [--unpack]

Every case is built once per size (sizes in MiB: the web's upload cap is 10, the archive format's
64) and checked ``--runs`` times in a process of its own; a run that takes over 10 s is not
repeated, and a process that takes over ``--timeout`` seconds is stopped and reported as such.
A case whose shape does not grow with the size (10,000 members, 2,000 folders deep) is built once,
at the first size it fits. Prints, per archive, its size, the median CPU time (``time.process_time``)
of the check with the range, and whether it was accepted or refused and why.

``--code DIR`` measures another checkout's code (put first on the path: the same interpreter and
packages), e.g. the code before a change: ``git archive COMMIT arena referee casino | tar -x -C DIR``.
``--unpack`` also times, for each accepted archive, unpacking it into an archive cache from a SQLite
database (``ArchiveCache.path_for``: the checks again, ``extractall``, the modes, the tree's digest)
and the tree's digest alone (what every later process start pays to trust the folder).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MIB = 1 << 20
SLOW_RUN_S = 10.0  # a run this slow is not repeated
MEMBERS = 10_000  # the member cap (MAX_MEMBERS)
UNPACKED = 64 * MIB  # the unpacked cap (MAX_UNPACKED_BYTES)


# --- building archives -----------------------------------------------------------------------------------


def header(name: str, kind: bytes = tarfile.REGTYPE, size: int = 0, link: str = "", mode: int = 0o644) -> bytes:
    """One ustar header block, exactly as given (names over 100 bytes need a long-name header first)."""
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname, info.mode = kind, size, link, mode
    return info.tobuf(format=tarfile.USTAR_FORMAT) if max(len(name), len(link)) <= 100 else _raw_header(info)


def _raw_header(info: tarfile.TarInfo) -> bytes:
    """A header whose name and link fields hold the first 100 bytes of a long name or target (the
    long-name headers before it have all)."""
    short = tarfile.TarInfo(info.name[:100])
    short.type, short.size, short.linkname, short.mode = info.type, info.size, info.linkname[:100], info.mode
    return short.tobuf(format=tarfile.USTAR_FORMAT)


def padded(data: bytes) -> bytes:
    return data + bytes(-len(data) % tarfile.BLOCKSIZE)


def file_member(name: str, data: bytes = b"", mode: int = 0o644) -> bytes:
    return header(name, size=len(data), mode=mode) + padded(data)


def gnu_long(name: str, kind: bytes = tarfile.GNUTYPE_LONGNAME) -> bytes:
    """A GNU long-name (or long-link) header holding ``name``, for the header after it."""
    data = name.encode() + b"\0"
    return header("././@LongLink", kind, len(data)) + padded(data)


def pax(records: bytes, kind: bytes = tarfile.XHDTYPE) -> bytes:
    """A PAX extended (or global) header holding ``records`` as they are (well formed or not)."""
    return header("PaxHeader", kind, len(records)) + padded(records)


def pax_record(keyword: str, value: str) -> bytes:
    body = f" {keyword}={value}\n".encode()
    length = len(body) + 1
    while len(str(length)) + len(body) != length:
        length += 1
    return str(length).encode() + body


END = bytes(2 * tarfile.BLOCKSIZE)


def gzip(data: bytes, level: int = 6) -> bytes:
    packer = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


def gzip_pieces(pieces: list[bytes], level: int = 6) -> bytes:
    """One gzip stream of ``pieces`` (a large tar built in parts, without holding it twice)."""
    packer = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return b"".join(packer.compress(p) for p in pieces) + packer.flush()


def many_gzip_members(cap: int) -> bytes:
    """A valid tar (one file) cut into 1-byte pieces, each its own gzip member: ``cat``-joined gzip,
    as gzip(1) reads it, about 21 bytes per member, as many as fill ``cap``."""
    one = {b: gzip(bytes([b]), 1) for b in range(256)}
    members = cap // len(one[0])
    data = bytes(max(0, members - 4 * tarfile.BLOCKSIZE) // tarfile.BLOCKSIZE * tarfile.BLOCKSIZE)
    tar = file_member("bot.py", data) + END
    return b"".join(one[b] for b in tar)


def sixteen_gzip_members(cap: int) -> bytes:
    """The largest archive of 16 gzip members that fits ``cap``: random bytes, incompressible."""
    size = min(UNPACKED, cap - 64 * 1024)
    tar = file_member("data.bin", os.urandom(size)) + END
    step = -(-len(tar) // 16)
    return b"".join(gzip(tar[i:i + step], 1) for i in range(0, len(tar), step))


def deep_chain(_: int) -> bytes:
    """The audit's case: 2,000 folders, each inside the one before (2,000 levels deep)."""
    parts, names = [], []
    for _level in range(2000):
        names.append("d")
        path = "/".join(names)
        if len(path) > 100:
            parts.append(gnu_long(path))
        parts.append(header(path, tarfile.DIRTYPE, mode=0o755))
    return gzip_pieces([*parts, END])


def deep_chains(_: int) -> bytes:
    """156 folder chains 63 deep, a file at the bottom of each (9,984 members, every folder implied),
    paths of 1,024 bytes, and a symbolic link: the most folders a path walk meets."""
    parts = [header("link", tarfile.SYMTYPE, link="c000")]
    for i in range(MEMBERS // 64):
        path = "/".join([f"c{i:03d}", *(f"{j:02d}" + "x" * 13 for j in range(62)), "f" * 15])
        parts += [gnu_long(path), header(path)]
    return gzip_pieces([*parts, END])


def implied_folders(_: int) -> bytes:
    """10,000 files, each at the bottom of a folder chain 63 deep of its own that no member lists
    (unpacking makes 630,000 folders)."""
    parts = []
    for i in range(MEMBERS):
        path = "/".join([f"{i:05d}", *(f"{j:02d}" + "x" * 13 for j in range(62)), "f" * 15])
        parts += [gnu_long(path), header(path)]
    return gzip_pieces([*parts, END])


def deep_files(_: int) -> bytes:
    """One folder chain 63 deep and 9,936 files at its bottom, each path 1,024 bytes."""
    folders = "/".join(f"{j:02d}" + "x" * 13 for j in range(63))
    paths = [f"{folders}/{i:04d}" + "f" * 11 for i in range(MEMBERS - 64)]
    return gzip_pieces([*(gnu_long(p) + header(p) for p in paths), END])


def many_files(count: int) -> Callable[[int], bytes]:
    def build(_: int) -> bytes:
        return gzip_pieces([*(header(f"f{i:05d}") for i in range(count)), END])
    return build


def random_file(cap: int) -> bytes:
    """One file of 64 MiB: as many random (incompressible) bytes as fit ``cap``, then zeros."""
    noise = os.urandom(min(UNPACKED, cap - 64 * 1024))
    data = noise + bytes(UNPACKED - len(noise))
    return gzip_pieces([header("data.bin", size=len(data)), data, END], 1)


def zeros(size: int) -> Callable[[int], bytes]:
    def build(_: int) -> bytes:
        zero = bytes(MIB)
        return gzip_pieces([header("zeros.bin", size=size), *([zero] * (size // MIB)), bytes(size % MIB), END], 9)
    return build


def long_names_gnu(_: int) -> bytes:
    """9,997 files with paths of 1,024 bytes (three shared folders of 255-byte names, the file's
    name), in GNU tar's long-name headers."""
    return gzip_pieces([*(gnu_long(name) + header(name) for name in _long_names()), END])


def long_links_gnu(_: int) -> bytes:
    """Symbolic links with paths of 1,024 bytes and targets of 1,024 bytes, a long-link and a
    long-name header before each (two in a row, as GNU tar writes them), as many as the limit on
    such headers allows."""
    target = "/".join(["t" * 255] * 4)
    return gzip_pieces([*(gnu_long(target, tarfile.GNUTYPE_LONGLINK) + gnu_long(name)
                          + header(name, tarfile.SYMTYPE, link=target) for name in _long_names(_pairs())), END])


def _pairs() -> int:
    """How many members may have two extension headers each (the code's MAX_EXTENSION_HEADERS, if any)."""
    from referee.packages import archive as bot_archive

    return min(MEMBERS - 3, getattr(bot_archive, "MAX_EXTENSION_HEADERS", 2 * MEMBERS) // 2)


def long_names_pax(_: int) -> bytes:
    """The same paths as long-names-gnu in PAX headers (as tarfile and bsdtar write them)."""
    return gzip_pieces([*(pax(pax_record("path", name)) + header(name) for name in _long_names()), END])


def _long_names(count: int = MEMBERS - 3) -> list[str]:
    folders = "/".join(["n" * 255] * 3)
    return [f"{folders}/{i:04d}" + "n" * (1024 - len(folders) - 6) for i in range(count)]


def pax_allowed(_: int, data: bytes = b"") -> bytes:
    """10,000 symbolic links, each after a PAX header holding its 9-part target (a linkpath record)
    and as many records and digit runs (MAX_PAX_DIGITS, then a letter) as MAX_PAX_BYTES and
    MAX_PAX_RECORDS allow shared out: the most PAX work the limits allow at one header a member."""
    from referee.packages import archive as bot_archive

    digits = getattr(bot_archive, "MAX_PAX_DIGITS", 20)
    records = getattr(bot_archive, "MAX_PAX_RECORDS", 100_000) // MEMBERS
    header_bytes = getattr(bot_archive, "MAX_PAX_BYTES", 8 * MIB) // MEMBERS
    small = b"".join(pax_record(f"k{j}", "") for j in range(records - 2))
    small += pax_record("linkpath", "/".join(["1" * digits] * 9))
    comment = pax_record("comment", (("1" * digits + "a") * 1000)[:header_bytes - len(small) - 20])
    links = [pax(small + comment) + header(f"l{i:05d}", tarfile.SYMTYPE, link="x") for i in range(MEMBERS - 1)]
    return gzip_pieces([*links, file_member("data.bin", data), END], 1)


def pax_allowed_and_data(cap: int) -> bytes:
    """pax-allowed, its last member a file of random bytes filling the cap: the most work on headers
    and on bytes at once."""
    return pax_allowed(cap, os.urandom(cap - 512 * 1024))


def pax_and_long_links(_: int) -> bytes:
    """Symbolic links of 1,024-byte paths (GNU long-name headers), each after a PAX header holding its
    9-part target (a linkpath record) and as many records and digit runs as the limits allow shared
    out: three headers a member, as many as the limit on extension headers allows."""
    from referee.packages import archive as bot_archive

    count = _pairs()
    digits = getattr(bot_archive, "MAX_PAX_DIGITS", 20)
    records = getattr(bot_archive, "MAX_PAX_RECORDS", 100_000) // count
    header_bytes = getattr(bot_archive, "MAX_PAX_BYTES", 8 * MIB) // count
    small = b"".join(pax_record(f"k{j}", "") for j in range(records - 2))
    small += pax_record("linkpath", "/".join(["1" * digits] * 9))
    comment = pax_record("comment", (("1" * digits + "a") * 1000)[:header_bytes - len(small) - 20])
    return gzip_pieces([*(pax(small + comment) + gnu_long(name) + header(name, tarfile.SYMTYPE, link="x")
                          for name in _long_names(count)), END])


def pax_digits(_: int) -> bytes:
    """10,000 files, each after a PAX header of 4 KiB of digits (CPython's tarfile before 3.11.10
    searches it with a regular expression that is quadratic in a run of digits: CVE-2024-6232)."""
    digits = b"1" * 4096
    return gzip_pieces([*(pax(digits) + header(f"f{i:05d}") for i in range(MEMBERS)), END])


def pax_records(_: int) -> bytes:
    """10,000 files, each after a PAX header of 8 KiB of the shortest records (tarfile parses each
    record in Python: a few microseconds each)."""
    records = b"".join(pax_record(f"k{j:04d}", "") for j in range(8192 // 10))
    return gzip_pieces([*(pax(records) + header(f"f{i:05d}") for i in range(MEMBERS)), END])


def pax_global(_: int) -> bytes:
    """A global PAX header of 64 KiB of records, then 10,000 files (tarfile applies every global
    record to every member after it)."""
    records = b"".join(pax_record(f"k{j:05d}", "") for j in range(65536 // 11))
    return gzip_pieces([pax(records, tarfile.XGLTYPE), *(header(f"f{i:05d}") for i in range(MEMBERS)), END])


def header_chain(_: int) -> bytes:
    """2,000 GNU long-name headers in a row before one file (tarfile reads them recursively)."""
    return gzip_pieces([gnu_long("a") * 2000, header("a"), END])


def hard_links(cap: int) -> bytes:
    """A file of 63 MiB (as many random bytes as fit ``cap``, then zeros), then 9,999 hard links to it
    (a hard link adds nothing to the unpacked size)."""
    noise = os.urandom(min(UNPACKED, cap - MIB))
    data = noise + bytes(UNPACKED - MIB - len(noise))
    links = [header(f"h{i:04d}", tarfile.LNKTYPE, link="big.bin") for i in range(MEMBERS - 1)]
    return gzip_pieces([header("big.bin", size=len(data)), data, *links, END], 1)


def symlink_chain(_: int) -> bytes:
    """10,000 symbolic links, each to the one before (the first to a file)."""
    parts = [file_member("f", b"#!/bin/sh\n", 0o755), header("l0000", tarfile.SYMTYPE, link="f")]
    parts += [header(f"l{i:04d}", tarfile.SYMTYPE, link=f"l{i - 1:04d}") for i in range(1, MEMBERS - 1)]
    return gzip_pieces([*parts, END])


def symlinks_allowed(_: int) -> bytes:
    """A chain of 39 links, and as many links to its end (chains of 40) as 100,000 steps allow (each
    resolution walks the chain): the most link resolving the limits allow, for the unpacker's
    realpath too."""
    parts = [file_member("f", b"#!/bin/sh\n", 0o755), header("c00", tarfile.SYMTYPE, link="f")]
    parts += [header(f"c{i:02d}", tarfile.SYMTYPE, link=f"c{i - 1:02d}") for i in range(1, 39)]
    chain = 39 * 40 // 2
    parts += [header(f"l{i:04d}", tarfile.SYMTYPE, link="c38") for i in range((100_000 - chain) // 40)]
    return gzip_pieces([*parts, END])


def symlinks_deep_targets(_: int) -> bytes:
    """A link to the archive's root, and 9,998 links whose targets go through it 300 times."""
    target = "/".join(["s"] * 300) + "/f"
    parts = [file_member("f", b"x"), header("s", tarfile.SYMTYPE, link=".")]
    parts += [gnu_long(target, tarfile.GNUTYPE_LONGLINK) + header(f"l{i:04d}", tarfile.SYMTYPE, link=target)
              for i in range(MEMBERS - 2)]
    return gzip_pieces([*parts, END])


@dataclass(frozen=True)
class Case:
    """An adversarial archive: its name, how it is built for a size cap, whether it grows with the cap,
    and the bot command checked against it (``command_problem``), if any."""

    name: str
    build: Callable[[int], bytes]
    scales: bool = False
    command: str | None = None


CASES = [
    Case("gzip-members", many_gzip_members, scales=True),
    Case("gzip-16-members", sixteen_gzip_members, scales=True),
    Case("deep-2000", deep_chain),
    Case("deep-64-chains", deep_chains),
    Case("deep-64-files", deep_files),
    Case("implied-folders", implied_folders),
    Case("members-10000", many_files(MEMBERS)),
    Case("members-10001", many_files(MEMBERS + 1)),
    Case("random-64MiB-file", random_file, scales=True),
    Case("zeros-64MiB-file", zeros(UNPACKED)),
    Case("gzip-bomb-200MiB", zeros(200 * MIB)),
    Case("long-names-gnu", long_names_gnu),
    Case("long-links-gnu", long_links_gnu),
    Case("long-names-pax", long_names_pax),
    Case("pax-allowed", pax_allowed),
    Case("pax-allowed-and-data", pax_allowed_and_data, scales=True),
    Case("pax-and-long-links", pax_and_long_links),
    Case("pax-digits", pax_digits),
    Case("pax-records", pax_records),
    Case("pax-global", pax_global),
    Case("header-chain", header_chain),
    Case("hard-links", hard_links, scales=True),
    Case("symlink-chain", symlink_chain, command="./l9998"),
    Case("symlinks-allowed", symlinks_allowed, command="./l0000"),
    Case("symlink-deep-targets", symlinks_deep_targets, command="./l0000"),
]


# --- measuring (in a process of its own) -------------------------------------------------------------------


def child(case: Case, cap: int, runs: int, unpack: bool) -> dict[str, Any]:
    """Build ``case`` for ``cap``, check it ``runs`` times; the figures as a dict (printed as JSON)."""
    from referee.packages.archive import ArchiveError, check_archive, command_problem

    content = case.build(cap)
    times: list[float] = []
    verdict = ""
    for _ in range(runs):
        start = time.process_time()
        try:
            checked = check_archive(content)
            verdict = f"accepted: {len(checked.entries)} members, {checked.unpacked_bytes} bytes"
        except ArchiveError as exc:
            checked, verdict = None, f"refused: {exc}"
        except Exception as exc:  # noqa: BLE001 - what the check let through is the finding
            checked, verdict = None, f"CRASHED: {type(exc).__name__}: {exc}"
        times.append(time.process_time() - start)
        if times[-1] > SLOW_RUN_S:
            break
    result: dict[str, Any] = {"size": len(content), "times": times, "verdict": verdict}
    if checked is not None and case.command:
        start = time.process_time()
        result["command"] = f"{case.command}: {command_problem(checked, case.command, None) or 'usable'}"
        result["command_s"] = time.process_time() - start
    if checked is not None and unpack:
        result.update(unpack_times(content, checked.sha256))
    return result


def unpack_times(content: bytes, sha256: str) -> dict[str, Any]:
    """CPU and wall seconds of a first unpacking into an empty cache, and of the tree digest alone."""
    from arena.play.archives import ArchiveCache, tree_digest
    from arena.store.store import Store

    with tempfile.TemporaryDirectory(prefix="casino-bench-") as folder:
        store = Store(f"sqlite:///{folder}/archives.db")
        try:
            store.put_archive(sha256, content)
            cache = ArchiveCache(Path(folder) / "cache")
            cpu, wall = time.process_time(), time.perf_counter()
            try:
                unpacked = cache.path_for(store, sha256)
            except Exception as exc:  # noqa: BLE001 - reported, not raised
                return {"unpack": f"failed: {type(exc).__name__}: {exc}"}
            result: dict[str, Any] = {"unpack_s": time.process_time() - cpu,
                                         "unpack_wall_s": time.perf_counter() - wall}
            cpu = time.process_time()
            tree_digest(unpacked)
            result["digest_s"] = time.process_time() - cpu
            return result
        finally:
            store.close()


def measure(case: Case, cap: int, args: argparse.Namespace) -> dict[str, Any]:
    """``child`` in a process of its own, stopped after ``--timeout`` seconds."""
    argv = [sys.executable, __file__, "--child", case.name, "--sizes", str(cap / MIB), "--runs", str(args.runs)]
    if args.unpack:
        argv.append("--unpack")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(args.code or ROOT), os.environ.get("PYTHONPATH", "")])}
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=args.timeout, env=env, check=False)
    except subprocess.TimeoutExpired:
        return {"timeout": args.timeout}
    if done.returncode != 0:
        return {"failed": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def report(case: Case, cap: int, figures: dict[str, Any]) -> str:
    """One archive's line(s): its size, the check's median CPU time and range, its verdict."""
    label = f"{case.name:<22} {'cap ' + _mib(cap) if case.scales else 'fixed':<13}"
    if "timeout" in figures:
        return f"{label} over {figures['timeout']} s (stopped)"
    if "failed" in figures:
        return f"{label} the process failed: {figures['failed']}"
    times = [float(t) for t in figures["times"]]
    line = (f"{label} {_mib(int(figures['size'])):>9}  check {statistics.median(times):8.3f} s "
            f"({len(times)} runs, {min(times):.3f}-{max(times):.3f})  {_short(str(figures['verdict']))}")
    indent = "\n" + " " * 37
    if "command_s" in figures:
        line += f"{indent}command_problem {figures['command_s']:.3f} s: {figures['command']}"
    if "unpack_s" in figures:
        line += (f"{indent}unpack {figures['unpack_s']:.2f} s CPU ({figures['unpack_wall_s']:.2f} s wall), "
                 f"tree digest alone {figures['digest_s']:.2f} s CPU")
    elif "unpack" in figures:
        line += f"{indent}unpack {_short(str(figures['unpack']))}"
    return line


def _mib(size: int) -> str:
    return f"{size / MIB:.2f} MiB" if size < 10 * MIB else f"{size / MIB:.1f} MiB"


def _short(text: str, limit: int = 150) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,64", help="archive size caps in MiB, comma-separated (default 10,64)")
    parser.add_argument("--runs", type=int, default=5, help="checks per archive; the median is shown (default 5)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a case's process is stopped")
    parser.add_argument("--cases", help=f"comma-separated, of {', '.join(c.name for c in CASES)} (default all)")
    parser.add_argument("--code", type=Path, help="another checkout whose code to measure (default this one)")
    parser.add_argument("--unpack", action="store_true", help="also time unpacking each accepted archive")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(float(s) * MIB) for s in args.sizes.split(",")]
    by_name = {c.name: c for c in CASES}
    if args.child:
        print(json.dumps(child(by_name[args.child], sizes[0], args.runs, args.unpack)))
        return 0
    names = args.cases.split(",") if args.cases else list(by_name)
    unknown = [n for n in names if n not in by_name]
    if unknown:
        parser.error(f"unknown cases: {', '.join(unknown)}")
    print(f"Python {platform.python_version()}, {os.cpu_count()} CPUs; code: {args.code or ROOT}; "
          f"median of {args.runs} runs (a run over {SLOW_RUN_S:.0f} s is not repeated)")
    for name in names:
        case = by_name[name]
        for cap in sizes if case.scales else sizes[:1]:
            print(report(case, cap, measure(case, cap, args)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
