"""``arena_database_errors_total`` on a real database (arena/metrics.py); the stored-games and
rating counters are checked against a real tournament in test_metrics_scrape.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from arena.store.store import Store


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_every_error_the_database_raises_is_counted_by_its_class(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    try:
        before = sample("arena_database_errors_total", error="OperationalError")
        for _ in range(2):
            with pytest.raises(OperationalError), store.session() as s:
                s.execute(text("SELECT * FROM no_such_table"))
        with store.session() as s:
            assert s.execute(text("SELECT 1")).scalar() == 1  # a good query counts nothing
        assert sample("arena_database_errors_total", error="OperationalError") - before == 2
    finally:
        store.close()
