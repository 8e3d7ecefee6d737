"""Hostile: write files outside its sandbox's /tmp: next to itself, into the folders the test
names (HOSTILE_WRITE: paths separated by ':'), and into /tmp (its private one)."""

from __future__ import annotations

import os

from _bot import reason, report, run


def attack() -> None:
    results = {}
    targets = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "planted.txt"),
               *os.environ["HOSTILE_WRITE"].split(":")]
    for path in targets:
        try:
            with open(path, "w") as f:
                f.write("owned\n")
            results[path] = "written"
        except OSError as exc:
            results[path] = reason(exc)
    report("writes", results)


run(at_start=attack)
