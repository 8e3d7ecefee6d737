"""The sandbox of the arena's bots: the tournament's ``[sandbox]`` settings, with the arena's own
files added to its private paths, so that no bot is ever shown them (referee/sandbox/view.py): the
database (a SQLite file: every stored archive, record and token hash), the bot logs, and the
archive cache's root (every other bot's unpacked files)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from referee.bots.launcher import Launcher
from referee.packages.build import default_build_root
from referee.packages.load import Packages
from referee.packages.runtimes import runtimes_from_table
from referee.sandbox import SandboxLauncher, SandboxSettings, make_launcher

from ..config import ConfigError
from ..errors import quoted
from .archives import default_cache_root
from .executor import SeatBot


def arena_private_paths(database_file: str | None, logs_dir: Path | None,
                        cache_root: Path | None = None) -> tuple[str, ...]:
    """The arena's own files on this machine: ``database_file`` (None for a server database),
    ``logs_dir``, the archive cache's root (``cache_root``, default: this process's) and the
    package builds' (a bot's own built folder inside it is still its own)."""
    paths = [database_file, str(logs_dir) if logs_dir else None, str(cache_root or default_cache_root()),
             str(default_build_root())]
    return tuple(os.path.abspath(p) for p in paths if p)


def arena_sandbox(settings: SandboxSettings, database_file: str | None, logs_dir: Path | None,
                  cache_root: Path | None = None) -> SandboxSettings:
    """``settings`` with the arena's own files among its private paths."""
    extra = [p for p in arena_private_paths(database_file, logs_dir, cache_root) if p not in settings.private]
    return settings.replace(private=(*settings.private, *extra)) if extra else settings


def arena_launcher(settings: SandboxSettings, database_file: str | None, logs_dir: Path | None,
                   cache_root: Path | None = None) -> Launcher:
    """The launcher of the arena's bots: ``arena_sandbox``'s settings on this machine."""
    return make_launcher(arena_sandbox(settings, database_file, logs_dir, cache_root))


def refuse_hidden_views(launcher: Launcher, bots: Iterable[SeatBot]) -> None:
    """Before any game: a bot this machine's sandbox would refuse to start for what it would be
    shown (its folder holds the database or the logs, say) stops the run with one line (exit 2),
    rather than forfeiting every game of that bot for the operator's setup."""
    if not isinstance(launcher, SandboxLauncher):
        return
    for bot in bots:
        if problem := launcher.view_problem(bot.endpoint):
            raise ConfigError(f"bot {quoted(bot.name)} cannot be started here: {problem}")


def arena_packages(settings: SandboxSettings, runtimes: Mapping[str, Any], database_file: str | None,
                   logs_dir: Path | None, cache_root: Path | None = None) -> Packages:
    """How this machine builds and runs the arena's bot packages: the tournament's sandbox (the
    arena's files private) and its ``[runtimes]`` (as written; resolved here, on this machine)."""
    table = dict(runtimes) if runtimes else None
    return Packages(arena_sandbox(settings, database_file, logs_dir, cache_root),
                    runtimes_from_table(table, Path("/")))
