"""Metrics scraped from real processes during a real queued tournament equal what it stored
(docs/operations.md): the coordinator's queue gauges while its games wait, then the worker's game,
move and failure counters once every game is settled."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

from arena.config import load_config
from arena.play.queue import PLAY_TASK
from arena.store.store import Store
from tests.arena.queue_support import kill_group, start_worker, stop, wait_settled
from tests.arena_support import ROOT, arena_argv, arena_env, sample_bot_command, write_tournament
from tests.conftest import python_bot_command
from tests.support import arena_here, assert_usage_error, run_arena
from tests.metrics_support import by_label, file_reader, metrics_url, scrape, total, wait_for

TIME = {"move_ms": 2000, "startup_ms": 20000}  # no sample bot can miss it on a loaded machine
BOTS = [
    {"name": "random", "command": sample_bot_command("random_bot.py"), "env": {"CASINO_BOT_SEED": "5"}},
    {"name": "greedy", "command": sample_bot_command("greedy_bot.py")},
    # plays illegal moves from its third on: failures of one kind, random moves substituted, forfeits
    {"name": "liar", "command": python_bot_command("illegal", after=2)},
]
FOLLOW_S = 240


def test_a_queued_tournaments_metrics_equal_its_stored_results(pg_url: str, tmp_path: Path) -> None:
    path = write_tournament(tmp_path / "metrics.toml", {"name": "metrics", "players": 2, "games_per_pairing": 2,
                                                        "duplicate": True, "seed": 7, "database": pg_url}, BOTS, TIME)
    total_games = 6  # 3 pairings x 2
    coordinator_log = tmp_path / "coordinator.log"
    with coordinator_log.open("wb") as out:
        coordinator = subprocess.Popen(arena_argv("run", str(path), "--queue", "--metrics-listen", "127.0.0.1:0"),
                                       cwd=ROOT, env=arena_env(), stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True)
    worker = None
    try:
        url = metrics_url(file_reader(coordinator_log), lambda: coordinator.poll() is None)
        # no worker yet: every game waits in the queue, and the coordinator's gauges say so
        wait_for(lambda: total(scrape(url), "arena_queue_jobs", status="todo") == total_games,
                 f"{total_games} waiting jobs in {url}")
        queue = scrape(url)
        assert total(queue, "arena_queue_jobs", status="doing") == 0
        assert total(queue, "arena_queue_workers") == 0
        assert total(queue, "arena_queue_stalled_jobs") == 0

        worker_log = tmp_path / "worker.log"
        worker = start_worker(pg_url, worker_log, extra=("--metrics-listen", "127.0.0.1:0"))
        worker_url = metrics_url(file_reader(worker_log), lambda: worker.poll() is None)
        assert coordinator.wait(FOLLOW_S) == 0, coordinator_log.read_text()
        store = Store(load_config(path).database)
        try:
            tid = store.tournament_id("metrics")
            assert tid is not None
            counts = wait_settled(store, tid)
            records = [record for _, record in store.records(tid)]
        finally:
            store.close()
        wait_for(lambda: total(scrape(worker_url), "arena_worker_jobs_total", task=PLAY_TASK) >= total_games,
                 "the worker counted every game job")
        got = scrape(worker_url)
    finally:
        if worker is not None:
            stop([worker])
        if coordinator.poll() is None:
            kill_group(coordinator)

    assert counts == {"pending": 0, "running": 0, "done": total_games, "failed": 0}
    assert len(records) == total_games
    # games: every one started, finished and stored once, each with its stored termination
    assert total(got, "referee_games_started_total") == total_games
    assert total(got, "referee_games_failed_total") == 0
    terminations = Counter((r["result"]["termination"], r["result"]["reason"]) for r in records)
    assert by_label(got, "referee_games_finished_total", "termination", "reason") == {
        (t.removeprefix("TERMINATION_").lower(), reason): n for (t, reason), n in terminations.items()}
    assert total(got, "referee_game_duration_seconds_count") == total_games
    assert total(got, "arena_games_stored_total", status="done") == total_games
    assert total(got, "arena_worker_jobs_total", task=PLAY_TASK, outcome="ok") == total_games
    # moves: each bot's plays in the records, judged and timed
    plays: Counter[str] = Counter()
    for record in records:
        names = [seat["name"] for seat in record["seats"]]
        forced = set(record.get("forced", ()))  # the referee's own plays: nobody was asked
        plays.update(names[seat] for i, (seat, _us) in enumerate(record["timings_us"]) if i not in forced)
    assert by_label(got, "referee_moves_judged_total", "bot") == {(bot,): n for bot, n in plays.items()}
    assert by_label(got, "referee_move_seconds_count", "bot") == {(bot,): n for bot, n in plays.items()}
    assert total(got, "referee_forced_plays_total") == sum(len(r.get("forced", ())) for r in records) > 0
    # failures: by bot and kind, as stored
    failures: Counter[tuple[str, str]] = Counter()
    for record in records:
        names = [seat["name"] for seat in record["seats"]]
        failures.update((names[f.get("seat", 0)], f["kind"].removeprefix("FAILURE_KIND_").lower())
                        for f in record["failures"])
    assert failures, "the liar's failures are in the records"
    assert by_label(got, "referee_bot_failures_total", "bot", "kind") == dict(failures)
    # the queue's jobs ran here: its rating passes rated games, and bots ran under its launchers
    assert 0 < total(got, "arena_rating_updates_total") <= total_games
    assert ("referee_bots_running", frozenset()) in got
    assert total(got, "referee_event_loop_lag_seconds_count") > 0


def test_a_bad_metrics_address_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = write_tournament(tmp_path / "t.toml", {"name": "t", "players": 2, "database": f"sqlite:///{tmp_path}/t.db"},
                            BOTS[:2], TIME)
    for args in (("run", str(path)), ("worker", "--db", "postgresql://postgres@127.0.0.1/unused"), ("web", "--db", f"sqlite:///{tmp_path}/t.db")):
        line = assert_usage_error(arena_here(*args, "--metrics-listen", "host-without-port"), "arena")
        assert "--metrics-listen must be HOST:PORT" in line, (args, line)
