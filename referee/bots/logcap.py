"""A bot's log with a cap: the referee reads the bot's stdout and stderr through a pipe (in a
thread of its own, off the event loop that times the bots) and writes at most the cap to the
log file; past it, one marker line says the log was cut, and the rest is read and discarded,
so a bot that writes without end neither fills the disk nor blocks on a full pipe."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import BinaryIO

CHUNK = 1 << 16


def private_folder(folder: Path) -> None:
    """Make ``folder`` (and what is missing above it) for the referee's own files, bot logs: a new
    folder is 0700, and one this user owns loses every permission of others (a bot's uid is an
    "other"; a log holds what its bot printed, which is its owner's alone)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.stat()
    if info.st_uid == os.geteuid() and info.st_mode & 0o007:
        folder.chmod(info.st_mode & 0o770)


def open_log(path: Path) -> BinaryIO:
    """``path`` opened to append, made with mode 0600 when it is new."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600), "ab")


def cut_marker(cap: int) -> bytes:
    return f"\n--- log cut: the bot's output reached the log cap ({cap} bytes); the rest is discarded\n".encode()


class CappedLog:
    """Copies everything read from ``fd`` (the pipe's read end, owned from here on) to ``path``
    until the file holds ``cap`` bytes, then discards; ``discarded`` counts what was dropped."""

    def __init__(self, fd: int, path: Path, cap: int) -> None:
        self.path = path
        self.cap = cap
        self.discarded = 0
        self.cut = False
        self._fd = fd
        self._thread = threading.Thread(target=self._copy, name=f"log {path.name}", daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        try:
            with open_log(self.path) as log:
                room = max(0, self.cap - log.tell())
                while chunk := os.read(self._fd, CHUNK):
                    if room:
                        kept = chunk[:room]
                        log.write(kept)
                        room -= len(kept)
                        chunk = chunk[len(kept):]
                        if not room:
                            log.write(cut_marker(self.cap))
                            self.cut = True
                        log.flush()  # the log is up to date whenever someone reads it
                    if chunk:
                        self.cut = True
                        self.discarded += len(chunk)
        except OSError:
            pass  # a log that cannot be written loses the bot's output, never the referee's match
        finally:
            os.close(self._fd)

    def finish(self, timeout_s: float = 2.0) -> bool:
        """Wait (bounded) until the bot's end of the pipe is closed and everything is written; False
        when something still holds it open (a process that escaped: only without a sandbox)."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()
