"""Hostile: on its first turn, take memory 8 MiB at a time (every page touched) without end."""

from __future__ import annotations

from _bot import report, run

held = []


def attack() -> None:
    report("hogging", True)
    while True:
        held.append(bytearray(8 << 20))


run(on_first_turn=attack)
