"""Bots die with the process that started them, even one killed with SIGKILL (Linux).

A started bot's command is run through this file as a tiny program: it sets PR_SET_PDEATHSIG
(SIGKILL) and then checks that its parent is still the referee that started it, before it execs
the bot's command in place (the setting survives exec). The check closes the race a bare prctl
leaves open: a referee killed between its fork and the child's prctl would leave the child,
adopted by init, to start a bot nobody stops. util-linux's ``setpriv --pdeathsig`` has that race.

Run as ``python -I -S die_with_parent.py PARENT_PID PROGRAM [ARG ...]``; it imports only the
standard library, so it needs neither the project on the path nor site-packages (about 10 ms).
"""

from __future__ import annotations

import os
import sys

PR_SET_PDEATHSIG = 1
ORPHANED_STATUS = 70  # its parent was gone before the bot started: nothing was run


def guard_argv(argv: list[str]) -> list[str]:
    """``argv`` run through this guard, tied to the calling process; ``argv`` itself off Linux."""
    if sys.platform != "linux":
        return argv
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), str(os.getpid()), *argv]


def main(args: list[str]) -> int:
    """Tie this process to its parent, check the parent is still ``args[0]``, exec ``args[1:]``."""
    import ctypes  # here, not at the top: the referee's own import of this module needs none of it

    if len(args) < 2 or not args[0].isdigit():
        print("usage: die_with_parent.py PARENT_PID PROGRAM [ARG ...]", file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0) != 0:  # 9: SIGKILL
        print(f"die_with_parent: prctl failed: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        return 71
    if os.getppid() != int(args[0]):
        return ORPHANED_STATUS
    try:
        os.execvp(args[1], args[1:])
    except OSError as error:
        print(f"die_with_parent: cannot run {args[1]}: {error.strerror}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
