"""Hostile: read other bots' sources, the arena's database, the referee's logs, and the host's
secrets (HOSTILE_READ: paths separated by ':'; else its arguments, as a submitted bot's command
gives them), and list the folders among them. With the argument ``--exit`` it then exits (status
3), so that a check prints its log."""

from __future__ import annotations

import os
import sys

from _bot import reason, report, run


def attack() -> None:
    results = {}
    for path in [p for p in os.environ.get("HOSTILE_READ", "").split(":") if p] or \
            [a for a in sys.argv[1:] if a != "--exit"]:
        try:
            if os.path.isdir(path):
                results[path] = f"listed {len(os.listdir(path))} entries"
                continue
            with open(path, "rb") as f:
                results[path] = f"read {len(f.read(1 << 20))} bytes"
        except OSError as exc:
            results[path] = reason(exc)
    report("reads", results)
    for number, (path, result) in enumerate(results.items()):  # short lines too: a check quotes a log cut
        report(f"read:{number}", [path, result])
    if "--exit" in sys.argv[1:]:
        sys.exit(3)


run(at_start=attack)
