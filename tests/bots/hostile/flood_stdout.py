"""Hostile: write 500 MiB to stdout before it listens."""

from __future__ import annotations

import os
import sys

from _bot import run

CHUNK = b"spam " * (1 << 18)  # 1.25 MiB


def attack() -> None:
    written = 0
    while written < 500 << 20:
        sys.stdout.buffer.write(CHUNK)
        written += len(CHUNK)
    sys.stdout.flush()
    os.write(2, f"hostile: flooded {written}\n".encode())


run(at_start=attack)
