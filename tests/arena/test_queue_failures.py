"""Scale-out under failure (docs/scale-out.md): workers killed with kill -9 at random moments, a
coordinator killed while it queues, the database's connections cut under running workers, workers
of another version, SIGTERM with a long and a short grace, the referee's own failures and bots'
failures. Real worker processes, real bots, a real PostgreSQL database per test; in every case
each game is stored exactly once, and where the tournament is the shared one (runs_support) its
results, rating history and standings are the single-process run's."""

from __future__ import annotations

import random
import subprocess
import time
from pathlib import Path

import pytest

from tests.arena.queue_support import (
    descendants,
    game_rows,
    kill_group,
    log_text,
    play_jobs,
    run_queued,
    start_worker,
    still_alive,
    wait_for,
    worker_name,
)
from tests.arena.runs_support import (  # noqa: F401 - reference is a fixture
    SCHEDULE,
    Outcome,
    assert_complete,
    outcome_of,
    reference,
    tournament_file,
)
from tests.arena_support import (
    new_marker,
    wait_no_marked_processes,
)

DEFAULT_TRIALS = 5  # kill -9 trials in the default run; the slow tier adds SLOW_TRIALS more
SLOW_TRIALS = 20
GONE_S = 10.0  # a killed worker's bots die with it (PR_SET_PDEATHSIG): this is only a bound


def assert_same_as(reference: Outcome, url: str) -> None:  # noqa: F811 - reference is the fixture's value
    outcome = outcome_of(url)
    assert_complete(outcome)
    assert outcome.games == reference.games
    assert outcome.history == reference.history
    assert outcome.standings == reference.standings


def stop(procs: list[subprocess.Popen[bytes]]) -> list[int | None]:
    """SIGTERM each live process of ``procs`` and wait for it (bounded); their exit statuses."""
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            kill_group(proc)
    return [proc.returncode for proc in procs]


def settle(url: str, logs: Path) -> dict[int, tuple[str, int, str | None]]:
    """Wait until no game is pending or running (bounded); the games."""
    return wait_for(lambda: (rows := game_rows(url)) and all(s in ("done", "failed") for s, _, _ in rows.values())
                    and rows, f"every game settled\n{log_text(logs)}", poll_s=0.2)


# --- 1. kill -9 of a worker mid-game --------------------------------------------------------------


def _kill_a_worker_mid_game(trial: int, reference: Outcome, pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    rng = random.Random(7000 + trial)
    marker = new_marker()
    path = tournament_file(tmp_path, marker, concurrency=1, database=pg_url)
    queued = run_queued(path, "--detach")
    assert queued.returncode == 0, queued.stderr
    logs = tmp_path / "logs"
    logs.mkdir()
    victim = start_worker(pg_url, logs / "victim.log")
    others = [start_worker(pg_url, logs / "other.log")]
    try:
        name = worker_name(victim)

        def victims_games() -> set[int]:
            return {n for n, (status, _, who) in game_rows(pg_url).items() if status == "running" and who == name}

        wait_for(victims_games, f"worker {name} starting a game\n{log_text(logs)}")
        time.sleep(rng.uniform(0, 2.5))  # a random moment of its games: start-up, mid-game, between games
        wait_for(victims_games, f"worker {name} playing a game again\n{log_text(logs)}")
        bots = descendants(victim.pid)
        kill_group(victim)
        lost = victims_games()  # frozen from now on: the games the dead worker held
        others.append(start_worker(pg_url, logs / "replacement.log"))  # as a supervisor would
        # (no bots at all when it died between claiming a game and starting its first bot)
        wait_for(lambda: not still_alive(bots), f"the killed worker's bots exiting: {bots}", timeout_s=GONE_S)
        settle(pg_url, logs)
        followed = run_queued(path)
        assert followed.returncode == 0, f"{followed.stdout}\n{followed.stderr}\n{log_text(logs)}"
        assert others[0].poll() is None, f"the other worker stopped\n{log_text(logs)}"
    finally:
        stop(others)
        if victim.poll() is None:
            kill_group(victim)
    assert wait_no_marked_processes(marker) == [], "bot processes left running after the workers stopped"
    rows = game_rows(pg_url)
    replayed = {n for n, (_, attempt, _) in rows.items() if attempt != 1}
    assert replayed == lost, f"replayed {sorted(replayed)}, the killed worker held {sorted(lost)}"
    assert all(rows[n][1] == 2 and rows[n][2] != name for n in lost), rows
    assert play_jobs(pg_url) == [], "jobs left in the queue"
    assert_same_as(reference, pg_url)




@pytest.mark.parametrize("trial", range(DEFAULT_TRIALS))
def test_a_worker_killed_mid_game_has_its_game_replayed_once_and_its_bots_gone(
        trial: int, reference: Outcome, pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    _kill_a_worker_mid_game(trial, reference, pg_url, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("trial", range(DEFAULT_TRIALS, DEFAULT_TRIALS + SLOW_TRIALS))
def test_a_worker_killed_mid_game_more_trials(trial: int, reference: Outcome, pg_url: str,  # noqa: F811
                                              tmp_path: Path) -> None:
    _kill_a_worker_mid_game(trial, reference, pg_url, tmp_path)
