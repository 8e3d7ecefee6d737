"""Bot archives: a tournament whose bots are sample bots packed into a .tar.gz plays to the end with
`arena run` (SQLite and PostgreSQL), the records name the archive, the archive is stored once; the
cache unpacks once, reuses, never uses a damaged copy, and survives racing threads and processes;
every refusal is one line and exit status 2 where a user meets it; `arena bots add --archive`."""

from __future__ import annotations

import hashlib
import io
import logging
import os
import stat
import subprocess
import sys
import tarfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import delete, func, select

from referee.packages.archive import (
    MAX_ARCHIVE_BYTES,
    MAX_EXTENSION_HEADERS,
    MAX_GZIP_MEMBERS,
    MAX_HEADER_BYTES,
    MAX_HEADERS_PER_MEMBER,
    MAX_LINK_HOPS,
    MAX_LINK_STEPS,
    MAX_MEMBERS,
    MAX_NAME_BYTES,
    MAX_PAX_BYTES,
    MAX_PAX_DIGITS,
    MAX_PAX_RECORDS,
    MAX_PATH_BYTES,
    MAX_PATH_DEPTH,
    MIB,
    ArchiveError,
    check_archive,
    command_problem,
)
from arena.config import load_config
from arena.errors import quoted
from arena.play.archives import CACHE_ENV, ArchiveCache, tree_digest
from arena.play.runner import open_tournament
from arena.store.models import BotArchive
from arena.store.store import Store
from tests.conftest import sample_bot_path
from tests.support import arena_here
from tests.arena_support import (
    ROOT,
    new_marker,
    run_arena,
    sample_bot_command,
    wait_no_marked_processes,
    write_tournament,
)

PY = sys.executable
GREEDY = f"{PY} greedy_bot.py"  # the sample bots' commands inside the archive (its root is their folder)
RANDOM = f"{PY} random_bot.py"
RUN_TIMEOUT_S = 180
WAIT_S = 60.0
Members = list[tuple[tarfile.TarInfo, bytes | None]]


# --- building archives ------------------------------------------------------------------------


def member(name: str, data: bytes = b"", mode: int = 0o644, kind: bytes = tarfile.REGTYPE,
           link: str = "") -> tuple[tarfile.TarInfo, bytes | None]:
    """One tar member as written, exactly (tarfile's add() would clean the name up)."""
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname = kind, mode, link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, (data if kind == tarfile.REGTYPE else None)


def tar_bytes(members: Members) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def gzipped(data: bytes) -> bytes:
    packer = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


def pack(path: Path, members: Members) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzipped(tar_bytes(members)))
    return path


def sample_members(extra: Members | None = None) -> Members:
    """The Python sample bots and their SDK package, at the archive's root (no byte-code caches)."""
    sdk = ROOT / "sample_bots" / "python"
    files = [(p.name, p) for p in (sample_bot_path("greedy_bot.py"), sample_bot_path("random_bot.py"))]
    files += [(p.relative_to(sdk).as_posix(), p) for p in sorted((sdk / "casino_bot").glob("*.py"))]
    members = [member("casino_bot/", kind=tarfile.DIRTYPE, mode=0o755)]
    members += [member(name, p.read_bytes()) for name, p in files]
    return [*members, *(extra or [])]


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def archive_count(store: Store) -> int:
    with store.session() as s:
        return int(s.scalar(select(func.count()).select_from(BotArchive)) or 0)


# --- a tournament of archived bots ------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'cup.db'}"
    return str(request.getfixturevalue("pg_url"))


