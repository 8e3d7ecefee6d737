"""Hostile: before it listens, fork children (each sleeps an hour) until a fork is refused; then
keep four of them alive and play (a bot needs a few threads of its own to serve)."""

from __future__ import annotations

import os
import signal
import time

from _bot import reason, report, run

MAX_FORKS = 5000
KEEP = 4


def attack() -> None:
    children: list[int] = []
    why = "no refusal"
    for _ in range(MAX_FORKS):
        try:
            pid = os.fork()
        except OSError as exc:
            why = reason(exc)
            break
        if pid == 0:
            time.sleep(3600)
            os._exit(0)
        children.append(pid)
    for pid in children[KEEP:]:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    report("forks", {"children": len(children), "refused": why, "kept": len(children[:KEEP])})


run(at_start=attack)
