"""Scale-out (docs/scale-out.md): a tournament queued by `arena run --queue` and played by
`arena worker` processes stores every game exactly once, with the standings, game results and
rating history of a single-process run of the same tournament; the CLI's refusals are one line."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from sqlalchemy import text

from arena.config import load_config
from arena.store.store import Store
from tests.arena.queue_support import FOLLOW_TIMEOUT_S, log_text, query, run_queued, workers
from tests.arena.runs_support import TIME, Outcome, assert_complete, outcome_of, reference, tournament_file  # noqa: F401
from tests.arena_support import (
    ROOT,
    arena_argv,
    arena_env,
    new_marker,
    run_arena,
    sample_bot_command,
    wait_no_marked_processes,
    write_tournament,
)
from tests.support import arena_here


def test_three_workers_play_every_game_once_with_the_single_process_standings(
        reference: Outcome, pg_url: str, tmp_path: Path) -> None:  # noqa: F811 - a fixture
    marker = new_marker()
    path = tournament_file(tmp_path, marker, concurrency=1, database=pg_url)
    queued = run_queued(path, "--detach")
    assert queued.returncode == 0, queued.stderr
    assert f"{len(reference.numbers)} game(s) queued" in queued.stdout, queued.stdout
    total = len(reference.numbers)
    waiting = arena_here("status", str(path), "--format", "json")
    assert waiting.returncode == 0, waiting.stderr
    status = json.loads(waiting.stdout)
    assert status["games"] == {"pending": total, "running": 0, "done": 0, "failed": 0}
    assert status["queue"]["waiting"] == total and status["queue"]["workers"] == []
    again = run_queued(path, "--detach")  # a second coordinator start queues nothing more
    assert again.returncode == 0 and "0 game(s) queued" in again.stdout, again.stdout + again.stderr
    local = arena_here("run", str(path))  # a local run would take the queued games from the workers
    assert local.returncode == 2 and local.stderr.count("\n") == 1, local.stderr
    assert f"has {total} game(s) queued for workers" in local.stderr, local.stderr
    with workers(pg_url, tmp_path / "logs", 3):
        followed = run_queued(path)
        assert followed.returncode == 0, f"{followed.stdout}\n{followed.stderr}\n{log_text(tmp_path / 'logs')}"
    assert wait_no_marked_processes(marker) == [], "bot processes left running after the workers stopped"
    outcome = outcome_of(load_config(path).database)
    assert_complete(outcome)
    assert outcome.games == reference.games
    assert outcome.history == reference.history
    assert outcome.standings == reference.standings
    shown = arena_here("status", str(path))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"tournament 'runs': {total}/{total} games done, 0 running, 0 pending"), shown.stdout
    assert "queue: 0 waiting, 0 being played, 0 stalled" in shown.stdout, shown.stdout
    # the reading commands work unchanged on a queued tournament
    for args in (("standings", str(path), "--format", "json"), ("games", str(path)), ("show", str(path), "1"),
                 ("export", str(path), str(tmp_path / "export"))):
        read = arena_here(*args)
        assert read.returncode == 0 and read.stderr == "", (args, read.stderr)
    assert json.loads(arena_here("standings", str(path), "--format", "json").stdout) == json.loads(reference.standings)
    assert len(list((tmp_path / "export" / "records").glob("*.json"))) == total
    logs = log_text(tmp_path / "logs")
    assert sum(f"worker{i}.log" in logs and "played (attempt 1)" in (tmp_path / "logs" / f"worker{i}.log").read_text()
               for i in range(3)) >= 2, f"the games were not spread over the workers:\n{logs}"


def test_a_worker_or_a_queued_run_on_sqlite_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = arena_here("worker", "--db", f"sqlite:///{tmp_path / 'a.db'}")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "needs a PostgreSQL database" in done.stderr, done.stderr
    path = tournament_file(tmp_path, new_marker(), concurrency=1)
    done = arena_here("run", str(path), "--queue")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "needs a PostgreSQL database" in done.stderr, done.stderr
    done = arena_here("run", str(path), "--detach")
    assert done.returncode == 2 and "--detach is for --queue" in done.stderr, done.stderr


def _ladder_games(url: str, name: str) -> tuple[list[tuple[int, int, tuple[int, ...], int, str, Any]], list[Any]]:
    """Every game of a ladder (number, round, seats, deck, status, result) and its rating history."""
    store = Store(url)
    try:
        tid = store.tournament_id(name)
        assert tid is not None
        games = [(g.number, g.round, g.seat_bots, g.deck_seed, g.status, g.result) for g in store.games(tid)]
        return games, store.rating_history(tid)
    finally:
        store.close()


def test_a_queued_ladder_plays_the_rounds_a_local_one_plays(pg_url: str, tmp_path: Path) -> None:
    """`arena serve --queue`: rounds are scheduled by the server and played by workers; each round's
    pairings are planned on the ratings of every earlier game, so the games, rounds and rating
    history equal those of the same ladder served locally."""
    bots = [{"name": "greedy", "command": sample_bot_command("greedy_bot.py")},
            {"name": "random-a", "command": sample_bot_command("random_bot.py"), "env": {"CASINO_BOT_SEED": "11"}},
            {"name": "random-b", "command": sample_bot_command("random_bot.py"), "env": {"CASINO_BOT_SEED": "22"}}]
    ladder = {"interval": "1s", "pairings_per_bot": 1}
    for folder in ("local", "queued"):
        (tmp_path / folder).mkdir()
    local = write_tournament(tmp_path / "local" / "lad.toml", {
        "name": "lad", "players": 2, "seed": 11, "concurrency": 1, "database": f"sqlite:///{tmp_path / 'local.db'}",
        "ladder": ladder}, bots, TIME)
    queued = write_tournament(tmp_path / "queued" / "lad.toml", {
        "name": "lad", "players": 2, "seed": 11, "database": pg_url, "ladder": ladder}, bots, TIME)
    done = run_arena("serve", str(local), "--rounds", "2", timeout=FOLLOW_TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    Store(pg_url).close()  # the arena's tables first: a worker refuses a database without them
    with workers(pg_url, tmp_path / "logs", 2):
        done = run_arena("serve", str(queued), "--rounds", "2", "--queue", timeout=FOLLOW_TIMEOUT_S)
        assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{log_text(tmp_path / 'logs')}"
    assert "round 2:" in done.stdout, done.stdout
    # a queued ladder's server plays nothing, so it writes nothing beside its file (which a
    # deployment mounts read-only); the local one keeps its bots' logs there
    assert sorted(p.name for p in (tmp_path / "queued").iterdir()) == ["lad.toml"]
    assert (tmp_path / "local" / "lad-logs").is_dir()
    local_games, local_history = _ladder_games(f"sqlite:///{tmp_path / 'local.db'}", "lad")
    queued_games, queued_history = _ladder_games(pg_url, "lad")
    assert {g[1] for g in local_games} == {1, 2}
    assert queued_games == local_games
    assert queued_history == local_history


def test_resume_queues_only_games_without_a_job_and_frees_games_whose_job_gave_up(pg_url: str, tmp_path: Path) -> None:
    """The coordinator's resume, on a real queue: a game whose job waits or runs is left alone; a
    pending game without a job is queued once; a running game whose job is over (it gave up on
    the database's errors after claiming) goes back to pending and is queued."""
    from arena.play.coordinator import queue_missing
    from arena.play.queue import make_app
    from arena.play.runner import open_tournament

    path = tournament_file(tmp_path, new_marker(), concurrency=1, database=pg_url)
    config = load_config(path)
    store = Store(pg_url)
    app = make_app()
    try:
        tid = open_tournament(store, config)  # scheduled, nothing queued: a coordinator killed before its queueing
        total = len(store.games(tid))
        assert store.in_transaction(lambda conn: queue_missing(app, config, conn, tid)) == total
        assert store.in_transaction(lambda conn: queue_missing(app, config, conn, tid)) == 0  # never twice
        first, second = store.games(tid)[:2]
        with store.engine.begin() as conn:
            jobs = dict(conn.execute(text("SELECT queueing_lock, id FROM procrastinate_jobs")).all())
            for game, job_status in ((first, "doing"), (second, "failed")):
                conn.execute(text("UPDATE procrastinate_jobs SET status = :s WHERE id = :j"),
                             {"s": job_status, "j": jobs[f"arena-game-{game.id}"]})
                conn.execute(text("UPDATE games SET status = 'running', attempt = 1, job_id = :j WHERE id = :g"),
                             {"j": jobs[f"arena-game-{game.id}"], "g": game.id})
        assert store.in_transaction(lambda conn: queue_missing(app, config, conn, tid)) == 1
        after = {g.number: g.status for g in store.games(tid)}
        assert after[first.number] == "running" and after[second.number] == "pending"
        with store.engine.connect() as conn:
            waiting = conn.execute(text("SELECT count(*) FROM procrastinate_jobs WHERE status = 'todo' AND queueing_lock = :l"),
                                   {"l": f"arena-game-{second.id}"}).scalar()
        assert waiting == 1
    finally:
        store.close()


def test_a_local_run_or_serve_of_games_queued_for_workers_is_refused_in_one_line(pg_url: str, tmp_path: Path) -> None:
    """The workers own queued games: a plain `arena serve` (or `arena run`) would play them again."""
    bots = [{"name": "greedy", "command": sample_bot_command("greedy_bot.py")},
            {"name": "random", "command": sample_bot_command("random_bot.py")}]
    path = write_tournament(tmp_path / "lad.toml", {"name": "lad", "players": 2, "seed": 11, "database": pg_url,
                                                    "ladder": {"interval": "1h"}}, bots, TIME)
    Store(pg_url).close()  # migrated here first, so the server and the polls below never both migrate it
    server = subprocess.Popen(arena_argv("serve", str(path), "--queue"), cwd=ROOT, env=arena_env(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + FOLLOW_TIMEOUT_S
        while not _queued_jobs(pg_url):  # round 1 queued, no worker to play it
            assert server.poll() is None and time.monotonic() < deadline, "the queued round never appeared"
            time.sleep(0.1)
    finally:
        server.terminate()
        server.wait(timeout=60)
    for command in ("serve", "run"):
        done = arena_here(command, str(path))
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "queued for workers" in done.stderr and "--queue" in done.stderr, done.stderr


def _queued_jobs(url: str) -> int:
    return query(url, "SELECT count(*) FROM procrastinate_jobs WHERE status = 'todo'")[0][0]


def test_every_queue_name_fits_a_postgresql_channel_name() -> None:
    from arena.play.queue import CHANNEL_PREFIX, MAX_CHANNEL_BYTES, QUEUE_PREFIX, compatibility, queue_name

    for compat in (None, "0.1.0-schema0003-protocol1", "10.20.30-schema0042_a_long_revision_name-protocol1"):
        name = queue_name(compat)
        assert name.startswith(QUEUE_PREFIX) and len(CHANNEL_PREFIX + name) <= MAX_CHANNEL_BYTES, name
    assert queue_name("0.1.0-schema0003-protocol1") == QUEUE_PREFIX + "0.1.0-schema0003-protocol1"
    from referee.wire.convert import PROTOCOL_VERSION

    assert queue_name().endswith(f"-protocol{PROTOCOL_VERSION}") and queue_name() == queue_name(compatibility())
