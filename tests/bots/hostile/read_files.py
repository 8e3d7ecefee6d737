"""Hostile: read other bots' sources, the arena's database, the referee's logs, and the host's
secrets (HOSTILE_READ: paths separated by ':'), and list folders above its own."""

from __future__ import annotations

import os

from _bot import reason, report, run


def attack() -> None:
    results = {}
    for path in os.environ["HOSTILE_READ"].split(":"):
        try:
            with open(path, "rb") as f:
                results[path] = f"read {len(f.read(1 << 20))} bytes"
        except OSError as exc:
            results[path] = reason(exc)
    report("reads", results)


run(at_start=attack)
