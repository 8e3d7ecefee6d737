"""Hostile: open TCP connections to the host's ports: PostgreSQL (127.0.0.1:5432) and the ports
named by HOSTILE_PORTS (host:port, separated by ',')."""

from __future__ import annotations

import os
import socket

from _bot import reason, report, run


def attack() -> None:
    results = {}
    for target in ["127.0.0.1:5432", *filter(None, os.environ.get("HOSTILE_PORTS", "").split(","))]:
        host, port = target.rsplit(":", 1)
        try:
            with socket.create_connection((host, int(port)), timeout=3):
                results[target] = "connected"
        except OSError as exc:
            results[target] = reason(exc)
    report("network", results)


run(at_start=attack)
