"""Scale-out (docs/scale-out.md): a tournament queued by `arena run --queue` and played by
`arena worker` processes stores every game exactly once, with the standings, game results and
rating history of a single-process run of the same tournament; the CLI's refusals are one line."""

from __future__ import annotations

from pathlib import Path

from arena.config import load_config
from tests.arena.queue_support import log_text, run_queued, workers
from tests.arena.runs_support import Outcome, assert_complete, outcome_of, reference, tournament_file  # noqa: F401
from tests.arena_support import new_marker, run_arena, wait_no_marked_processes


def test_three_workers_play_every_game_once_with_the_single_process_standings(
        reference: Outcome, pg_url: str, tmp_path: Path) -> None:  # noqa: F811 - a fixture
    marker = new_marker()
    path = tournament_file(tmp_path, marker, concurrency=1, database=pg_url)
    queued = run_queued(path, "--detach")
    assert queued.returncode == 0, queued.stderr
    assert f"{len(reference.numbers)} game(s) queued" in queued.stdout, queued.stdout
    with workers(pg_url, tmp_path / "logs", 3):
        followed = run_queued(path)
        assert followed.returncode == 0, f"{followed.stdout}\n{followed.stderr}\n{log_text(tmp_path / 'logs')}"
    assert wait_no_marked_processes(marker) == [], "bot processes left running after the workers stopped"
    outcome = outcome_of(load_config(path).database)
    assert_complete(outcome)
    assert outcome.games == reference.games
    assert outcome.history == reference.history
    assert outcome.standings == reference.standings
    logs = log_text(tmp_path / "logs")
    assert sum(f"worker{i}.log" in logs and "played (attempt 1)" in (tmp_path / "logs" / f"worker{i}.log").read_text()
               for i in range(3)) >= 2, f"the games were not spread over the workers:\n{logs}"


def test_a_worker_or_a_queued_run_on_sqlite_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = run_arena("worker", "--db", f"sqlite:///{tmp_path / 'a.db'}")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "needs a PostgreSQL database" in done.stderr, done.stderr
    path = tournament_file(tmp_path, new_marker(), concurrency=1)
    done = run_arena("run", str(path), "--queue")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "needs a PostgreSQL database" in done.stderr, done.stderr
    done = run_arena("run", str(path), "--detach")
    assert done.returncode == 2 and "--detach is for --queue" in done.stderr, done.stderr
