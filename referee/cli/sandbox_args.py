"""The sandbox's flags of ``referee match``, ``check`` and ``serve``: the mode, the main limits,
extra read-only paths, or the ``[sandbox]`` table of a tournament file (so ``check`` runs a bot
under exactly the sandbox a tournament will)."""

from __future__ import annotations

import argparse
import os
import tomllib
from pathlib import Path

from ..bots.launcher import Launcher
from ..packages.runtimes import Runtime
from ..errors import UsageError
from ..sandbox import MODES, SandboxSettings, SandboxSettingsError, make_launcher
from ..sandbox.settings import PATH_SETTINGS  # a relative path in them: from the tournament file's folder
from .files import read_text_file

MAX_TOURNAMENT_FILE_BYTES = 1 << 20
FLAGS = {"--memory": "memory_mib", "--processes": "processes", "--cpus": "cpus", "--log-cap": "log_cap_mib",
         "--read-only": "read_only paths", "--private": "private paths"}


def add_sandbox_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("sandbox (docs/sandbox.md)")
    g.add_argument("--sandbox", choices=MODES, help="auto (default: bwrap where it works, else limits), bwrap, "
                   "limits, or none (no sandbox: a warning)")
    g.add_argument("--memory", type=int, metavar="MIB", help="memory of each bot (default 512)")
    g.add_argument("--processes", type=int, metavar="N", help="processes and threads of each bot (default 128)")
    g.add_argument("--cpus", type=float, metavar="CORES", help="CPU bandwidth of each bot (default 1)")
    g.add_argument("--log-cap", type=float, metavar="MIB", help="of each bot's output kept in its log (default 4)")
    g.add_argument("--read-only", action="append", metavar="PATH", default=None,
                   help="a host path bots may also read (repeat for more), e.g. a runtime outside their folder")
    g.add_argument("--private", action="append", metavar="PATH", default=None,
                   help="a host path no bot may be shown, nor a folder holding it (repeat for more), e.g. a "
                        "database or a folder of secrets beside the bots")
    g.add_argument("--sandbox-from", metavar="TOURNAMENT_FILE",
                   help="the [sandbox] table of this tournament file (flags given here override it)")


def settings_from_args(args: argparse.Namespace) -> SandboxSettings:
    """The sandbox settings the flags ask for; UsageError (exit 2, one line per problem) when bad."""
    settings = SandboxSettings()
    if args.sandbox_from:
        text = read_text_file(args.sandbox_from, "tournament file", MAX_TOURNAMENT_FILE_BYTES)
        try:
            table = tomllib.loads(text).get("sandbox", {})
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"tournament file {args.sandbox_from} is not TOML: {exc}") from None
        if not isinstance(table, dict):
            raise UsageError(f"{args.sandbox_from}: sandbox must be a table ([sandbox] section)")
        folder = os.path.dirname(os.path.abspath(args.sandbox_from))
        table = {**table, **{key: [os.path.join(folder, p) for p in table[key]] for key in PATH_SETTINGS
                             if isinstance(table.get(key), list) and all(isinstance(p, str) for p in table[key])}}
        settings = SandboxSettings.from_table(table, where=f"{args.sandbox_from}: [sandbox]")
    extra = tuple(os.path.abspath(p) for p in args.read_only) if args.read_only else None
    private = tuple(os.path.abspath(p) for p in args.private) if args.private else None
    try:
        return settings.replace(mode=args.sandbox, memory_mib=args.memory, processes=args.processes, cpus=args.cpus,
                                log_cap_mib=args.log_cap, read_only=(*settings.read_only, *extra) if extra else None,
                                private=(*settings.private, *private) if private else None)
    except SandboxSettingsError as exc:  # named as the flags are
        lines = [line.replace("sandbox ", "", 1) for line in exc.errors]
        for flag, name in FLAGS.items():
            lines = [line.replace(f"{name} must", f"{flag} must") for line in lines]
        raise SandboxSettingsError(*lines) from None


def runtimes_from_args(args: argparse.Namespace) -> dict[str, Runtime]:
    """The runtimes packages may name: the defaults, with ``--sandbox-from``'s ``[runtimes]``."""
    from ..packages.runtimes import runtimes_from_table

    if not getattr(args, "sandbox_from", None):
        return runtimes_from_table(None, Path.cwd())
    text = read_text_file(args.sandbox_from, "tournament file", MAX_TOURNAMENT_FILE_BYTES)
    try:
        table = tomllib.loads(text).get("runtimes")
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"tournament file {args.sandbox_from} is not TOML: {exc}") from None
    return runtimes_from_table(table, Path(os.path.abspath(args.sandbox_from)).parent,
                               where=f"{args.sandbox_from}: [runtimes]")


def launcher_from_args(args: argparse.Namespace) -> Launcher:
    """The launcher for the flags: checked, and any warning (sandbox off, a fallback) said once."""
    return make_launcher(settings_from_args(args))
