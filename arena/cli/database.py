"""The database an operator's command works on: a tournament file (its ``database``) or ``--db URL``,
exactly one of them, as every such command takes it (``users``, ``submissions``, ``notify``)."""

from __future__ import annotations

import argparse

from ..errors import UsageError

DB_HELP = "the database: sqlite:///path or postgresql://user@host/name"


def add_database_arguments(parser: argparse.ArgumentParser) -> None:
    """``[FILE]`` and ``--db URL`` on ``parser``."""
    parser.add_argument("file", nargs="?", help="a tournament file (its database); or give --db")
    parser.add_argument("--db", metavar="URL", help=DB_HELP)


def database_url(args: argparse.Namespace, command: str) -> str:
    """The database URL ``args`` name; UsageError (one line, exit 2) unless exactly one of the file
    and ``--db`` is given. ``command`` names the command in that line (``arena users add``)."""
    from ..config import load_config

    if (args.file is None) == (args.db is None):
        raise UsageError(f"{command} needs a tournament file or --db URL (one of them)")
    return str(args.db if args.db is not None else load_config(args.file, check_programs=False).database)
