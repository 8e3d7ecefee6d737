"""Bot archives on a machine that plays games: stored in the database once by sha256
(``store_archive_file``), unpacked on first use into a local cache (``ArchiveCache``), and the
endpoint a bot row starts from here (``bot_endpoint``). docs/tournaments.md, "Bot archives".

The cache itself (atomic unpacking, digests, damaged copies unpacked again) is the referee's
(referee/packages/cache.py): a bot package is unpacked the same way.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from referee.bots.endpoint import BotEndpoint
from referee.packages.archive import ArchiveError, check_archive, read_archive_file
from referee.packages.cache import CACHE_ENV, UnpackCache, default_cache_root  # noqa: F401  (CACHE_ENV: tests)
from referee.packages.load import Packages, package_archive
from referee.packages.manifest import PackageError
from referee.packages.tree import tree_digest  # noqa: F401  (the tests and the bench find it here)

from ..config import PACKAGE_SPEC, ConfigError, TournamentConfig
from ..errors import quoted, shown
from ..store.store import BotRow, Store


class ArchiveCache(UnpackCache):
    """The arena's bot archives unpacked on this machine (referee/packages/cache.py), fetched from
    the database the first time."""

    def path_for(self, store: Store, sha256: str) -> Path:  # type: ignore[override]
        """The folder holding archive ``sha256`` unpacked, unpacking it from ``store`` the first time;
        ArchiveError when the database has no such archive, its copy does not match its hash, or
        the archive is refused (referee/packages/archive.py)."""
        return super().path_for(sha256, lambda: store.archive_content(sha256), f"the database {store.url_for_people}")


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
        try:
            if bot.archive is not None:
                hashes[bot.name] = store_archive_file(store, bot.archive, bot.archive_sha256)
            elif bot.package is not None:
                hashes[bot.name] = store_package(store, bot.package, bot.archive_sha256)
        except ArchiveError as exc:
            kind, path = ("archive", bot.archive) if bot.archive is not None else ("package", bot.package or "")
            raise ConfigError(f"{shown(config.path.name)}: [[bots]] #{number} ({quoted(bot.name)}) {kind} "
                              f"{shown(path)} {exc}") from None
    return hashes


def store_package(store: Store, path: str | Path, expected: str | None = None) -> str:
    """Pack (a folder) or read (a .tar.gz) the bot package at ``path``, check it as an upload is
    checked, store it (once) and return its sha256; ``expected`` as for ``store_archive_file``."""
    if expected is not None and store.has_archive(expected):
        return expected
    content, checked = package_archive(path)
    if expected is not None and checked.sha256 != expected:
        raise ArchiveError("changed while the tournament was being opened: run the command again")
    store.put_archive(checked.sha256, content)
    return checked.sha256


def bot_endpoint(store: Store, row: BotRow, cache: ArchiveCache, packages: Packages | None = None) -> BotEndpoint:
    """How this machine starts a stored bot: its command as stored, or for a bot with an archive,
    its command in the archive unpacked here (``cwd`` inside it) carrying the archive's hash; a bot
    package is built here by ``packages`` (once per machine) and run as its bot.toml says, with
    the row's ``env`` added (a tournament's seed, say). Call it from a thread that runs no event
    loop: a build runs in one of its own."""
    if row.archive is None:  # written by a tournament file or `arena ... bots add` (which refuses in-process)
        return BotEndpoint.parse(row.spec, cwd=row.cwd, env=row.env, trusted=True)
    root = cache.path_for(store, row.archive)
    if row.spec == PACKAGE_SPEC:
        if packages is None:
            raise PackageError(f"bot {quoted(row.name)} is a bot package: this machine was given no way to build it")
        made = packages.bot_sync(root, row.name, row.archive).endpoint
        runtime_env = {name for name, _ in made.env}
        extra = {k: v for k, v in row.env.items() if k not in runtime_env}
        return dataclasses.replace(made, env=tuple(sorted({**dict(made.env), **extra}.items())))
    cwd = root / row.cwd if row.cwd else root
    return dataclasses.replace(BotEndpoint.parse(row.spec, cwd=str(cwd), env=row.env), archive=row.archive)