def test_a_tournament_of_archived_bots_plays_to_the_end_and_its_records_name_the_archive(
        database: str, tmp_path: Path) -> None:
    archive = pack(tmp_path / "bots" / "sample.tar.gz", sample_members())
    sha = sha256_of(archive)
    marker = new_marker()
    cache = tmp_path / "cache"
    path = write_tournament(tmp_path / "cup.toml", {
        "name": "packed", "players": 2, "games_per_pairing": 2, "seed": 3, "concurrency": 2, "database": database,
    }, [
        {"name": "greedy", "command": GREEDY, "archive": "bots/sample.tar.gz"},
        {"name": "random", "command": RANDOM, "archive": "bots/sample.tar.gz", "env": {"CASINO_BOT_SEED": "1"}},
        {"name": "plain", "command": sample_bot_command("greedy_bot.py")},
    ], time_control={"move_ms": 2000}, marker=marker)
    done = run_arena("run", str(path), env={CACHE_ENV: str(cache)}, timeout=RUN_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    assert wait_no_marked_processes(marker) == [], "bot processes left running"

    store = Store(database)
    try:
        tid = store.tournament_id("packed")
        assert tid is not None
        assert {b.name: b.archive for b in store.bots(tid)} == {"greedy": sha, "random": sha, "plain": None}
        assert archive_count(store) == 1, "one archive for the two bots that use it"
        games = store.games(tid)
        assert len(games) == 6 and all(g.status == "done" for g in games)
        assert all(not (g.result or {}).get("failures") for g in games), [g.result for g in games]
        commands = {"greedy": GREEDY, "random": RANDOM, "plain": sample_bot_command("greedy_bot.py")}
        for _, record in store.records(tid):
            for seat in record["seats"]:
                assert seat["endpoint"] == commands[seat["name"]]
                assert seat.get("archive") == (None if seat["name"] == "plain" else sha), seat
                assert ("archive" in seat) == (seat["name"] != "plain")
    finally:
        store.close()
    assert (cache / sha / "greedy_bot.py").read_bytes() == sample_bot_path("greedy_bot.py").read_bytes()

    listed = run_arena("bots", "list", "-f", str(path))
    assert listed.returncode == 0, listed.stderr
    assert f"{GREEDY}  (archive {sha[:12]})" in listed.stdout
    assert "(archive" not in next(line for line in listed.stdout.splitlines() if line.startswith("plain"))


def test_a_changed_archive_is_taken_like_a_changed_command_and_each_content_is_stored_once(tmp_path: Path) -> None:
    archive = pack(tmp_path / "bot.tar.gz", sample_members())
    first = sha256_of(archive)
    bots = [{"name": "a", "command": GREEDY, "archive": "bot.tar.gz"}, {"name": "b", "command": RANDOM,
                                                                        "archive": "bot.tar.gz"}]
    path = write_tournament(tmp_path / "t.toml", {"name": "one", "seed": 1}, bots)
    store = Store(load_config(path).database)
    try:
        tid = open_tournament(store, load_config(path))
        assert [b.archive for b in store.bots(tid)] == [first, first]

        pack(archive, sample_members([member("NOTES.txt", b"version 2\n")]))
        second = sha256_of(archive)
        assert second != first
        assert open_tournament(store, load_config(path)) == tid  # the same tournament, resumed
        assert [b.archive for b in store.bots(tid)] == [second, second]
        assert archive_count(store) == 2, "the old archive stays (records name it); the new one is added once"

        write_tournament(path, {"name": "two", "seed": 1}, bots)  # another tournament, the same content
        other = open_tournament(store, load_config(path))
        assert other != tid and [b.archive for b in store.bots(other)] == [second, second]
        assert archive_count(store) == 2
        assert store.archive_content(second) == archive.read_bytes()
    finally:
        store.close()


# --- the cache ------------------------------------------------------------------------------------------


CACHE_MEMBERS: Members = [
    member("run.sh", b"#!/bin/sh\necho hi\n", mode=0o700),
    member("data/", kind=tarfile.DIRTYPE, mode=0o700),
    member("data/notes.txt", b"private\n", mode=0o600),
    member("link", kind=tarfile.SYMTYPE, link="data/notes.txt"),
]


@pytest.fixture
def stored(tmp_path: Path) -> Iterator[tuple[Store, str]]:
    """A SQLite store holding one small archive; (store, its sha256)."""
    content = gzipped(tar_bytes(CACHE_MEMBERS))
    sha = hashlib.sha256(content).hexdigest()
    store = Store(f"sqlite:///{tmp_path / 'cache.db'}")
    assert store.put_archive(sha, content) is True
    assert store.put_archive(sha, content) is False, "stored once"
    yield store, sha
    store.close()


def forget(store: Store, sha: str) -> None:
    with store.session() as s, s.begin():
        s.execute(delete(BotArchive).where(BotArchive.sha256 == sha))


def test_first_use_unpacks_readable_by_others_and_later_uses_reuse_the_folder(stored: tuple[Store, str],
                                                                               tmp_path: Path) -> None:
    store, sha = stored
    root = tmp_path / "cache"
    folder = ArchiveCache(root).path_for(store, sha)
    assert folder == root / sha
    assert (folder / "run.sh").read_bytes() == b"#!/bin/sh\necho hi\n"
    assert os.readlink(folder / "link") == "data/notes.txt" and (folder / "link").read_text() == "private\n"
    modes = {p: stat.S_IMODE(os.lstat(folder / p).st_mode) for p in ("", "run.sh", "data", "data/notes.txt")}
    assert modes == {"": 0o555, "run.sh": 0o555, "data": 0o555, "data/notes.txt": 0o444}, modes
    ran = subprocess.run([str(folder / "run.sh")], capture_output=True, text=True, timeout=10, check=True)
    assert ran.stdout == "hi\n"

    inode = os.stat(folder).st_ino
    forget(store, sha)  # a second use reads nothing from the database
    assert ArchiveCache(root).path_for(store, sha) == folder
    assert os.stat(folder).st_ino == inode
    assert sorted(p.name for p in root.iterdir()) == [sha, f"{sha}.tree"], "no temporary folder left"


def _edit(folder: Path) -> None:
    (folder / "data" / "notes.txt").chmod(0o644)
    (folder / "data" / "notes.txt").write_text("tampered\n")


def _delete(folder: Path) -> None:
    (folder / "data").chmod(0o755)
    (folder / "data" / "notes.txt").unlink()


def _add(folder: Path) -> None:
    folder.chmod(0o755)
    (folder / "sitecustomize.py").write_text("print('planted')\n")


@pytest.mark.parametrize("damage", [_edit, _delete, _add], ids=["edited", "deleted", "added"])
def test_a_damaged_cache_folder_is_never_used_but_unpacked_again(
        stored: tuple[Store, str], tmp_path: Path, damage: Callable[[Path], None],
        caplog: pytest.LogCaptureFixture) -> None:
    store, sha = stored
    root = tmp_path / "cache"
    folder = ArchiveCache(root).path_for(store, sha)
    good = tree_digest(folder)
    damage(folder)
    assert tree_digest(folder) != good
    with caplog.at_level(logging.WARNING, logger="arena.play.archives"):
        assert ArchiveCache(root).path_for(store, sha) == folder
    assert tree_digest(folder) == good
    assert (folder / "data" / "notes.txt").read_text() == "private\n"
    assert not (folder / "sitecustomize.py").exists()
    assert any("no longer matches" in r.getMessage() for r in caplog.records), caplog.text

    damage(folder)
    forget(store, sha)  # damaged, and nothing to unpack it from again: refused, not used
    with pytest.raises(ArchiveError, match=f"archive {sha[:12]} is not in the database"):
        ArchiveCache(root).path_for(store, sha)
    assert not folder.exists()


def test_hard_links_unpack_as_links_and_digest_like_copies(tmp_path: Path) -> None:
    """An archive's hard links unpack as links to one file; the tree's digest reads that file once
    (by its inode) and is the digest copies of it would have."""
    links = [member(f"h{i}", kind=tarfile.LNKTYPE, link="big.bin") for i in range(50)]
    content = gzipped(tar_bytes([member("big.bin", b"data " * 1000), *links]))
    sha = hashlib.sha256(content).hexdigest()
    store = Store(f"sqlite:///{tmp_path / 'links.db'}")
    try:
        store.put_archive(sha, content)
        folder = ArchiveCache(tmp_path / "cache").path_for(store, sha)
    finally:
        store.close()
    assert os.stat(folder / "h49").st_ino == os.stat(folder / "big.bin").st_ino
    copies = tmp_path / "copies"
    copies.mkdir()
    for name in ("big.bin", *(f"h{i}" for i in range(50))):
        (copies / name).write_bytes(b"data " * 1000)
        (copies / name).chmod(0o444)
    assert tree_digest(folder) == tree_digest(copies)


def test_a_database_copy_that_does_not_match_its_hash_is_not_unpacked(stored: tuple[Store, str],
                                                                       tmp_path: Path) -> None:
    store, _ = stored
    wrong = "0" * 64
    store.put_archive(wrong, gzipped(tar_bytes(CACHE_MEMBERS)))
    with pytest.raises(ArchiveError, match="does not match its sha256"):
        ArchiveCache(tmp_path / "cache").path_for(store, wrong)
    assert not (tmp_path / "cache" / wrong).exists()


def test_threads_unpacking_one_archive_at_once_all_get_one_good_folder(tmp_path: Path) -> None:
    store, sha = _many_files_store(tmp_path)
    root = tmp_path / "cache"
    start = threading.Barrier(8, timeout=WAIT_S)
    found: list[Path | Exception] = []

    def materialize() -> None:
        start.wait()
        try:
            found.append(ArchiveCache(root).path_for(store, sha))
        except Exception as exc:  # noqa: BLE001 - the assertion below shows it
            found.append(exc)

    threads = [threading.Thread(target=materialize) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S)
    store.close()
    assert found == [root / sha] * 8
    assert sorted(p.name for p in root.iterdir()) == [sha, f"{sha}.tree"]
    assert (root / f"{sha}.tree").read_text(encoding="utf-8") == tree_digest(root / sha)


RACER = """
import sys, time
from pathlib import Path
from arena.play.archives import ArchiveCache, tree_digest
from arena.store.store import Store
url, sha, root, go = sys.argv[1:]
deadline = time.monotonic() + 60
while not Path(go).exists():
    assert time.monotonic() < deadline, "never told to go"
    time.sleep(0.005)
folder = ArchiveCache(Path(root)).path_for(Store(url, read_only=True), sha)
print(folder, tree_digest(folder).strip())
"""


def test_processes_unpacking_one_archive_at_once_all_get_one_good_folder(tmp_path: Path) -> None:
    store, sha = _many_files_store(tmp_path)
    url = store.url
    store.close()
    root, go = tmp_path / "cache", tmp_path / "go"
    procs = [subprocess.Popen([PY, "-c", RACER, url, sha, str(root), str(go)], cwd=ROOT, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(4)]
    time.sleep(0.5)  # let them import (not needed for correctness: they only race more closely)
    go.touch()
    outputs = [p.communicate(timeout=WAIT_S) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [err for _, err in outputs]
    assert len({out for out, _ in outputs}) == 1, outputs
    assert outputs[0][0].split()[0] == str(root / sha)
    assert sorted(p.name for p in root.iterdir()) == [sha, f"{sha}.tree"]


def _many_files_store(tmp_path: Path) -> tuple[Store, str]:
    """A store holding an archive of 400 files (so unpacking takes long enough for racers to meet)."""
    members = [member(f"d{i % 20}/f{i}.txt", f"file {i}\n".encode() * 50) for i in range(400)]
    content = gzipped(tar_bytes(members))
    sha = hashlib.sha256(content).hexdigest()
    store = Store(f"sqlite:///{tmp_path / 'race.db'}")
    store.put_archive(sha, content)
    return store, sha


# --- refusals, one line each, exit status 2 -----------------------------------------------------------------


def _write(data: bytes) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(data)


def _members(*members: tuple[tarfile.TarInfo, bytes | None]) -> Callable[[Path], None]:
    return lambda path: pack(path, list(members))


def _bomb(path: Path) -> None:
    """A small gzip of 200 MiB of zeros (written in pieces: the test holds no 200 MiB either)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1 << 20)
    path.write_bytes(b"".join(packer.compress(block) for _ in range(200)) + packer.flush())


def _too_large_file(path: Path) -> None:
    with open(path, "wb") as file:
        file.truncate(MAX_ARCHIVE_BYTES + 1)  # sparse: costs no disk


def _too_many(path: Path) -> None:
    pack(path, [member(f"f{i}") for i in range(MAX_MEMBERS + 1)])


def _too_many_with_folders(path: Path) -> None:
    """Half the member limit of files, each in a folder of its own that no member lists."""
    pack(path, [member(f"d{i}/f") for i in range(MAX_MEMBERS // 2 + 1)])


def _too_big_unpacked(path: Path) -> None:
    pack(path, [member("big.bin", bytes(64 * 1024 * 1024 + 1))])


def gzip_members(data: bytes, count: int) -> bytes:
    """``data`` cut into ``count`` pieces, each gzip'd on its own and joined, as `cat a.gz b.gz` does."""
    step = -(-len(data) // count)
    return b"".join(gzipped(data[i:i + step]) for i in range(0, len(data), step))


DEEP = "/".join(["d"] * MAX_PATH_DEPTH)  # a path exactly MAX_PATH_DEPTH parts deep
LONG = "n" * MAX_PATH_BYTES  # a path exactly MAX_PATH_BYTES long


def raw_header(name: str, kind: bytes, data: bytes = b"") -> bytes:
    """One header and its data blocks, as given: the PAX and GNU long-name headers tarfile's writer
    would not make."""
    info = tarfile.TarInfo(name)
    info.type, info.size = kind, len(data)
    return info.tobuf(format=tarfile.USTAR_FORMAT) + data + bytes(-len(data) % tarfile.BLOCKSIZE)


def pax_record(keyword: str, value: str) -> bytes:
    """One PAX record, "LENGTH KEYWORD=VALUE\n", LENGTH counting the whole record."""
    body = f" {keyword}={value}\n".encode()
    length = len(body) + 1
    while len(str(length)) + len(body) != length:
        length += 1
    return str(length).encode() + body


def _raw(*parts: bytes) -> Callable[[Path], None]:
    """An archive of raw headers (see raw_header) and a file "bot.py" after them."""
    return _write(gzipped(b"".join(parts) + raw_header("bot.py", tarfile.REGTYPE, b"x") + bytes(1024)))


def _pax(*records: bytes, kind: bytes = tarfile.XHDTYPE) -> bytes:
    return raw_header("PaxHeader", kind, b"".join(records))


def _too_many_gzip_members(path: Path) -> None:
    path.write_bytes(gzip_members(tar_bytes(sample_members()), MAX_GZIP_MEMBERS + 1))


REFUSALS: dict[str, tuple[Callable[[Path], None], str]] = {
    "plain-tar": (_write(tar_bytes(sample_members())),
                  "is not a gzip'd tar archive (.tar.gz): it does not start as gzip data does"),
    "gzip-of-text": (_write(gzipped(b"just some text\n" * 100)),
                     "is not a gzip'd tar archive (.tar.gz): the gzip data holds no valid tar archive"),
    "cut-short": (_write(gzipped(tar_bytes(sample_members()))[:400]),
                  "is not a gzip'd tar archive (.tar.gz): the gzip data is cut short"),
    "absolute-path": (_members(member("/etc/cron.d/evil", b"x")),
                      ('member "/etc/cron.d/evil" has an absolute path: every member must be relative to the '
                       "archive's root")),
    "dot-dot": (_members(member("bot/../../evil", b"x")),
                'member "bot/../../evil" has .. in its path: every member must stay inside the archive'),
    "symlink-absolute": (_members(member("passwd", kind=tarfile.SYMTYPE, link="/etc/passwd")),
                         'member "passwd" is a symbolic link to "/etc/passwd", outside the archive'),
    "symlink-up": (_members(member("sub/", kind=tarfile.DIRTYPE), member("sub/up", kind=tarfile.SYMTYPE,
                                                                          link="../../etc")),
                   'member "sub/up" is a symbolic link to "../../etc", outside the archive'),
    "through-symlink": (_members(member("d", kind=tarfile.SYMTYPE, link="."), member("d/x.py", b"x")),
                        'member "d/x.py" is inside the symbolic link "d": a member may not be written through a link'),
    "hardlink-outside": (_members(member("h", kind=tarfile.LNKTYPE, link="../outside")),
                         'member "h" is a hard link to "../outside", outside the archive'),
    "hardlink-absolute": (_members(member("h", kind=tarfile.LNKTYPE, link="/etc/shadow")),
                          'member "h" is a hard link to "/etc/shadow", outside the archive'),
    "device": (_members(member("null", kind=tarfile.CHRTYPE)),
               'member "null" is a device file: only files, folders and links are allowed'),
    "fifo": (_members(member("pipe", kind=tarfile.FIFOTYPE)),
             'member "pipe" is a FIFO: only files, folders and links are allowed'),
    "too-many-members": (_too_many, (f"has more than {MAX_MEMBERS} members: a bot archive may have at most "
                                     f"{MAX_MEMBERS} files, folders and links")),
    "too-many-with-folders": (_too_many_with_folders,
                              (f"has more than {MAX_MEMBERS} members, counting the folders its paths imply: a bot "
                               f"archive may have at most {MAX_MEMBERS} files, folders and links")),
    "too-big-unpacked": (_too_big_unpacked,
                         "unpacks to more than 64 MiB: a bot archive's files may add up to at most 64 MiB"),
    "too-many-gzip-members": (_too_many_gzip_members,
                              (f"has more than {MAX_GZIP_MEMBERS} gzip members: a bot archive may join at most "
                               f"{MAX_GZIP_MEMBERS} (gzip writes one: pack it again with tar -czf)")),
    "too-deep": (_members(member(DEEP + "/x.py", b"x")),
                 (f"member {quoted(DEEP + '/x.py')} is {MAX_PATH_DEPTH + 1} parts deep: a member's path may have "
                  f"at most {MAX_PATH_DEPTH} parts (its folders and its name)")),
    "path-too-long": (_members(member(LONG + "é", b"x")),
                      (f"member {quoted(LONG + 'é')} has a path of {MAX_PATH_BYTES + 2} bytes: a member's path may "
                       f"be at most {MAX_PATH_BYTES} bytes")),
    "link-target-too-long": (_members(member("s", kind=tarfile.SYMTYPE, link="./" * (MAX_PATH_BYTES // 2) + "x")),
                             (f'member "s" is a link to a path of {MAX_PATH_BYTES + 1} bytes: a link\'s target may '
                              f"be at most {MAX_PATH_BYTES} bytes")),
    "header-too-large": (_raw(_pax(pax_record("comment", "c" * MAX_HEADER_BYTES))),
                         (f"has a PAX header of {MAX_HEADER_BYTES + 15} bytes (at byte 0 of the tar stream): a header "
                          f"may hold at most {MAX_HEADER_BYTES // 1024} KiB")),
    "headers-in-a-row": (_raw(*[raw_header("././@LongLink", tarfile.GNUTYPE_LONGNAME, b"bot.py\0")] * 3),
                         (f"has more than {MAX_HEADERS_PER_MEMBER} PAX or GNU long-name headers in a row (at byte "
                          f"{MAX_HEADERS_PER_MEMBER * 1024} of the tar stream): a member may have at most "
                          f"{MAX_HEADERS_PER_MEMBER}")),
    "extension-headers": (_members(*[member(f"{i:05d}" + "n" * 100, kind=tarfile.SYMTYPE, link="t" * 101)
                                     for i in range(MAX_EXTENSION_HEADERS // 2 + 1)]),
                          (f"has more than {MAX_EXTENSION_HEADERS} PAX and GNU long-name headers: a bot archive may "
                           f"have at most {MAX_EXTENSION_HEADERS}, one a member on average")),
    "pax-digits": (_raw(_pax(pax_record("comment", "7" * (MAX_PAX_DIGITS + 1)))),
                   (f"has a PAX header with more than {MAX_PAX_DIGITS} digits in a row (at byte 0 of the tar stream): "
                    f"at most {MAX_PAX_DIGITS} (longer runs make Python's tarfile slow: CVE-2024-6232)")),
    "pax-damaged": (_raw(_pax(b"99 path=bot.py\n")),
                    ("has a damaged PAX header (at byte 0 of the tar stream): each record must be LENGTH "
                     "KEYWORD=VALUE and a newline")),
    "pax-sparse": (_raw(_pax(pax_record("GNU.sparse.size", "4096"))),
                   ("has a sparse file (at byte 0 of the tar stream, a PAX header with GNU.sparse records): pack it as "
                    "a plain file")),
    "pax-bytes": (_raw(*[_pax(pax_record("comment", "c" * 60_000)) + raw_header(f"f{i}", tarfile.REGTYPE)
                         for i in range(MAX_PAX_BYTES // 60_000 + 1)]),
                  (f"has more than {MAX_PAX_BYTES // MIB} MiB of PAX headers: a bot archive's PAX headers may add up "
                   f"to at most {MAX_PAX_BYTES // MIB} MiB")),
    "pax-records": (_raw(_pax(*[pax_record(f"k{i}", "") for i in range(5000)], kind=tarfile.XGLTYPE),
                         *[raw_header(f"f{i}", tarfile.REGTYPE) for i in range(MAX_PAX_RECORDS // 5000)]),
                    (f"has more than {MAX_PAX_RECORDS} PAX records: a bot archive may have at most {MAX_PAX_RECORDS} "
                     "(a global header's count once for every member after it)")),
    "name-too-long": (_members(member("d/" + "n" * (MAX_NAME_BYTES + 1), b"x")),
                      (f"member {quoted('d/' + 'n' * (MAX_NAME_BYTES + 1))} has a name of {MAX_NAME_BYTES + 1} bytes "
                       f"in its path: a folder's or file's name may be at most {MAX_NAME_BYTES} bytes")),
    "inside-a-file": (_members(member("f", b"x"), member("f/g", b"y")),
                      'member "f/g" is inside the file "f": only a folder may hold members'),
    "link-chain": (_members(member("f", b"x"), member("l0", kind=tarfile.SYMTYPE, link="f"),
                            *[member(f"l{i}", kind=tarfile.SYMTYPE, link=f"l{i - 1}") for i in range(1, 41)]),
                   (f'member "l39" is a symbolic link in a chain of more than {MAX_LINK_HOPS} links, or a loop of '
                    f"them: a link may lead through at most {MAX_LINK_HOPS}")),
    "link-loop": (_members(member("a", kind=tarfile.SYMTYPE, link="b"), member("b", kind=tarfile.SYMTYPE, link="a")),
                  (f'member "a" is a symbolic link in a chain of more than {MAX_LINK_HOPS} links, or a loop of them: '
                   f"a link may lead through at most {MAX_LINK_HOPS}")),
    "link-out-through-a-link": (_members(member("sub/", kind=tarfile.DIRTYPE), member("sub/up", kind=tarfile.SYMTYPE,
                                                                                       link=".."),
                                         member("x", kind=tarfile.SYMTYPE, link="sub/up/../etc")),
                                'member "x" is a symbolic link to "sub/up/../etc", outside the archive'),
    "link-steps": (_members(member("s", kind=tarfile.SYMTYPE, link="."),
                            *[member(f"l{i}", kind=tarfile.SYMTYPE, link="s/" * 100 + "x")
                              for i in range(MAX_LINK_STEPS // 201 + 1)]),
                   (f"has symbolic links that take more than {MAX_LINK_STEPS} steps to resolve (at "
                    f'"l{MAX_LINK_STEPS // 201}"): a bot archive\'s links may take at most {MAX_LINK_STEPS}, each '
                    "part of a target a step, a link met on the way counted each time")),
    "gzip-bomb": (_bomb, "unpacks to more than 64 MiB: a bot archive's files may add up to at most 64 MiB"),
    "too-large-file": (_too_large_file, (f"is {MAX_ARCHIVE_BYTES + 1} bytes: a bot archive may be at most "
                                         f"{MAX_ARCHIVE_BYTES} bytes (64 MiB)")),
    "not-a-file": (lambda path: path.mkdir(), "is not a file"),
    "missing": (lambda path: None, "cannot be read: No such file or directory"),
}


def _one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize("case", REFUSALS)
def test_a_refused_archive_in_a_tournament_file_is_one_line_and_exit_2(case: str, tmp_path: Path) -> None:
    make, message = REFUSALS[case]
    make(tmp_path / "bad.tar.gz")
    path = write_tournament(tmp_path / "cup.toml", {"name": "bad"}, [
        {"name": "packed", "command": GREEDY, "archive": "bad.tar.gz"},
        {"name": "plain", "command": sample_bot_command("random_bot.py")},
    ])
    line = _one_error_line(arena_here("run", str(path), env={CACHE_ENV: str(tmp_path / "cache")}))
    assert line.startswith(f'arena: error: cup.toml: [[bots]] #1 ("packed") archive "bad.tar.gz" {message}'), line
    assert not (tmp_path / "cup.db").exists() and not (tmp_path / "cache").exists(), "refused before anything ran"


BAD_ENTRIES = {
    "cwd-absolute": ({"cwd": "/usr"}, ('cwd "/usr" must be a folder inside the archive: a relative path without .. '
                                       "(with archive, cwd is a folder inside it)")),
    "cwd-up": ({"cwd": "../bots"}, ('cwd "../bots" must be a folder inside the archive: a relative path without .. '
                                    "(with archive, cwd is a folder inside it)")),
    "cwd-missing": ({"cwd": "nope"}, 'cwd "nope" is not a folder in the archive "bot.tar.gz"'),
    "program-missing": ({"command": "./missing_bot"}, 'command is not usable: "./missing_bot" is not in the archive'),
    "program-not-executable": ({"command": "./greedy_bot.py"},
                               ('command is not usable: "./greedy_bot.py" is not executable in the archive (chmod +x '
                                "it before packing, or start it through its interpreter, e.g. python3 bot.py)")),
    "program-is-a-folder": ({"command": "./casino_bot"},
                            'command is not usable: "./casino_bot" is a folder in the archive, not a program'),
    "address": ({"command": None, "address": "localhost:50051"},
                "archive only applies to a command, not to an address"),
}


@pytest.mark.parametrize("case", BAD_ENTRIES)
def test_a_bot_entry_that_cannot_start_from_its_archive_is_one_line_and_exit_2(case: str, tmp_path: Path) -> None:
    pack(tmp_path / "bot.tar.gz", sample_members())
    change, message = BAD_ENTRIES[case]
    entry = {"name": "packed", "command": GREEDY, "archive": "bot.tar.gz", **change}
    path = write_tournament(tmp_path / "cup.toml", {"name": "bad"}, [
        {k: v for k, v in entry.items() if v is not None},
        {"name": "plain", "command": sample_bot_command("random_bot.py")},
    ])
    line = _one_error_line(arena_here("run", str(path)))
    assert line == f'arena: error: cup.toml: [[bots]] #1 ("packed") {message}'


def test_joined_gzip_members_within_the_limit_are_read_as_gzip_reads_them() -> None:
    """gzip(1) reads concatenated members (and zeros between them) as one stream: so does the check,
    up to MAX_GZIP_MEMBERS of them."""
    tar = tar_bytes(sample_members())
    joined = gzip_members(tar, MAX_GZIP_MEMBERS)
    assert joined.count(b"\x1f\x8b\x08") >= MAX_GZIP_MEMBERS
    assert check_archive(joined).entries == check_archive(gzipped(tar)).entries
    padded = b"\0\0\0".join(gzipped(tar[i:i + 4096]) for i in range(0, 4 * 4096, 4096)) + gzipped(tar[4 * 4096:])
    assert check_archive(padded).entries == check_archive(gzipped(tar)).entries


def test_four_megabytes_of_tiny_gzip_members_are_refused_at_the_member_limit() -> None:
    """An archive of about 200,000 one-byte gzip members (4 MB, a valid tar inside) is refused for
    its gzip members, before it is all decompressed."""
    one = {b: gzipped(bytes([b])) for b in range(256)}
    tar = tar_bytes([member("bot.py", b"#" * (4_000_000 // len(one[0]) - 3 * 512))])
    content = b"".join(one[b] for b in tar)
    assert len(content) > 3_900_000
    with pytest.raises(ArchiveError, match=f"^has more than {MAX_GZIP_MEMBERS} gzip members: "):
        check_archive(content)


def test_paths_at_the_depth_and_length_limits_are_accepted_and_folders_are_found() -> None:
    deep_file = DEEP[:-1] + "x.py"
    long_folder = "/".join(["l" * MAX_NAME_BYTES] * 3 + ["l" * (MAX_PATH_BYTES - 4 - 3 * (MAX_NAME_BYTES + 1))])
    checked = check_archive(gzipped(tar_bytes([member(deep_file, b"x"), member(long_folder + "/a.b", b""),
                                               member("e/", kind=tarfile.DIRTYPE), member("f", b"")])))
    assert set(checked.entries) == {deep_file, long_folder + "/a.b", "e", "f"}
    assert all(checked.is_folder(p) for p in ("", ".", "d", DEEP[:-2], long_folder, "e"))
    assert len((long_folder + "/a.b").encode()) == MAX_PATH_BYTES
    assert not any(checked.is_folder(p) for p in ("f", "d/x", deep_file, "l", long_folder + "/a.b", "e/x"))


def test_links_within_the_limits_are_accepted_and_lead_to_the_program() -> None:
    """A chain of MAX_LINK_HOPS links to a program, and a link through a link to a folder (resolved
    as the file system would), are accepted; the command finds its program through the chain."""
    chain = [member("l0", kind=tarfile.SYMTYPE, link="bin/bot")]
    chain += [member(f"l{i}", kind=tarfile.SYMTYPE, link=f"l{i - 1}") for i in range(1, MAX_LINK_HOPS)]
    checked = check_archive(gzipped(tar_bytes([member("bin/bot", b"#!/bin/sh\n", mode=0o755), *chain,
                                               member("current", kind=tarfile.SYMTYPE, link="bin"),
                                               member("run", kind=tarfile.SYMTYPE, link="current/../current/bot")])))
    assert command_problem(checked, f"./l{MAX_LINK_HOPS - 1} --fast", None) is None
    assert checked.entries["run"].target == "current/../current/bot"


def test_a_cwd_inside_the_archive_and_a_program_of_the_archive_are_accepted(tmp_path: Path) -> None:
    pack(tmp_path / "bot.tar.gz", [member("bot/", kind=tarfile.DIRTYPE, mode=0o755),
                                   member("bot/run", b"#!/bin/sh\n", mode=0o755), member("other.txt", b"")])
    path = write_tournament(tmp_path / "cup.toml", {"name": "ok"}, [
        {"name": "packed", "command": "./run --fast", "archive": "bot.tar.gz", "cwd": "./bot/"},
        {"name": "plain", "command": sample_bot_command("random_bot.py")},
    ])
    bot = load_config(path).bots[0]
    assert (bot.cwd, bot.archive, bot.archive_sha256) == ("bot", str(tmp_path / "bot.tar.gz"),
                                                         sha256_of(tmp_path / "bot.tar.gz"))


# --- arena bots add --archive -----------------------------------------------------------------------------------


def test_bots_add_with_an_archive_joins_a_ladder_and_plays_from_it(tmp_path: Path) -> None:
    marker = new_marker()
    archive = pack(tmp_path / "uploads" / "packed.tar.gz", sample_members())
    sha = sha256_of(archive)
    path = write_tournament(tmp_path / "ladder.toml", {"name": "ladder", "seed": 2, "concurrency": 2}, [
        {"name": "greedy", "command": sample_bot_command("greedy_bot.py")},
        {"name": "random", "command": sample_bot_command("random_bot.py")},
    ], time_control={"move_ms": 2000}, marker=marker, ladder={"interval": "1h", "pairings_per_bot": 2})
    env = {CACHE_ENV: str(tmp_path / "cache"), "ARENA_TEST_MARKER": marker}

    added = run_arena("bots", "add", "packed", GREEDY, "--archive", str(archive), "-f", str(path), env=env)
    assert added.returncode == 0, added.stderr
    assert added.stdout == f"added packed: {GREEDY}  (archive {sha[:12]})\n"
    listed = run_arena("bots", "list", "-f", str(path), env=env)
    assert f"{GREEDY}  (archive {sha[:12]})" in listed.stdout, listed.stdout

    served = run_arena("serve", str(path), "--rounds", "1", env=env, timeout=RUN_TIMEOUT_S)
    assert served.returncode == 0, served.stdout[-2000:] + served.stderr
    assert wait_no_marked_processes(marker) == [], "bot processes left running"
    store = Store(load_config(path).database)
    try:
        tid = store.tournament_id("ladder")
        assert tid is not None
        seats = [seat for _, record in store.records(tid) for seat in record["seats"]]
        packed = [seat for seat in seats if seat["name"] == "packed"]
        assert packed and all(seat["archive"] == sha and seat["endpoint"] == GREEDY for seat in packed)
        assert all("archive" not in seat for seat in seats if seat["name"] != "packed")
        games = store.games(tid)
        assert all(g.status == "done" and not (g.result or {}).get("failures") for g in games), games
        assert archive_count(store) == 1
    finally:
        store.close()


@pytest.mark.parametrize("case", ["dot-dot", "program-missing", "address"])
def test_bots_add_refuses_a_bad_archive_in_one_line(case: str, tmp_path: Path) -> None:
    path = write_tournament(tmp_path / "ladder.toml", {"name": "ladder"}, [
        {"name": "greedy", "command": sample_bot_command("greedy_bot.py")},
        {"name": "random", "command": sample_bot_command("random_bot.py")},
    ], ladder={"interval": "1h"})
    archive = tmp_path / "up.tar.gz"
    spec = GREEDY
    if case == "dot-dot":
        pack(archive, [member("../evil.py", b"x")])
        expected = f'--archive {archive} member "../evil.py" has .. in its path: every member must stay inside the archive'
    elif case == "program-missing":
        pack(archive, sample_members())
        spec = "./nothing_here"
        expected = (f'bot command "./nothing_here" cannot start from --archive {archive}: "./nothing_here" is not in '
                    "the archive")
    else:
        pack(archive, sample_members())
        spec = "localhost:50051"
        expected = (f'bot command "localhost:50051" cannot start from --archive {archive}: "localhost:50051" is an '
                    "address: an archive only applies to a command")
    line = _one_error_line(arena_here("bots", "add", "newbie", spec, "--archive", str(archive), "-f", str(path)))
    assert line == f"arena: error: {expected}"
    store = Store(load_config(path, check_programs=False).database, read_only=True)
    try:
        tid = store.tournament_id("ladder")
        assert tid is not None and [b.name for b in store.bots(tid)] == ["greedy", "random"]
        assert archive_count(store) == 0
    finally:
        store.close()


def test_the_archive_key_is_documented_with_an_example() -> None:
    doc = (ROOT / "docs" / "tournaments.md").read_text(encoding="utf-8")
    assert "## Bot archives" in doc and 'archive = "' in doc
    section = doc[doc.index("## Bot archives"):]
    for name in ("ARENA_ARCHIVE_CACHE", "64 MiB", "10,000", "bots add", "--archive"):
        assert name in section, name
