"""``arena compare --queue`` (docs/scale-out.md, docs/statistics.md): a comparison whose games are
played by real `arena worker` processes through the job queue of a real PostgreSQL database
reaches the verdict of the in-process comparison with the same seed, after the same pairs with
the same values (results are taken in pair order, whoever plays the games); once it has decided,
no job of it is left waiting or running, no game row of it is left pending or running, and its
bot processes stop on the workers (after their --bots-idle) while the workers go on. Bad usage
is one line and exit status 2."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from pathlib import Path

import pytest

from arena.play.compare import CompareSpec, Comparison, compare_settings, endpoint_bot
from arena.play.executor import InProcessExecutor
from arena.play.queue import PLAY_TASK, RATE_TASK
from arena.play.queue_executor import QueueExecutor, run_name
from arena.play.queue_status import live_workers
from arena.rating.stats import SprtBounds
from arena.store.store import Store
from referee.clock import TimeControl
from tests.arena.queue_support import log_text, query, start_worker, stop, wait_for
from tests.arena.test_arena_compare import GREEDY, RANDOM, ROOMY_MS
from tests.arena_support import arena_argv, arena_env
from tests.conftest import assert_no_bot_processes
from tests.support import ROOT, arena_here, run_arena

SEED = 3
MAX_UNITS = 200
BOUNDS = SprtBounds(0.0, 2.0, 0.05, 0.05)  # greedy against random decides H1 within a few dozen pairs
SAMPLE_BOTS = ("greedy_bot.py", "random_bot.py")  # their processes, for assert_no_bot_processes


def _spec(concurrency: int) -> CompareSpec:
    return CompareSpec(endpoint_bot("candidate", GREEDY), endpoint_bot("baseline", RANDOM), bounds=BOUNDS,
                       max_units=MAX_UNITS, seed=SEED, concurrency=concurrency,
                       time_control=TimeControl(move_time_ms=int(ROOMY_MS)))


def _in_process(logs: Path) -> Comparison:
    comparison = Comparison(_spec(2), InProcessExecutor(logs))

    async def run() -> None:
        try:
            await comparison.run()
        finally:
            await comparison.executor.close()
    asyncio.run(run())
    return comparison


def _queued(url: str, window: int) -> tuple[Comparison, int]:
    spec = _spec(window)
    executor = QueueExecutor(url, run_name(spec.label), [spec.candidate, spec.baseline], compare_settings(spec))
    comparison = Comparison(spec, executor)

    async def run() -> None:
        try:
            await executor.open()
            await comparison.run()
        finally:
            await executor.close()
    asyncio.run(run())
    return comparison, executor.tid


def _pairs(comparison: Comparison) -> list[tuple[object, ...]]:
    return [(p.index, p.value, p.margins, p.game_scores, p.deals, p.failures) for p in comparison.pairs]


def _live_jobs(url: str) -> list[tuple[str, str, str]]:
    """Every job of the database still waiting or running: (status, task, tournament id)."""
    return [tuple(r) for r in query(  # type: ignore[misc]
        url, "SELECT status::text, task_name, args->>'tournament_id' FROM procrastinate_jobs"
             " WHERE status IN ('todo', 'doing') AND task_name IN (%s, %s)", (PLAY_TASK, RATE_TASK))]


@pytest.mark.timeout(600)
def test_a_queued_comparison_decides_as_the_in_process_one_and_leaves_nothing(pg_url: str, tmp_path: Path) -> None:
    """Greedy (deterministic) against random (seeded by the game): two workers playing the games
    through the queue give the in-process comparison's status, pairs and per-pair values, through
    the API and through `arena compare --queue` (and `arena gauntlet --queue` plays). At the
    verdict the games past it are withdrawn: no job waits or runs, no game row is pending or
    running, and the counted games are stored; the comparison's bots are stopped on the workers
    (idle for their --bots-idle) while the workers go on, and the workers stop cleanly."""
    reference = _in_process(tmp_path / "local")
    assert reference.status() == "H1" and len(reference.pairs) >= 10
    Store(pg_url).close()  # the arena's tables first: a worker refuses a database without them
    store = Store(pg_url, migrate=False)
    folder = tmp_path / "workers"
    folder.mkdir()
    # bots idle for 2 s are stopped: once a comparison has decided, its bots go while the workers stay
    procs = [start_worker(pg_url, folder / f"worker{i}.log", 1, ("--bots-idle", "2")) for i in range(2)]
    try:
        wait_for(lambda: live_workers(store) >= 2, "two live workers")
        queued, tid = _queued(pg_url, window=4)
        assert queued.status() == reference.status(), log_text(folder)
        assert _pairs(queued) == _pairs(reference), log_text(folder)
        assert _live_jobs(pg_url) == [], log_text(folder)
        assert query(pg_url, "SELECT number, status FROM games WHERE tournament_id = %s"
                             " AND status NOT IN ('done')", (tid,)) == []
        stored = {n for (n,) in query(pg_url, "SELECT number FROM games WHERE tournament_id = %s", (tid,))}
        assert set(range(1, 2 * len(queued.pairs) + 1)) <= stored  # every counted game, as the workers played it
        assert_no_bot_processes(wait_s=60, patterns=SAMPLE_BOTS)  # the comparison's bots stopped on the workers, which go on

        report_path = tmp_path / "queued.json"
        done = run_arena("compare", "--candidate", GREEDY, "--baseline", RANDOM, "--queue", "--db", pg_url,
                         "--margin0", "0", "--margin1", "2", "--max-units", str(MAX_UNITS), "--seed", str(SEED),
                         "--move-time", ROOMY_MS, "--json", str(report_path), timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr + log_text(folder)
        assert "H1 accepted" in done.stdout and "live worker(s)" in done.stdout, done.stdout
        report = json.loads(report_path.read_text())
        assert (report["status"], report["pairs"]) == ("H1", len(reference.pairs))
        assert report["mean_margin"] == pytest.approx(sum(p.value for p in reference.pairs) / len(reference.pairs))
        assert report["failures"] == []
        assert _live_jobs(pg_url) == [], log_text(folder)
        assert query(pg_url, "SELECT count(*) FROM games WHERE status IN ('pending', 'running')") == [(0,)]

        gauntlet_path = tmp_path / "gauntlet.json"  # each opponent's comparison, on the workers too
        done = run_arena("gauntlet", "--candidate", GREEDY, "--opponent", f"random={RANDOM}", "--units", "6",
                         "--queue", "--db", pg_url, "--window", "3", "--move-time", ROOMY_MS,
                         "--json", str(gauntlet_path), timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr + log_text(folder)
        assert [(row["opponent"], row["games"]) for row in json.loads(gauntlet_path.read_text())["opponents"]] == [
            ("random", 6)]
        assert _live_jobs(pg_url) == [], log_text(folder)
        assert query(pg_url, "SELECT count(*) FROM games WHERE status IN ('pending', 'running')") == [(0,)]
        assert query(pg_url, "SELECT count(*) FROM tournaments") == [(3,)]  # a tournament row per comparison
        assert_no_bot_processes(wait_s=60, patterns=SAMPLE_BOTS)
        assert all(proc.poll() is None for proc in procs), log_text(folder)
        assert stop(procs) == [0, 0], log_text(folder)
        # games withdrawn at a verdict end in one line each ("ended with status: Aborted"), not a traceback
        whole = "".join(p.read_text(errors="replace") for p in sorted(folder.glob("*.log")))
        assert "Traceback" not in whole, whole[whole.find("Traceback") - 500:][:3000]
    finally:
        stop(procs)
        store.close()
    assert_no_bot_processes(wait_s=10, patterns=SAMPLE_BOTS)


@pytest.mark.timeout(600)
def test_a_queued_comparison_stopped_with_ctrl_c_withdraws_its_games_and_says_so(pg_url: str,
                                                                                  tmp_path: Path) -> None:
    """Ctrl-C (SIGINT) on `arena compare --queue` mid-run: it withdraws the games it had queued (no
    job of it waits or runs, no game row of it is pending or running), says `arena: interrupted`
    and exits 130; the worker goes on, and stops the comparison's bots once they are idle."""
    Store(pg_url).close()
    store = Store(pg_url, migrate=False)
    folder = tmp_path / "workers"
    folder.mkdir()
    procs = [start_worker(pg_url, folder / "worker0.log", 1, ("--bots-idle", "2"))]
    compare: subprocess.Popen[str] | None = None
    try:
        wait_for(lambda: live_workers(store) >= 1, "a live worker")
        compare = subprocess.Popen(
            arena_argv("compare", "--candidate", GREEDY, "--baseline", RANDOM, "--queue", "--db", pg_url,
                       "--units", "100000", "--window", "4", "--move-time", ROOMY_MS),
            cwd=ROOT, env=arena_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: query(pg_url, "SELECT count(*) FROM games WHERE status = 'done'")[0][0] >= 4,
                 lambda: f"four games played; {log_text(folder)}")
        compare.send_signal(signal.SIGINT)
        out, err = compare.communicate(timeout=120)
        assert (compare.returncode, err) == (130, "arena: interrupted\n"), (compare.returncode, out, err)
        assert _live_jobs(pg_url) == [], log_text(folder)
        assert query(pg_url, "SELECT count(*) FROM games WHERE status IN ('pending', 'running')") == [(0,)]
        assert_no_bot_processes(wait_s=60, patterns=SAMPLE_BOTS)  # idle on the worker, then stopped
        assert procs[0].poll() is None, log_text(folder)
        assert stop(procs) == [0], log_text(folder)
    finally:
        if compare is not None and compare.poll() is None:
            compare.kill()
            compare.wait()
        stop(procs)
        store.close()


