"""A uid of its own for each running bot, when the referee is root: taken from a range and held
with a lock file for as long as the bot runs, so two referees on one machine (or two bots of
one referee) never share one. The lock is released when the holder closes it or dies."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_DIRS = (Path("/run/royal-casino-sandbox"), Path("/tmp/royal-casino-sandbox-uids"))  # first usable one


class UidLease:
    """One uid held: ``uid`` (also the gid) until ``release``."""

    def __init__(self, uid: int, fd: int) -> None:
        self.uid = uid
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _lock_dir() -> Path:
    for folder in LOCK_DIRS:
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            if folder.is_dir() and not folder.is_symlink() and folder.stat().st_uid == os.getuid():
                return folder
        except OSError:
            continue
    raise OSError(f"no folder for the sandbox's uid locks ({', '.join(map(str, LOCK_DIRS))})")


def take_uid(first: int, count: int) -> UidLease:
    """A uid from ``first .. first + count - 1`` that no other bot holds; OSError when all are taken.
    The search starts at a place that depends on this process, so referees rarely contend."""
    folder = _lock_dir()
    start = (os.getpid() * 7919) % count
    for step in range(count):
        uid = first + (start + step) % count
        fd = os.open(folder / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return UidLease(uid, fd)
    raise OSError(f"every sandbox uid ({first} to {first + count - 1}) is in use")
