"""`arena serve` ladders (arena/ladder.py) as real processes, with the sample bots over real gRPC
and a real (SQLite) database: rounds on the file's interval, a bot added or removed from another process
between rounds, the new bot's pairings first, SIGTERM / SIGINT stopping cleanly and the next
start finishing the round, and the usage errors."""

from __future__ import annotations

import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from arena.config import LadderConfig, load_config
from arena.play.ladder import describe_schedule, ladder_trigger, plan_round
from arena.play.runner import current_standings
from arena.rating.ratings import Rating
from arena.store.store import GameRow, Store
from arena.store.versions import Entry
from tests.arena_support import (
    MARKER_ENV,
    kill_marked_processes,
    marked_processes,
    toml_value,
    wait_no_marked_processes,
)
from tests.conftest import python_bot_command, sample_bot_path
from tests.support import arena_here

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 120.0  # bound of every wait for a round or a process: generous for a loaded 2-core machine
TIME = {"move_ms": 2000, "startup_ms": 20000}  # a move time no sample bot can miss on a loaded machine
T = TypeVar("T")
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
OVERSUBSCRIBED = "arena: warning: concurrency "


def bot_command(script: str) -> str:
    return shlex.join([sys.executable, str(sample_bot_path(script))])


GREEDY = {"name": "greedy", "command": bot_command("greedy_bot.py")}
RANDOM_A = {"name": "random-a", "command": bot_command("random_bot.py"), "env": {"CASINO_BOT_SEED": "11"}}
RANDOM_B = {"name": "random-b", "command": bot_command("random_bot.py"), "env": {"CASINO_BOT_SEED": "22"}}
# a gated bot (gated()) waits for the test at every move: the clock never decides, the test's own bound does
GATE_TIME = {"move_ms": 120_000, "startup_ms": 20_000}


def gated(name: str, folder: Path) -> tuple[dict[str, Any], Path]:
    """A bot (tests/bots/scripted_bot.py, first legal move) that plays no move until the returned
    gate file exists, in ``folder``/gates (made here): a round it plays in cannot end before the
    test opens the gate, so a round due meanwhile is skipped (rounds never overlap) and the next
    one is planned only after whatever the test did first, however long that took."""
    gates = folder / "gates"
    gates.mkdir(mode=0o755, exist_ok=True)
    gate = gates / "open"
    return {"name": name, "command": python_bot_command("gate", after=1), "env": {"SCRIPTED_BOT_GATE": str(gate)}}, gate


