"""The Quickstart's main job, ``referee demo``, runs the sample bots over gRPC and prints standings."""

from __future__ import annotations

from tests.support import run_referee


def test_demo_plays_every_pair_of_sample_bots_and_prints_standings(node_bot_if_possible: str | None) -> None:
    """One game per pair: every sample bot appears in the standings with its games counted, and
    no game ends in a forfeit (the sample bots play legal moves in time)."""
    done = run_referee("demo", "--games", "1", "--move-time", "2000", timeout=300)  # a time no sample bot can miss
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    header = next(line for line in out.splitlines() if line.startswith("demo: "))
    bots = header.removeprefix("demo: ").split(";")[0].split(", ")
    assert bots[:3] == ["random", "greedy", "lookahead"]
    if node_bot_if_possible is None:  # the Node.js bot is installed (tests/conftest.py)
        assert "node" in bots
    standings = out[out.index("bot          games"):].splitlines()[1:]
    rows = {line.split()[0]: [int(x) for x in line.split()[1:]] for line in standings if line.strip()}
    assert set(rows) == set(bots)
    for name, (games, wins, draws, losses) in rows.items():
        assert games == len(bots) - 1 and wins + draws + losses == games, (name, rows[name])
    assert "(forfeit)" not in out
    assert sum(r[1] for r in rows.values()) + sum(r[2] for r in rows.values()) // 2 == len(bots) * (len(bots) - 1) // 2
