"""Which failures met while starting or watching a bot are the platform's, not the bot's (issue 26):
the referee's own files, descriptors and memory. Such a failure is a PlatformFault (referee/errors.py):
the game ends without a verdict on any bot and is never rated."""

from __future__ import annotations

import errno
import os

from ..errors import PlatformFault, platform_fault

# errnos of the referee's own calls that say the machine, not a bot, is short of something
PLATFORM_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.ENOMEM})


def as_platform_fault(exc: BaseException, what: str) -> PlatformFault | None:
    """``exc`` as the PlatformFault it is when the platform, not a bot, is short of something
    (a PlatformFault as it is; an OSError of ``PLATFORM_ERRNOS``; the referee's MemoryError), else None."""
    if isinstance(exc, PlatformFault):
        return exc
    if isinstance(exc, MemoryError):
        return PlatformFault("memory", f"{what}: the referee ran out of memory")
    if isinstance(exc, OSError) and exc.errno in PLATFORM_ERRNOS:
        return platform_fault(exc, what)
    return None


def descriptors_fault(what: str) -> PlatformFault | None:
    """A PlatformFault("descriptors") when the referee cannot open one more file now (EMFILE or
    ENFILE), else None: asked before a bot is blamed for what a referee out of descriptors would
    cause too (no connection to it within its start-up time)."""
    try:
        fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        return as_platform_fault(exc, what)
    os.close(fd)
    return None