def write_ladder(path: Path, database: str, bots: list[dict[str, Any]], ladder: dict[str, Any] | None,
                 concurrency: int = 2, time_control: dict[str, int] | None = None,
                 sandbox: dict[str, Any] | None = None) -> Path:
    """A 2-player tournament file (seeded, fast moves unless ``time_control``) with the given
    [ladder] section, or none, and a [sandbox] table when ``sandbox``."""
    lines = [f"name = {toml_value(path.stem)}", "players = 2", "seed = 11", f"concurrency = {concurrency}",
             f"database = {toml_value(database)}", "", "[time]",
             *(f"{k} = {v}" for k, v in (time_control or TIME).items())]
    if sandbox is not None:
        lines += ["", "[sandbox]", *(f"{k} = {toml_value(v)}" for k, v in sandbox.items())]
    for bot in bots:
        lines += ["", "[[bots]]", *(f"{k} = {toml_value(v)}" for k, v in bot.items())]
    if ladder is not None:
        lines += ["", "[ladder]", *(f"{k} = {toml_value(v)}" for k, v in ladder.items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def assert_no_processes_left(marker: str, wait_s: float = 10.0) -> None:
    """No process of this test's ladder (server or bot) is alive, polling up to ``wait_s``."""
    left = wait_no_marked_processes(marker, wait_s)
    assert not left, f"processes left running: {left}"


def wait_for(what: str, check: Callable[[], T | None], proc: subprocess.Popen[bytes] | None = None) -> T:
    """Poll ``check`` until it returns something truthy (bounded by WAIT_S); fail early if ``proc`` exits."""
    deadline = time.monotonic() + WAIT_S
    while True:
        value = check()
        if value:
            return value
        assert proc is None or proc.poll() is None, f"`arena serve` exited ({proc.returncode}) before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


class Ladder:
    """`arena` commands on one tournament file, as real processes, all carrying one marker."""

    def __init__(self, path: Path, folder: Path) -> None:
        self.path = path
        self.folder = folder
        self.marker = secrets.token_hex(8)
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), MARKER_ENV: self.marker}
        self.procs: list[subprocess.Popen[bytes]] = []
        self.serves = 0
        self.config = load_config(path)
        # migrate the database here, before any server shares it
        self.store = Store(self.config.database)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """A quick command (``bots ...``, a refused ``serve``): arena's main in this process, with the marker."""
        return arena_here(*args, env={MARKER_ENV: self.marker})

    def start_serve(self, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        """`arena serve FILE ARGS` in the background; (process, its stdout file)."""
        self.serves += 1
        out = self.folder / f"serve-{self.serves}.out"
        with open(out, "wb") as stdout, open(out.with_suffix(".err"), "wb") as stderr:
            proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(self.path), *args], cwd=ROOT,
                                    env=self.env, stdout=stdout, stderr=stderr)
        self.procs.append(proc)
        return proc, out

    def finish(self, proc: subprocess.Popen[bytes], out: Path) -> str:
        """Wait (bounded) for a serve to exit; its stdout. It must exit 0 with nothing on stderr."""
        status = proc.wait(timeout=WAIT_S)
        text = out.read_text(encoding="utf-8")
        err = out.with_suffix(".err").read_text(encoding="utf-8")
        assert status == 0, f"exit status {status}\n{text[-3000:]}\n{err[-3000:]}"
        if self.config.concurrency > CORES:  # a machine with fewer cores than the file's concurrency is warned
            err = err.removeprefix(err.splitlines(keepends=True)[0]) if err.startswith(OVERSUBSCRIBED) else err
        assert err == "", err
        return text

    def serve(self, *args: str) -> str:
        return self.finish(*self.start_serve(*args))

    @property
    def tid(self) -> int | None:
        return self.store.tournament_id(self.config.name)

    def games(self) -> list[GameRow]:
        tid = self.tid
        return self.store.games(tid) if tid is not None else []

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
        for pid, _ in marked_processes(self.marker):  # a failed test must not leave bots behind
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.store.close()


@pytest.fixture
def make_ladder(tmp_path: Path) -> Iterator[Callable[..., Ladder]]:
    """``make_ladder(bots, ladder, concurrency=2, gate=None)``: a ladder file (SQLite database next to
    it) and its commands. With ``gate`` (``gated``'s), the gated bot's sandbox may read its folder
    and every bot gets the gate's move time."""
    made: list[Ladder] = []

    def make(bots: list[dict[str, Any]], ladder: dict[str, Any] | None, concurrency: int = 2,
             gate: Path | None = None) -> Ladder:
        path = write_ladder(tmp_path / "ladder.toml", f"sqlite:///{tmp_path / 'ladder.db'}", bots, ladder, concurrency,
                            GATE_TIME if gate is not None else None,
                            {"read_only": [str(gate.parent)]} if gate is not None else None)
        made.append(Ladder(path, tmp_path))
        return made[-1]

    yield make
    for ladder in made:
        ladder.close()


def by_round(games: list[GameRow]) -> dict[int, list[GameRow]]:
    rounds: dict[int, list[GameRow]] = {}
    for g in games:
        rounds.setdefault(g.round, []).append(g)
    return rounds


def ratings_after(store: Store, tid: int, last_game: int) -> dict[str, Rating]:
    """Every bot's rating after game ``last_game``, from the rating history (the default if it had no game)."""
    ratings: dict[str, Rating] = {}
    for number, name, mu, sigma in store.rating_history(tid):
        if number <= last_game:
            ratings[name] = Rating(mu, sigma)
    return ratings


