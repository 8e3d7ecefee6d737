"""Hostile: find the other bots through /proc (their CASINO_BOT_ADDRESS) and freeze or kill them;
also signal the host pid the test names (HOSTILE_VICTIM_PID). Only processes carrying the test's
marker (HOSTILE_MARKER) are ever signalled, so a run without a sandbox harms nothing else."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from _bot import reason, report, run


def attack() -> None:
    marker = os.environ["HOSTILE_MARKER"].encode()
    visible, bots, results = [], [], {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        visible.append(int(entry.name))
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(v.startswith(b"CASINO_BOT_ADDRESS=") for v in environ) and marker in environ:
            bots.append(int(entry.name))
    victim = int(os.environ.get("HOSTILE_VICTIM_PID", "0"))
    for pid in [*bots, *([victim] if victim else [])]:
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            try:
                os.kill(pid, sig)
                results[f"{pid} {sig.name}"] = "sent"
            except OSError as exc:
                results[f"{pid} {sig.name}"] = reason(exc)
    report("visible", sorted(visible))
    report("bots", sorted(bots))
    report("signals", results)


run(at_start=attack, on_first_turn=attack)
