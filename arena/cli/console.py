"""The terminal the arena's commands print to."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

PROG = "arena"  # the command's name, first on each of its error and warning lines


def make_console() -> Console:
    """stdout as rich sees it; a pipe or file gets 120 columns so tables are not cut."""
    from rich.console import Console  # here, not above: `arena --help` does not load rich

    return Console() if sys.stdout.isatty() else Console(width=120)


def add_outage_argument(p: argparse.ArgumentParser) -> None:
    """``--db-outage S`` of every long-running command (arena/store/outage.py, docs/scale-out.md)."""
    p.add_argument("--db-outage", type=float, metavar="S",
                   help="ride out a database outage for up to S seconds, then stop with exit status 2 "
                        "(default: $ARENA_DB_OUTAGE_S, else 300)")
