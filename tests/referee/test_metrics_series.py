"""Per-bot metric series stay bounded (referee/metrics.py ``BotSeries``): beyond the cap the least
recently seen bot's series are removed, and a run keeps only its own tournament's bots."""

from __future__ import annotations

from prometheus_client import REGISTRY

from referee.metrics import BotSeries, observe_game


def series_of(bot: str) -> list[str]:
    """The names of the registry's samples labelled with ``bot``."""
    return sorted({s.name for family in REGISTRY.collect() for s in family.samples if s.labels.get("bot") == bot})


def test_beyond_the_cap_the_least_recently_seen_bot_loses_its_series() -> None:
    series = BotSeries(cap=2)
    bots = [f"series-test-{n}" for n in range(3)]
    for pair in ((bots[0], bots[1]), (bots[1], bots[0]), (bots[2], bots[0])):
        observe_game(list(pair), "normal", "target_reached", 0.1, [[0, 500], [1, 700]], [100, None],
                     [(1, "illegal_move")], series=series)
    # bots[1] was seen least recently when bots[2] came: its series are gone, every metric's
    assert bots[1] not in series and bots[0] in series and bots[2] in series
    assert series_of(bots[1]) == []
    assert "referee_bot_failures_total" in series_of(bots[0]) and "referee_move_seconds_count" in series_of(bots[2])
    series.keep_only([bots[2]])
    assert series_of(bots[0]) == [] and series_of(bots[2]) != []
    series.keep_only([])
    assert series_of(bots[2]) == []
