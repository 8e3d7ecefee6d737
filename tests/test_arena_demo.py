"""The Quickstart's main job, ``arena demo``: a round robin of every sample bot, standings printed."""

from __future__ import annotations

from tests.support import run_arena, table_rows


def test_arena_demo_runs_a_round_robin_of_the_sample_bots(node_bot_if_possible: str | None) -> None:
    """Every sample bot plays every other twice (one duplicate set), nobody forfeits (the sample
    bots answer legally and in time), and the standings list each bot once with its games."""
    done = run_arena("demo", "--games", "2", "--move-time", "2000", timeout=300)  # a time no sample bot can miss
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    header = next(line for line in out.splitlines() if line.startswith("demo: "))
    bots = header.removeprefix("demo: ").split(";")[0].split(", ")
    assert bots[:3] == ["random", "greedy", "lookahead"]
    if node_bot_if_possible is None:  # the Node.js bot is installed (tests/conftest.py)
        assert "node" in bots
    standings = out[out.index("standings after"):out.index("head to head")]
    rows = {r[1]: r for r in table_rows(standings)}
    assert set(rows) == set(bots)
    games = 2 * (len(bots) - 1)
    for name, row in rows.items():
        played, wins, draws, losses = (int(x) for x in row[5:9])
        assert played == games and wins + draws + losses == games, row
        assert row[10] == "-", f"{name} forfeited: {row[10]}"
    assert sum(int(r[6]) for r in rows.values()) + sum(int(r[7]) for r in rows.values()) / 2 == len(bots) * (len(bots) - 1)
    assert f"standings after {games * len(bots) // 2} games" in out