def assert_played_once(ladder: Ladder) -> list[GameRow]:
    """Every game is done with a result, was started exactly once, and was rated exactly once."""
    tid = ladder.tid
    assert tid is not None
    games = ladder.store.games(tid)
    assert [g.number for g in games] == list(range(1, len(games) + 1))
    assert [(g.number, g.status, g.attempt) for g in games if (g.status, g.attempt) != ("done", 1)] == []
    assert all(g.result is not None and g.error is None for g in games)
    assert ladder.store.tournament(tid).rated_through == len(games)
    history = ladder.store.rating_history(tid)
    assert len(history) == sum(len(g.seat_bots) for g in games)  # one rating entry per bot per game
    return games


# --- 1. rounds, and a bot added between them ------------------------------------------------------


def test_bot_added_between_rounds_plays_first_in_the_next_round(make_ladder: Callable[..., Ladder],
                                                               tmp_path: Path) -> None:
    # The bot is added while round 1 plays, right after the round is scheduled: round 1 keeps the pool
    # it started with, and round 2 sees the new bot whatever the machine's speed: round 1's gated bot
    # holds the round open until the `arena bots add` process has returned (rounds never overlap: the
    # ticks meanwhile are skipped). Before, a 6 s interval was to outlast that process, whose start
    # took longer on a loaded machine: round 2 was planned before the bot came.
    gated_bot, gate = gated("gated", tmp_path)
    ladder = make_ladder([GREEDY, RANDOM_A, gated_bot], {"interval": "1s", "pairings_per_bot": 1}, gate=gate)
    proc, out = ladder.start_serve("--rounds", "2")
    round_1 = wait_for("round 1 to be scheduled", lambda: by_round(ladder.games()).get(1), proc)
    newbie_command = bot_command("random_bot.py")
    added = ladder.run("bots", "add", "newbie", newbie_command, "-f", str(ladder.path))
    assert added.returncode == 0, added.stderr
    assert added.stdout == f"added newbie: {newbie_command}\n"
    assert by_round(ladder.games()).keys() == {1}, "round 1 is held open until the bot is added"
    gate.touch()
    text = ladder.finish(proc, out)

    tid = ladder.tid
    assert tid is not None
    games = assert_played_once(ladder)
    bots = ladder.store.bots(tid)
    assert [b.name for b in bots] == ["greedy", "random-a", "gated", "newbie"]
    newbie = bots[3].position
    rounds = by_round(games)
    assert sorted(rounds) == [1, 2] and ladder.store.tournament(tid).rounds == 2
    assert [g.number for g in rounds[1]] == [g.number for g in round_1]
    assert all(newbie not in g.seat_bots for g in rounds[1]), "round 1 was scheduled before the bot was added"

    # round 2: the newcomer, new to the pool, has its pairings chosen (and played) first, enough of
    # them for its first games (one per opponent here: new_bot_games 8 is more than 3 pairings give)
    last_1 = rounds[1][-1]
    before = ratings_after(ladder.store, tid, last_1.number)
    assert "newbie" not in before
    assert all(r.sigma < 25 / 3 for r in before.values())
    second = rounds[2]
    assert second[0].number == last_1.number + 1
    assert newbie in second[0].seat_bots and newbie in second[1].seat_bots  # the first duplicate set
    assert second[0].set_number == second[1].set_number == last_1.set_number + 1
    # exactly the round ladder_pairings and schedule make from the ratings at its start
    history = {b.position: Entry(0, max((g.number for g in rounds[1] if b.position in g.seat_bots), default=0),
                                 entered_later=b.name == "newbie") for b in bots}
    expected = plan_round(ladder.config, bots, before, 2, last_1.number, last_1.set_number, history)
    assert {tuple(sorted(g.seat_bots)) for g in second[:6]} == {(p, newbie) for p in range(3)}
    assert [(g.number, g.seat_bots, g.deck_seed, g.set_number) for g in second] == \
        [(s.number, s.seat_bots, s.deck_seed, s.set_number) for s in expected]
    assert not {g.deck_seed for g in second} & {g.deck_seed for g in rounds[1]}, "round 2 has fresh decks"

    standings = current_standings(ladder.store, tid)
    match = re.search(r"^round 2: (\d+) games played; leader (\S+) ", text, flags=re.M)
    assert match, text
    assert int(match.group(1)) == len(second) and match.group(2) == standings.rows[0].name
    assert re.search(r"^round 1: \d+ games played; leader ", text, flags=re.M), text
    assert {"greedy", "newbie"} <= set(re.findall(r"│\s*\d+\s*│\s*(\S+)\s*│", text))  # standings tables
    assert_no_processes_left(ladder.marker)


