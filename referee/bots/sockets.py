"""Where bots' unix sockets go: a temporary folder whose socket paths fit the kernel's limit.

A unix socket's path has at most 107 bytes (``sun_path`` is 108, with its final NUL). A long
TMPDIR (macOS gives one of about 50 characters, some CI runners longer) would leave no room for
``<root>/<bot label>/<start>.sock``, and every bot would fail to start with a gRPC error about the
address; such a root goes to /tmp instead.
"""

from __future__ import annotations

import os
import tempfile

SOCKET_PATH_MAX = 107  # bytes
FALLBACK_ROOT = "/tmp"


def fits(path: str) -> bool:
    """Whether ``path`` can name a unix socket."""
    return len(os.fsencode(path)) <= SOCKET_PATH_MAX


def socket_root(prefix: str, room: int) -> tempfile.TemporaryDirectory[str]:
    """A new temporary folder for bots' sockets, in TMPDIR when ``room`` more bytes below it (the
    longest ``/<label>/<n>.sock``) still fit a socket's path, else in /tmp."""
    base = tempfile.gettempdir()
    longest = f"{base}/{prefix}{'x' * 8}{'y' * room}"  # tempfile adds 8 random characters
    if not fits(longest) and os.path.isdir(FALLBACK_ROOT) and os.access(FALLBACK_ROOT, os.W_OK | os.X_OK):
        base = FALLBACK_ROOT
    return tempfile.TemporaryDirectory(prefix=prefix, dir=base)


def label_room(label_bytes: int) -> int:
    """The room ``/<label>/<n>.sock`` takes below the root, for labels of ``label_bytes`` at most
    (and up to 9999 starts of a bot)."""
    return len(f"/{'x' * label_bytes}/9999.sock")
