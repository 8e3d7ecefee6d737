"""A bot's log with a cap: the referee reads the bot's stdout and stderr through a pipe (in a
thread of its own, off the event loop that times the bots) and writes at most the cap to the
log file; past it, one marker line says the log was cut, and the rest is read and discarded,
so a bot that writes without end neither fills the disk nor blocks on a full pipe. A log the
referee cannot write (a full disk) is noted (``CappedLog.error``) and the pipe is still drained:
the bot never blocks on it, and the game ends as the platform's fault, not the bot's timeout."""

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
    until the file holds ``cap`` bytes, then discards; ``discarded`` counts what was dropped.
    ``error``: the first OSError writing the log (from then on everything read is dropped and
    counted in ``lost``, never left in the pipe)."""

    def __init__(self, fd: int, path: Path, cap: int) -> None:
        self.path = path
        self.cap = cap
        self.discarded = 0
        self.cut = False
        self.error: OSError | None = None
        self.lost = 0
        self._fd = fd
        self._thread = threading.Thread(target=self._copy, name=f"log {path.name}", daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        log: int | None = None
        try:
            try:
                log = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
                room = max(0, self.cap - os.fstat(log).st_size)
            except OSError as exc:
                self._failed(exc, log)
                log, room = None, 0
            while chunk := _read(self._fd):
                if log is None:
                    self.lost += len(chunk)
                    continue
                if room:
                    kept = chunk[:room]
                    try:
                        _write_all(log, kept)
                        room -= len(kept)
                        if not room:
                            _write_all(log, cut_marker(self.cap))
                    except OSError as exc:  # the referee's own file: noted, and the pipe still drained
                        self._failed(exc, log)
                        log = None
                        self.lost += len(chunk)
                        continue
                    chunk = chunk[len(kept):]
                    if not room:
                        self.cut = True
                if chunk:
                    self.cut = True
                    self.discarded += len(chunk)
        finally:
            if log is not None:
                os.close(log)
            os.close(self._fd)

    def _failed(self, exc: OSError, log: int | None) -> None:
        """Note the first write error and stop writing (the log's fd closed)."""
        if self.error is None:
            self.error = exc
        if log is not None:
            os.close(log)

    def finish(self, timeout_s: float = 2.0) -> bool:
        """Wait (bounded) until the bot's end of the pipe is closed and everything is written; False
        when something still holds it open (a process that escaped: only without a sandbox)."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()


def _read(fd: int) -> bytes:
    """The next chunk of the pipe; b"" at its end (or when it cannot be read at all)."""
    try:
        return os.read(fd, CHUNK)
    except OSError:
        return b""


def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` (unbuffered: the log is up to date whenever someone reads it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