# --- 2. signals --------------------------------------------------------------------------------------


@pytest.mark.parametrize("signals", [["SIGTERM"], ["SIGINT", "SIGINT"]], ids=["sigterm", "sigint-twice"])
def test_signal_stops_cleanly_and_the_next_start_finishes_the_round(make_ladder: Callable[..., Ladder],
                                                                    signals: list[str]) -> None:
    # one game at a time: when game 1 is seen running, every other game is still pending
    ladder = make_ladder([GREEDY, RANDOM_A, RANDOM_B], {"interval": "1h", "pairings_per_bot": 2}, concurrency=1)
    proc, out = ladder.start_serve()
    running = wait_for("a game to start",
                       lambda: [g for g in ladder.games() if g.status == "running"], proc)
    assert [g.number for g in running] == [1]
    proc.send_signal(signal.Signals[signals[0]])
    if len(signals) == 2:
        # signals sent back to back may merge into one: send the second once the first is handled
        wait_for("the first signal to be handled", lambda: "stopping" in out.read_text(encoding="utf-8"), proc)
        proc.send_signal(signal.Signals[signals[1]])
    text = ladder.finish(proc, out)
    assert_no_processes_left(ladder.marker)

    games = {g.number: g for g in ladder.games()}
    total = len(games)
    assert total == 6  # 3 bots, every pairing, one duplicate set each
    assert all(g.status in ("done", "pending") for g in games.values()), "nothing is left running"
    assert all((g.result is not None) == (g.status == "done") for g in games.values()), "no half-written result"
    first = games[1]
    if len(signals) == 1:
        # the running game played to its end; nothing else started
        assert (first.status, first.attempt) == ("done", 1)
        assert "round 1: 1 game played, stopped with 5 left for the next start" in text
    else:
        # the second signal abandoned it: back to pending, to be replayed
        assert (first.status, first.attempt, first.error) == ("pending", 1, "interrupted; to be replayed")
        assert "abandoning the running games" in text
        assert "round 1: abandoned with 6 game(s) left for the next start" in text
    assert [(g.status, g.attempt) for n, g in games.items() if n > 1] == [("pending", 0)] * (total - 1)

    # the next start plays the games left, as round 1, and schedules nothing new
    text = ladder.serve("--rounds", "1")
    assert f"round 1: {total - (first.status == 'done')} game(s) left by an earlier run" in text
    after = {g.number: g for g in ladder.games()}
    assert sorted(after) == sorted(games)
    assert all(g.status == "done" and g.result is not None and g.round == 1 for g in after.values())
    assert all(after[n].attempt == games[n].attempt + (games[n].status == "pending") for n in games)
    assert_no_processes_left(ladder.marker)


# --- 3. removing a bot ----------------------------------------------------------------------------