def test_queue_usage_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    """--queue needs a PostgreSQL --db, and leaves games at once and bot logs to the workers; --db
    and --window are only for --queue. Each is one line on stderr, exit 2, before any database or
    bot is touched."""
    bots = ("--candidate", RANDOM, "--baseline", RANDOM)
    pg = "postgresql://nobody@127.0.0.1:9/none"  # never reached: every case is refused first
    cases = [
        (("compare", *bots, "--queue"), "--queue needs --db"),
        (("compare", *bots, "--queue", "--db", f"sqlite:///{tmp_path / 'a.db'}"), "needs a PostgreSQL database"),
        (("compare", *bots, "--queue", "--database", f"sqlite:///{tmp_path / 'a.db'}"), "needs a PostgreSQL database"),
        (("compare", *bots, "--queue", "--db", pg, "--concurrency", "2"), "--concurrency is the workers'"),
        (("compare", *bots, "--queue", "--db", pg, "--logs", str(tmp_path / "logs")), "--logs is the workers'"),
        (("compare", *bots, "--queue", "--db", pg, "--window", "0"), "--window must be at least 1"),
        (("compare", *bots, "--db", pg), "--db is for --queue"),
        (("compare", *bots, "--window", "4"), "--window is for --queue"),
        (("gauntlet", "--candidate", RANDOM, "--opponent", f"r={RANDOM}", "--queue"), "--queue needs --db"),
        (("gauntlet", "--candidate", RANDOM, "--opponent", f"r={RANDOM}", "--queue", "--db", pg, "--concurrency", "1"),
         "--concurrency is the workers'"),
    ]
    for args, words in cases:
        done = arena_here(*args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert done.stdout == "" and done.stderr.count("\n") == 1, (args, done.stdout, done.stderr)
        assert done.stderr.startswith("arena: error:") and words in done.stderr, (args, done.stderr)
    assert not (tmp_path / "a.db").exists() and not (tmp_path / "logs").exists()
