"""Platform faults (referee.errors.PlatformFault: a full disk under the bot logs, no descriptors, a
sandbox that would not start) are never a game's result nor a bot's failure (arena/play/claimed.py):
the game goes back to pending, the process stops taking games (`arena run` exits 4, a worker
pauses), and a game the platform fails to play MAX_PLATFORM_FAULTS times is failed for the
operator, never rated. Here the runner's logic with tests/fakes.py's FakeExecutor (games played by
the rules engine); the same with real bot processes, a real full disk and real workers is in
test_platform_pause.py."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

import pytest
from sqlalchemy import select

from arena.config import load_config
from arena.play.claimed import MAX_PLATFORM_FAULTS, ClaimedGames, NotOurs
from arena.play.executor import SeatBot
from arena.play.runner import TournamentRunner, current_standings, game_setup, open_tournament
from arena.rating.standings import standings_json
from arena.store.models import Game, GameSeat
from arena.store.store import GameTask, Store
from referee.bots.endpoint import BotEndpoint
from referee.errors import EXIT_PLATFORM, PlatformFault
from referee.match.game import Observer
from referee.match.report import GameReport
from referee.match.spec import GameSetup
from tests.arena_support import write_tournament
from tests.fakes import FakeExecutor

BOTS = [{"name": name, "address": f"unix:/nonexistent/{name}.sock"} for name in ("a", "b", "c", "d")]
FAULTY = 5  # the game the platform cannot play


class FaultOn(FakeExecutor):
    """Plays as FakeExecutor, but game ``numbers`` raise a PlatformFault (a full disk) while it is set."""

    def __init__(self, numbers: Sequence[int]) -> None:
        super().__init__()
        self.numbers = set(numbers)

    async def play(self, setup: GameSetup, seats: Sequence[SeatBot], observe: Observer | None = None) -> GameReport:
        if setup.game_number in self.numbers:
            self.played.append(setup.game_number)
            raise PlatformFault("disk", "cannot write the bot's log /logs/a-1.log: No space left on device")
        return await super().play(setup, seats, observe)


def tournament(folder: Path) -> Path:
    """A 4-bot round robin of 24 games on SQLite."""
    folder.mkdir(parents=True, exist_ok=True)
    return write_tournament(folder / "fake.toml", {"name": "fake", "players": 2, "games_per_pairing": 4, "seed": 9,
                                                   "database": f"sqlite:///{folder / 'fake.db'}"}, BOTS)


def run_once(path: Path, executor: FakeExecutor, concurrency: int = 2) -> PlatformFault | None:
    """One run of the tournament through ``executor``; the platform fault it stopped on, if any."""
    config = load_config(path)
    store = Store(config.database)
    try:
        tid = open_tournament(store, config)
        try:
            asyncio.run(TournamentRunner(store, tid, config, executor, concurrency).run())
        except PlatformFault as fault:
            return fault
        return None
    finally:
        store.close()


def test_a_platform_fault_stops_the_run_keeps_what_was_played_and_rates_nothing_of_it(tmp_path: Path) -> None:
    path = tournament(tmp_path / "faulty")
    fault = run_once(path, FaultOn([FAULTY]))
    assert fault is not None and fault.condition == "disk" and fault.exit_status == EXIT_PLATFORM
    store = Store(load_config(path).database)
    try:
        tid = store.tournament_id("fake")
        assert tid is not None
        games = {g.number: g for g in store.games(tid)}
        history = store.rating_history(tid)
    finally:
        store.close()
    faulty = games[FAULTY]
    assert (faulty.status, faulty.result) == ("pending", None), "not a result: to be played again"
    assert faulty.error is not None and faulty.error.startswith(f"platform fault 1/{MAX_PLATFORM_FAULTS} (disk): ")
    done = [n for n, g in games.items() if g.status == "done"]
    assert set(range(1, FAULTY)) <= set(done), "the games before it were played and kept"
    assert len(done) <= FAULTY + 1, "no game was started after the fault but the one running beside it"
    assert all(games[n].result is not None for n in done)
    assert {n for n, _, _, _ in history} == {n for n in done if n < FAULTY}, "rated in order, up to the fault"

    # a rerun once it is fixed resumes, with the results of a run that never saw the fault
    assert run_once(path, FakeExecutor()) is None
    reference = tournament(tmp_path / "reference")
    assert run_once(reference, FakeExecutor()) is None
    assert _standings(path) == _standings(reference)


def test_a_game_the_platform_keeps_failing_is_failed_for_the_operator_and_never_rated(tmp_path: Path) -> None:
    path = tournament(tmp_path / "faulty")
    executor = FaultOn([FAULTY])
    for run in range(1, MAX_PLATFORM_FAULTS + 1):  # each run stops on it, and counts one more fault
        fault = run_once(path, executor)
        assert fault is not None, f"run {run} did not stop on the fault"
    assert executor.played.count(FAULTY) == MAX_PLATFORM_FAULTS
    assert run_once(path, executor) is None, "once failed it is not played again: the run ends"
    assert executor.played.count(FAULTY) == MAX_PLATFORM_FAULTS
    store = Store(load_config(path).database)
    try:
        tid = store.tournament_id("fake")
        assert tid is not None
        games = {g.number: g for g in store.games(tid)}
        rated = {n for n, _, _, _ in store.rating_history(tid)}
        with store.session() as s:
            seats = s.scalars(select(GameSeat).where(GameSeat.tournament_id == tid,
                                                     GameSeat.game_number == FAULTY)).all()
        standings = current_standings(store, tid)
        counts = store.counts(tid)
    finally:
        store.close()
    faulty = games[FAULTY]
    assert (faulty.status, faulty.result) == ("failed", None)
    assert faulty.error is not None and faulty.error.startswith(
        f"platform fault {MAX_PLATFORM_FAULTS}/{MAX_PLATFORM_FAULTS} (disk): cannot write the bot's log")
    assert counts == {"pending": 0, "running": 0, "done": 23, "failed": 1}
    assert rated == set(range(1, 25)) - {FAULTY}, "every other game rated, in order past the failed one"
    assert len(seats) == 2 and all(s.outcome is None and not s.forfeited and s.failures == 0 for s in seats), \
        "listed with its bots, and nobody's failure"
    assert sum(row.games for row in standings.rows) == 2 * 23, "the standings count only the played games"
    assert all(sum(row.forfeits.values()) == 0 for row in standings.rows), "no bot forfeited anything"


def test_the_platforms_attempts_do_not_use_up_the_referees(tmp_path: Path) -> None:
    # faulted twice, then the referee's own failure: it still gets its MAX_ATTEMPTS tries, then is stored
    path = tournament(tmp_path / "both")
    faults = FaultOn([FAULTY])
    for _ in range(2):
        assert run_once(path, faults) is not None
    assert run_once(path, FakeExecutor(fail_first=[FAULTY])) is None
    store = Store(load_config(path).database)
    try:
        tid = store.tournament_id("fake")
        assert tid is not None
        game = next(g for g in store.games(tid) if g.number == FAULTY)
    finally:
        store.close()
    assert (game.status, game.attempt) == ("done", 4), "2 platform faults, 1 referee failure, then played"


def _standings(path: Path) -> str:
    store = Store(load_config(path).database)
    try:
        tid = store.tournament_id("fake")
        assert tid is not None
        return standings_json(current_standings(store, tid))
    finally:
        store.close()


# --- a late attempt: its worker frozen while another attempt took the game over ---------------------


@pytest.mark.parametrize("ending", ["fault", "failure", "result"])
def test_what_a_late_attempt_ends_with_is_dropped_in_one_line_and_counts_for_nothing(
        ending: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # a worker frozen past the stall threshold wakes with its game another attempt now owns: a
    # platform fault (a timeout that ran out while it was frozen), a failure (its time bound
    # counted the freeze) or a result is dropped, nothing is counted against the game, nothing
    # puts it back, no traceback: the caller (a worker) neither retries the job nor pauses
    path = tournament(tmp_path / "late")
    config = load_config(path)
    store = Store(config.database)
    try:
        tid = open_tournament(store, config)
        [late] = store.claim(tid, 1)
        taken: list[GameTask] = []

        async def play(setup: GameSetup, observe: Observer | None) -> GameReport:
            assert store.requeue_running(tid) == 1  # the stalled-jobs check gave the game to another attempt
            taken.extend(store.claim(tid, 1))
            if ending == "fault":
                raise PlatformFault("sandbox", "bwrap could not be run: timed out after 10 seconds")
            if ending == "failure":
                raise RuntimeError("the game took longer than its time control allows")
            return await FakeExecutor().play(setup, [SeatBot(b["name"], BotEndpoint.parse(b["address"]))
                                                     for b in BOTS[:2]], observe)

        async def quietly() -> int:
            return logging.DEBUG  # what a worker's not_ours says once its job is another worker's

        games = ClaimedGames(store, asyncio.to_thread, logging.getLogger("arena.test.late"), not_ours=quietly)
        setup = game_setup(config, late.number, late.seat_bots, late.deck_seed)
        with caplog.at_level(logging.DEBUG, logger="arena.test.late"):
            outcome = asyncio.run(games.play(late, lambda: setup, play))
        game = next(g for g in store.games(tid) if g.number == late.number)
        with store.session() as s:
            faults = s.scalar(select(Game.platform_faults).where(Game.id == late.id))
    finally:
        store.close()
    assert isinstance(outcome, NotOurs) and (outcome.report is not None) == (ending == "result")
    assert [(t.id, t.attempt) for t in taken] == [(late.id, 2)]
    assert (game.status, game.attempt, game.error, game.result, faults) == ("running", 2, None, None, 0)
    assert [(r.levelno, r.exc_info) for r in caplog.records] == [(logging.DEBUG, None)], caplog.text
    assert f"game {late.number} attempt 1 was no longer ours; " in caplog.text
