"""The disk the Referee service's records folder may use (RecordSpace): a record that would take
the folder past its limit, or leave the disk with less than a floor free, is not written and
ends its match with RESOURCE_EXHAUSTED, so the service never fails by running out of disk."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..errors import RefereeError


class RecordSpaceError(RefereeError):
    """The records folder has no room for a record (its limit, or the disk's free-space floor)."""


def folder_bytes(folder: Path) -> int:
    """The bytes of every file under ``folder`` (records and bot logs), as ``du`` would count
    sizes; files that vanish while it counts are skipped."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


class RecordSpace:
    """What the records folder holds (``used``, re-counted from the disk at each call's start and
    added to as records are written) against ``limit``, and the disk's free space against
    ``min_free``. Used from the event loop only."""

    def __init__(self, folder: Path, limit: int, min_free: int) -> None:
        self.folder = folder
        self.limit = limit
        self.min_free = min_free
        self.used = 0

    def refusal(self, size: int) -> str | None:
        """Why ``size`` more bytes cannot be written now, or None."""
        if self.used + size > self.limit:
            return (f"the records folder holds {self.used} bytes of the {self.limit} this server allows; "
                    f"no room for {size} more")
        free = shutil.disk_usage(self.folder).free
        if free - size < self.min_free:
            return f"the disk of the records folder would have less than {self.min_free} bytes free"
        return None

    def take(self, size: int) -> None:
        """Count ``size`` bytes about to be written; RecordSpaceError when they do not fit."""
        why = self.refusal(size)
        if why:
            raise RecordSpaceError(why)
        self.used += size
