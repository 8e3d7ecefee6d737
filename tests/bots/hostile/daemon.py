"""Hostile: double-fork a daemon in a session of its own (setsid) that lives for an hour, then
play normally."""

from __future__ import annotations

import os
import time

from _bot import report, run


def attack() -> None:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            for fd in (0, 1, 2):
                os.close(fd)
            time.sleep(3600)
        os._exit(0)
    os.wait()
    report("daemon", "started")


run(at_start=attack)
