"""Scraping a real process's Prometheus endpoint (``--metrics-listen``) in tests: where it is (the
line the process prints), its samples, and sums of them by label."""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

WAIT_S = 60.0  # bound on a process getting to its metrics line (a loaded machine starts slowly)
_URL = re.compile(r"metrics at (http://\S+/metrics)")

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def metrics_url(read: Callable[[], str], alive: Callable[[], bool] = lambda: True, wait_s: float = WAIT_S) -> str:
    """The URL in the ``<prog>: metrics at URL`` line of what ``read`` returns (a log so far)."""
    deadline = time.monotonic() + wait_s
    while True:
        found = _URL.search(read())
        if found:
            return found.group(1)
        assert alive(), f"the process ended before serving its metrics:\n{read()[-3000:]}"
        assert time.monotonic() < deadline, f"no metrics line within {wait_s:.0f} s:\n{read()[-3000:]}"
        time.sleep(0.05)


def file_reader(path: Path) -> Callable[[], str]:
    return lambda: path.read_text(errors="replace") if path.exists() else ""


def scrape(url: str) -> Samples:
    """Every sample at ``url``: (name, labels) -> value."""
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels`` (0 when there is none)."""
    wanted = set(labels.items())
    return sum(v for (n, have), v in samples.items() if n == name and wanted <= have)


def by_label(samples: Samples, name: str, *keys: str) -> dict[tuple[str, ...], float]:
    """``name``'s samples summed by the values of ``keys``; zero sums left out."""
    sums: dict[tuple[str, ...], float] = {}
    for (n, have), v in samples.items():
        if n == name:
            labels = dict(have)
            key = tuple(labels.get(k, "") for k in keys)
            sums[key] = sums.get(key, 0.0) + v
    return {k: v for k, v in sums.items() if v}


def wait_for(check: Callable[[], bool], what: str, wait_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + wait_s
    while not check():
        assert time.monotonic() < deadline, f"not within {wait_s:.0f} s: {what}"
        time.sleep(0.1)
