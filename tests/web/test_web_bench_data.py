"""bench/make_web_db.py, the web benchmark's data: a tournament of games played in-process that
reads back through the store as `arena run`'s do (standings, games, records that replay, ratings
in game order)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from arena.play.runner import current_standings
from arena.rating.ratings import RatingBook
from arena.store.store import Store
from referee.rules.record import replay_record
from tests.conftest import ROOT

SCRIPT = ROOT / "bench" / "make_web_db.py"
GAMES = 40


def make(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), "--db", db, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=180, check=False)


def test_the_generated_tournament_reads_back_like_a_played_one(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'bench.db'}"
    done = make(db, "--games", str(GAMES), "--bots", "4", "--workers", "2", "--name", "web-bench")
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"stored {GAMES} games" in done.stdout and f"rated {GAMES} games" in done.stdout
    store = Store(db, read_only=True)
    try:
        tid = store.tournament_id("web-bench")
        assert tid is not None and store.tournament(tid).rated_through == GAMES
        assert store.counts(tid)["done"] == GAMES and sum(store.counts(tid).values()) == GAMES
        games = store.games(tid)
        assert [g.number for g in games] == list(range(1, GAMES + 1))
        for g in games:
            row, record = store.game(tid, g.number)
            assert record is not None and record["format"] == "royal-casino-game"
            assert record["result"] == row.result and record["game_number"] == g.number
            assert [s["bot"] for s in record["seats"]] == list(g.seat_bots)
            final = replay_record(record["engine"])  # raises on any disagreement with the record
            assert final.result is not None and list(final.result.scores) == list(row.result["scores"])
        standings = current_standings(store, tid)
        assert len(standings.rows) == 4 and sum(r.games for r in standings.rows) == 2 * GAMES
        book = RatingBook()
        for outcome in store.outcomes(tid):  # rated in game order: the same ratings from scratch
            book.update(outcome)
        assert book.ratings() == store.ratings(tid)
        assert len(store.rating_history(tid)) == 2 * GAMES
    finally:
        store.close()
    again = make(db, "--games", "5", "--name", "web-bench", "--workers", "1")
    assert again.returncode == 2 and "already in" in again.stderr and again.stderr.count("\n") == 1, again.stderr


def test_bad_arguments_are_one_line_and_status_2(tmp_path: Path) -> None:
    done = make(f"sqlite:///{tmp_path / 'x.db'}", "--games", "0")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--games" in done.stderr


def test_the_web_benchmark_times_the_pages_there_and_names_the_rest(played_db: str) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_web.py"), "--db", played_db, "--runs", "3",
                           "--warmup", "0"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ") and "`/" in line]
    assert len(rows) == 13 and rows[0].startswith("| front page | `/` | ")
    assert any("`/t/" in row and "/owner/" in row for row in rows[-2:])  # the private pages, read as an operator
    for row in rows:  # a figure in ms, or said to be missing: never a failure over a finished tournament
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert float(cells[2]) > 0, row  # every page is there
    assert "cores" in done.stdout
