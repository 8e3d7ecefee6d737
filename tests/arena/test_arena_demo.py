"""The Quickstart's main job, ``arena demo``: a round robin of every sample bot, standings printed,
and its tournament file and database kept where the printed commands find them again."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from tests.support import fresh_temp_dir, run_arena, table_rows

NEXT_STEPS = "the demo is kept in "


def standings_part(out: str) -> str:
    """The standings table of an `arena` output (up to the head-to-head table)."""
    return out[out.index("standings"):out.index("head to head")]


def test_arena_demo_runs_a_round_robin_of_the_sample_bots_and_keeps_it(tmp_path: Path,
                                                                        node_bot_if_possible: str | None) -> None:
    """Every sample bot plays every other twice (one duplicate set), nobody forfeits (the sample
    bots answer legally and in time), and the standings list each bot once with its games. The
    folder (a new one under the temporary directory) is kept, and the commands printed at the end
    show the same standings and find nothing left to play; `--dir` on it resumes it."""
    temp = fresh_temp_dir()
    done = run_arena("demo", "--games", "2", "--move-time", "2000", timeout=300,  # a time no sample bot can miss
                     env={"TMPDIR": str(temp)})
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
    forfeits = {name: row[10] for name, row in rows.items() if row[10] != "-"}  # checked last, below
    assert sum(int(r[6]) for r in rows.values()) + sum(int(r[7]) for r in rows.values()) / 2 == len(bots) * (len(bots) - 1)
    assert f"standings after {games * len(bots) // 2} games" in out

    # kept: the folder, its files, and the exact commands to use them
    (folder,) = temp.iterdir()
    assert folder.name.startswith("arena-demo-")
    assert {"demo.toml", "demo.db", "demo-logs"} <= {p.name for p in folder.iterdir()}
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(NEXT_STEPS))
    assert lines[at].startswith(f"{NEXT_STEPS}{folder}: demo.toml")
    commands = {shlex.split(line.split("  # ")[0])[3]: shlex.split(line.split("  # ")[0]) for line in lines[at + 1:]}
    assert set(commands) == {"standings", "games", "show", "run"}
    program = [sys.executable, "-m", "arena.cli"]  # how this test started `arena`
    assert all(argv[:3] == program and argv[4] == str(folder / "demo.toml") for argv in commands.values())
    elsewhere = tmp_path / "elsewhere"  # the commands work from any folder
    elsewhere.mkdir()
    again = subprocess.run(commands["standings"], capture_output=True, text=True, timeout=60, cwd=elsewhere)
    assert again.returncode == 0, again.stderr
    assert table_rows(standings_part(again.stdout)) == table_rows(standings)
    rerun = subprocess.run(commands["run"], capture_output=True, text=True, timeout=120, cwd=elsewhere)
    assert rerun.returncode == 0, rerun.stderr
    total = games * len(bots) // 2
    assert f"{total} games ({total} already played)" in rerun.stdout.splitlines()[0]

    # `arena demo --dir` on that folder resumes the same demo; other settings are refused
    resumed = run_arena("demo", "--games", "2", "--move-time", "2000", "--dir", str(folder), timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert f"({total} already played)" in resumed.stdout
    assert table_rows(standings_part(resumed.stdout[resumed.stdout.index("standings after"):])) == \
        table_rows(standings)
    refused = run_arena("demo", "--games", "4", "--dir", str(folder), timeout=60)
    assert (refused.returncode, refused.stdout) == (2, "")
    (line,) = refused.stderr.splitlines()
    assert line.startswith(f"arena: error: {folder} already holds a demo with other settings"), line
    assert forfeits == {}, f"sample bots forfeited: {forfeits}"
