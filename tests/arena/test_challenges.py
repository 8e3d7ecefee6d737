"""Challenges (arena/play/challenges.py, docs/challenges.md) played by a real `arena serve` with the
sample bots over real gRPC and a real SQLite database: a challenge decided both ways (greedy against
random is better, random against greedy is not) and `arena challenge --wait` exiting as `arena
compare` does; the ladder's own round played as it would be with no challenge at all (the same
games, ratings and standings: challenge games are never rated nor counted); a challenge resumed
from its stored pairs plays on from where it was; and the command's refusals."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from arena.config import ChallengeSettings, load_config
from arena.rating.stats import fixed_length_summary
from arena.store.challenges import challenge, challenges
from arena.store.models import Challenge, Game
from arena.store.store import Store
from tests.arena.queue_support import log_text, workers
from tests.arena_support import MARKER_ENV, toml_value, write_tournament
from tests.conftest import sample_bot_path
from tests.support import arena_here, assert_usage_error, run_arena

TIMEOUT_S = 300
TIME = {"move_ms": 2000, "startup_ms": 20000}  # no sample bot can miss it on a loaded machine
# bounds far apart (greedy wins by about 6 points a deal): the test decides at its 10th pair
CHALLENGES = {"games_per_round": 64, "max_pairs": 16, "lower": 0, "upper": 3}


def bot(name: str, script: str, seed: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "command": shlex.join([sys.executable, str(sample_bot_path(script))])}
    if seed is not None:
        entry["env"] = {"CASINO_BOT_SEED": seed}
    return entry


def write_ladder(folder: Path, challenges: dict[str, Any] | None = None, name: str = "ladder",
                 bots: list[dict[str, Any]] | None = None) -> Path:
    """A 2-player ladder of greedy and a seeded random bot, or ``bots`` (one pairing a round: two
    games), with a [challenges] table."""
    folder.mkdir(parents=True, exist_ok=True)
    path = write_tournament(folder / f"{name}.toml", {"name": name, "players": 2, "seed": 11, "concurrency": 2,
                                                      "database": f"sqlite:///{folder / (name + '.db')}"},
                            bots or [bot("greedy", "greedy_bot.py"), bot("random", "random_bot.py", "11")], TIME,
                            ladder={"interval": "1h", "pairings_per_bot": 1})
    table = challenges if challenges is not None else CHALLENGES
    with path.open("a", encoding="utf-8") as out:
        out.write("\n[challenges]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in table.items()))
    return path


def standings_without_times(path: Path) -> list[dict[str, Any]]:
    done = arena_here("standings", str(path), "--format", "json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["standings"]
    return [{k: v for k, v in row.items() if "at" not in k.split("_")} for row in rows]


def test_a_challenge_is_decided_both_ways_and_never_touches_the_ladder(tmp_path: Path) -> None:
    path = write_ladder(tmp_path / "with")
    plain = write_ladder(tmp_path / "without")
    env = {MARKER_ENV: "challenges"}
    first = arena_here("challenge", "start", "greedy", "random", str(path), env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("challenge 1: greedy v random, until decided (at most 16 pairs)")
    second = arena_here("challenge", "start", "random", "greedy", str(path), "--json", env=env)
    assert second.returncode == 0, second.stderr
    asked = json.loads(second.stdout)
    assert (asked["version"], asked["id"], asked["status"], asked["verdict"], asked["pairs_asked"]) == \
        (1, 2, "waiting", None, None)

    for ladder, says in ((path, True), (plain, False)):
        served = run_arena("serve", str(ladder), "--rounds", "1", timeout=TIMEOUT_S, env=env)
        assert served.returncode == 0, served.stdout[-3000:] + served.stderr
        assert ("challenge games played" in served.stdout) is says
    better = arena_here("challenge", "show", "1", str(path), "--wait", "--timeout", "1")
    assert better.returncode == 0, better.stdout + better.stderr
    assert "; better (margin +" in better.stdout
    worse = arena_here("challenge", "show", "2", str(path), "--wait", "--timeout", "1", "--json")
    assert worse.returncode == 1, worse.stdout + worse.stderr
    verdict = json.loads(worse.stdout)
    assert (verdict["status"], verdict["verdict"]) == ("decided", "not_better")
    assert verdict["margin"] < 0 and verdict["interval"][1] < 3
    assert verdict["games_played"] == 2 * verdict["pairs_played"] >= 20  # no decision before 10 pairs

    # the ladder's round is the same games, ratings and standings as a ladder with no challenge
    assert standings_without_times(path) == standings_without_times(plain)
    store, other = Store(load_config(path).database), Store(load_config(plain).database)
    try:
        tid, plain_tid = store.tournament_id("ladder"), other.tournament_id("ladder")
        assert tid is not None and plain_tid is not None
        ours = [(g.number, g.seat_bots, g.result) for g in store.games(tid)]
        assert ours == [(g.number, g.seat_bots, g.result) for g in other.games(plain_tid)] and len(ours) == 2
        assert store.ratings(tid) == other.ratings(plain_tid)
        assert [h[0] for h in store.rating_history(tid)] == [1, 1, 2, 2]  # the round's two games only
        for row in challenges(store, tid):
            assert row.games_tournament_id is not None and row.games_tournament_id != tid
            played = store.games(row.games_tournament_id)
            assert len(played) == row.games_played and all(g.status == "done" for g in played)
            # duplicate deals: each pair's two games share a deck, the seats swapped
            for a, b in zip(played[::2], played[1::2]):
                assert a.deck_seed == b.deck_seed and a.seat_bots == (0, 1) and b.seat_bots == (1, 0)
    finally:
        store.close()
        other.close()


def test_a_challenge_past_its_rounds_budget_resumes_from_its_stored_pairs(tmp_path: Path) -> None:
    # 4 games a round: a challenge of 3 pairs needs two rounds, and ends with a fixed-length verdict
    path = write_ladder(tmp_path, {"games_per_round": 4, "max_pairs": 16, "lower": 0, "upper": 3})
    assert arena_here("challenge", "start", "greedy", "random", str(path), "--pairs", "3").returncode == 0
    served = run_arena("serve", str(path), "--rounds", "1", timeout=TIMEOUT_S)
    assert served.returncode == 0, served.stderr
    store = Store(load_config(path).database)
    try:
        row = challenge(store, 1)
        assert row is not None and (row.status, len(row.pairs), row.games_played) == ("playing", 2, 4)
        served = run_arena("serve", str(path), "--rounds", "1", timeout=TIMEOUT_S)
        assert served.returncode == 0, served.stderr
        row = challenge(store, 1)
        assert row is not None and (row.status, len(row.pairs), row.games_played) == ("decided", 3, 6)
        assert [p["index"] for p in row.pairs] == [0, 1, 2]
        # the fixed-length verdict is on all three pairs, those of both rounds
        summary = fixed_length_summary("deals", [p["value"] for p in row.pairs])
        low, high = summary["ci"]
        assert row.margin == pytest.approx(summary["mean"]) and row.interval == pytest.approx((low, high))
        assert row.verdict == ("better" if low > 0 else "not_better" if high < 3 else "undecided")
        assert [g.number for g in store.games(row.games_tournament_id or 0)] == [1, 2, 3, 4, 5, 6]
    finally:
        store.close()


@pytest.mark.parametrize("args, options, says", [
    (("start", "greedy", "greedy"), (), "against itself"),
    (("start", "greedy", "nobody"), (), "no active bot named"),
    (("start", "greedy", "random"), ("--pairs", "0"), "--pairs must be 1 or more"),
    (("start", "greedy", "random"), ("--pairs", "17"), "pairs must be from 1 to 16"),
    (("show", "99"), (), "no challenge 99"),
    (("show", "1"), ("--wait", "--timeout", "0"), "--timeout must be"),
    (("show", "1"), ("--wait", "--timeout", "0.2"), "challenge 1 has no verdict after 0.2 s (0 game(s) played)"),
])
def test_challenge_refusals_are_one_line_and_exit_2(tmp_path: Path, args: tuple[str, ...], options: tuple[str, ...],
                                                    says: str) -> None:
    path = write_ladder(tmp_path)
    assert arena_here("challenge", "start", "greedy", "random", str(path)).returncode == 0
    line = assert_usage_error(arena_here("challenge", *args, str(path), *options), "arena")
    assert says in line


def test_challenge_needs_a_file_or_db_and_ladder(tmp_path: Path) -> None:
    path = write_ladder(tmp_path)
    assert "needs the ladder's tournament file or --db" in assert_usage_error(arena_here("challenge", "list"))
    db = load_config(path).database
    assert "--db needs --ladder" in assert_usage_error(arena_here("challenge", "list", "--db", db))
    assert arena_here("challenge", "start", "greedy", "random", str(path)).returncode == 0
    listed = arena_here("challenge", "list", "--db", db, "--ladder", "ladder", "--json")
    assert listed.returncode == 0 and [c["id"] for c in json.loads(listed.stdout)["challenges"]] == [1]
    store = Store(db)
    try:
        with store.session() as s:
            assert s.query(Challenge).count() == 1
    finally:
        store.close()


def test_the_same_seed_gives_the_same_verdict_in_process_and_on_two_queue_workers(tmp_path: Path,
                                                                                   pg_url: str) -> None:
    # one challenge, seed 7: played by `arena serve` itself (SQLite) and by two `arena worker`s
    # through `arena serve --queue` (PostgreSQL); the bots reseed per game (the game's id), so each
    # game, each pair and the verdict are the same
    local = write_ladder(tmp_path / "local")
    queued = write_ladder(tmp_path / "queued")
    queued.write_text(queued.read_text(encoding="utf-8").replace(load_config(queued).database, pg_url),
                      encoding="utf-8")
    for path in (local, queued):
        assert arena_here("challenge", "start", "greedy", "random", str(path), "--seed", "7").returncode == 0
    served = run_arena("serve", str(local), "--rounds", "1", timeout=TIMEOUT_S)
    assert served.returncode == 0, served.stderr
    with workers(pg_url, tmp_path / "workers", 2):
        served = run_arena("serve", str(queued), "--rounds", "1", "--queue", timeout=TIMEOUT_S)
    assert served.returncode == 0, served.stdout[-3000:] + served.stderr + log_text(tmp_path / "workers")
    rows, players = [], []
    for path in (local, queued):
        store = Store(load_config(path).database)
        try:
            row = challenge(store, 1)
            assert row is not None and row.games_tournament_id is not None
            rows.append((row, [(g.number, g.seat_bots, g.deck_seed, g.result) for g in
                               store.games(row.games_tournament_id)]))
            with store.session() as s:  # who played them: the workers (host:pid), or the serve itself
                players.append({w for (w,) in s.query(Game.worker).filter(Game.tournament_id == row.games_tournament_id)})
        finally:
            store.close()
    (here, here_games), (there, there_games) = rows
    assert (here.status, here.verdict, here.seed) == (there.status, there.verdict, there.seed) == ("decided", "better", 7)
    assert here.pairs == there.pairs and here.margin == there.margin and here.interval == there.interval
    assert here_games == there_games and len(here_games) == here.games_played >= 20
    assert players[0] == {None} and None not in players[1] and players[1]


@pytest.mark.parametrize("table, says", [
    ({"unit": "dealz"}, '[challenges] unit must be "deals" or "games", not "dealz" (did you mean "deals"?)'),
    ({"lower": 1, "upper": 1}, "[challenges] lower (1) must be below upper (1)"),
    ({"games_per_round": 1}, "[challenges] games_per_round must be a whole number >= 2, not 1"),
    ({"max_pairs": 0}, "[challenges] max_pairs must be a whole number from 1 to 10000, not 0"),
    ({"alpha": 1, "beta": 1}, "alpha and beta must be below 1 and add up to less than 1"),
    ({"in_flite": 2}, "in_flite"),
])
def test_a_bad_challenges_table_is_refused_in_one_line(tmp_path: Path, table: dict[str, Any], says: str) -> None:
    path = write_ladder(tmp_path, table)
    line = assert_usage_error(arena_here("challenge", "list", str(path)), "arena")
    assert says in line, line


def test_the_challenges_table_is_kept_with_the_ladder_for_the_web(tmp_path: Path) -> None:
    path = write_ladder(tmp_path, {"in_flight": 5, "unit": "games"})
    assert arena_here("challenge", "start", "greedy", "random", str(path)).returncode == 0
    store = Store(load_config(path).database)
    try:
        tid = store.tournament_id("ladder")
        assert tid is not None
        kept = ChallengeSettings.from_stored(store.tournament(tid).settings)
        assert (kept.in_flight, kept.unit, kept.lower, kept.upper) == (5, "games", 0.0, 20.0)  # games: Elo bounds
        row = challenge(store, 1)
        assert row is not None and row.unit == "games" and row.bounds["upper"] == 20.0 and row.seed == 1
    finally:
        store.close()