def test_removed_bot_leaves_later_rounds_but_keeps_its_games_and_rating(make_ladder: Callable[..., Ladder]) -> None:
    ladder = make_ladder([GREEDY, RANDOM_A, RANDOM_B], {"interval": "1h", "pairings_per_bot": 1})
    ladder.serve("--rounds", "1")
    tid = ladder.tid
    assert tid is not None
    round_1 = ladder.games()
    removed = next(b for b in ladder.store.bots(tid) if b.name == "random-b")
    its_games = [g.number for g in round_1 if removed.position in g.seat_bots]
    assert its_games, "every bot has a pairing in round 1"
    rating = ladder.store.ratings(tid)["random-b"]

    done = ladder.run("bots", "remove", "random-b", "-f", str(ladder.path))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "removed random-b (its games and ratings stay)\n"
    assert [b.name for b in ladder.store.bots(tid, active_only=True)] == ["greedy", "random-a"]

    text = ladder.serve("--rounds", "1")
    games = assert_played_once(ladder)
    round_2 = [g for g in games if g.round == 2]
    assert round_2, text
    assert all(removed.position not in g.seat_bots for g in round_2)
    assert {frozenset(g.seat_bots) for g in round_2} == {frozenset({0, 1})}  # the two bots left
    standings = {row.name: row for row in current_standings(ladder.store, tid).rows}
    row = standings["random-b"]
    assert row.games == len(its_games)
    assert (row.mu, row.sigma) == (rating.mu, rating.sigma)
    assert ladder.store.ratings(tid)["random-b"] == rating
    assert "random-b" in text  # still in the printed standings

    # one bot left: rounds are skipped (and not counted), until the ladder is stopped
    assert ladder.run("bots", "remove", "random-a", "-f", str(ladder.path)).returncode == 0
    proc, out = ladder.start_serve("--rounds", "1")
    wait_for("the round to be skipped", lambda: "round skipped: 1 active bot(s)" in out.read_text(encoding="utf-8"),
             proc)
    proc.send_signal(signal.SIGTERM)
    ladder.finish(proc, out)
    assert len(ladder.games()) == len(games)
    assert_no_processes_left(ladder.marker)


def test_removed_bot_processes_stop_after_the_round_while_the_ladder_goes_on(
        make_ladder: Callable[..., Ladder], tmp_path: Path) -> None:
    # The leaver carries a marker of its own, so its processes can be told from the others'. It is
    # removed while round 1 plays: it holds the round open (a gated bot) until the `arena bots
    # remove` process has returned, so round 2 is planned without it however long that process
    # took to start (over the 6 s interval on a loaded machine). By the end of round 2 its processes
    # are stopped, while the server and the bots still in the pool stay up for round 3.
    leaver = secrets.token_hex(8)
    gated_bot, gate = gated("leaver", tmp_path)
    ladder = make_ladder([GREEDY, RANDOM_A, {**gated_bot, "env": {**gated_bot["env"], MARKER_ENV: leaver}}],
                         {"interval": "6s", "pairings_per_bot": 1}, gate=gate)
    proc, out = ladder.start_serve()
    try:
        wait_for("round 1 to be scheduled", lambda: by_round(ladder.games()).get(1), proc)
        assert ladder.run("bots", "remove", "leaver", "-f", str(ladder.path)).returncode == 0
        assert by_round(ladder.games()).keys() == {1}, "round 1 is held open until the bot is removed"
        gate.touch()
        wait_for("round 2 to be played",
                 lambda: re.search(r"^round 2: \d+ games? played", out.read_text(encoding="utf-8"), flags=re.M), proc)
        assert marked_processes(leaver) == [], "the removed bot's processes are stopped after the round"
        staying = {cmd for _, cmd in marked_processes(ladder.marker)}
        assert any("greedy_bot.py" in cmd for cmd in staying) and any("random_bot.py" in cmd for cmd in staying), \
            f"the pool's bots keep their processes between rounds: {staying}"
        assert proc.poll() is None
        games = ladder.games()
        removed = next(b for b in ladder.store.bots(ladder.tid or 0) if b.name == "leaver").position
        assert any(removed in g.seat_bots for g in games if g.round == 1)
        assert all(removed not in g.seat_bots for g in games if g.round >= 2)

        # with one bot left the next round is skipped, and the bot removed now is stopped all the same
        assert ladder.run("bots", "remove", "random-a", "-f", str(ladder.path)).returncode == 0
        wait_for("round 3 to be skipped",
                 lambda: "round skipped: 1 active bot(s)" in out.read_text(encoding="utf-8"), proc)
        staying = {cmd for _, cmd in marked_processes(ladder.marker)}
        assert not any("random_bot.py" in cmd for cmd in staying), f"random-a is stopped: {staying}"
        assert any("greedy_bot.py" in cmd for cmd in staying)
        proc.send_signal(signal.SIGTERM)
        ladder.finish(proc, out)
    finally:
        kill_marked_processes(leaver)
    assert_no_processes_left(ladder.marker)


