"""How many games this machine can play at once with fair clocks: its usable CPU cores.

A game between bots has at most one of them thinking at a time (the referee asks one seat, then
the next), so a game needs one core; with no more games than cores every thinking bot has a core
of its own and its move time measures its thinking, not the other games'. Kept apart from the
runner so ``arena compare`` can ask without importing the tournament machinery.
"""

from __future__ import annotations

import os


def available_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the OS has one)."""
    counted = getattr(os, "process_cpu_count", None)  # Python 3.13+
    if counted is not None:
        return counted() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def oversubscription_warning(concurrency: int, cores: int) -> str | None:
    """The warning for more games at once than cores (bots then share CPUs and lose games on
    time, so ratings measure CPU contention); None when they fit."""
    if concurrency <= cores:
        return None
    return (f"concurrency {concurrency} is more than the {cores} CPU core(s) here: bots will share CPUs, "
            f"answer more slowly and may lose games on time (a concurrency of {cores} avoids that)")