# --- 4. the schedule: interval or cron -------------------------------------------------------------


def test_ladder_trigger_fires_on_the_interval_or_the_crontab() -> None:
    every = ladder_trigger(LadderConfig(interval_s=90.0, cron=None, pairings_per_bot=2, sets_per_pairing=1))
    assert isinstance(every, IntervalTrigger) and every.interval == timedelta(seconds=90)

    ladder = LadderConfig(interval_s=None, cron="*/10 * * * *", pairings_per_bot=2, sets_per_pairing=1)
    cron = ladder_trigger(ladder)
    assert isinstance(cron, CronTrigger)
    now = datetime(2026, 11, 30, 9, 3, 20, tzinfo=cron.timezone)  # the crontab is in local time
    fires = []
    for _ in range(3):
        now = cron.get_next_fire_time(None, now + timedelta(microseconds=1))
        fires.append(now.strftime("%H:%M:%S"))
    assert fires == ["09:10:00", "09:20:00", "09:30:00"]
    assert describe_schedule(ladder) == "on cron '*/10 * * * *'"
    assert [describe_schedule(LadderConfig(interval_s=v, cron=None, pairings_per_bot=1, sets_per_pairing=1))
            for v in (90.0, 600.0, 7200.0, 86400.0)] == ["every 90s", "every 10m", "every 2h", "every 1d"]


def test_cron_ladder_plays_its_first_round_at_start(make_ladder: Callable[..., Ladder]) -> None:
    # a crontab's next time may be a minute away: the first round is not kept waiting for it
    ladder = make_ladder([GREEDY, RANDOM_A], {"cron": "0 0 1 1 *", "pairings_per_bot": 1})
    text = ladder.serve("--rounds", "1")
    assert "a round on cron '0 0 1 1 *'" in text
    assert re.search(r"^round 1: 2 games played; leader ", text, flags=re.M), text
    games = assert_played_once(ladder)
    assert [g.round for g in games] == [1, 1]
    assert_no_processes_left(ladder.marker)


def test_serve_warns_once_when_concurrency_exceeds_the_cores(make_ladder: Callable[..., Ladder]) -> None:
    """A ladder whose concurrency is above the cores: one warning line on stderr when `arena serve`
    starts; the ladder still runs."""
    ladder = make_ladder([GREEDY, RANDOM_A], {"interval": "1h", "pairings_per_bot": 1}, concurrency=CORES + 1)
    proc, out = ladder.start_serve("--rounds", "1")
    assert proc.wait(timeout=WAIT_S) == 0, out.with_suffix(".err").read_text(encoding="utf-8")
    (line,) = out.with_suffix(".err").read_text(encoding="utf-8").splitlines()
    assert line.startswith(f"{OVERSUBSCRIBED}{CORES + 1} is more than the {CORES} CPU core(s) here: "), line
    assert re.search(r"^round 1: 2 games played; leader ", out.read_text(encoding="utf-8"), flags=re.M)
    assert_no_processes_left(ladder.marker)


# --- 5. usage errors --------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["no-ladder", "rounds-0"])
def test_serve_usage_error_is_one_line_and_exit_2(make_ladder: Callable[..., Ladder], case: str) -> None:
    ladder = make_ladder([GREEDY, RANDOM_A], None if case == "no-ladder" else {"interval": "1h"})
    args = ["--rounds", "0"] if case == "rounds-0" else []
    done = ladder.run("serve", str(ladder.path), *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("arena: error: "), done.stderr
    assert ("no [ladder] section" if case == "no-ladder" else "--rounds must be at least 1") in lines[0]
    assert ladder.tid is None and marked_processes(ladder.marker) == []
