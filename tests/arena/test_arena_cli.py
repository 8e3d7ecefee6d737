"""The ``arena`` command as a real process: ``run`` (and its resume of a finished tournament),
``standings`` in three formats, ``games``, ``show`` and ``export`` against one small tournament
played once per module, and every usage problem as exit status 2 with one ``arena: error:`` line."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from arena.play import session as play_session
from arena.cli.live import run_tournament
from arena.config import load_config
from tests.conftest import bot_processes, python_bot_command, sample_bot_path
from tests.support import ROOT, arena_here, assert_usage_error, run_arena, table_rows

NAME = "cli"  # part of every game id, which seeds the random bots: keep it fixed
BOTS = 3
GAMES = 6  # 3 pairings x games_per_pairing 2
RUN_TIMEOUT_S = 180
CMD_TIMEOUT_S = 60
STANDINGS_FIELDS = ["rank", "name", "mu", "sigma", "conservative", "games", "wins", "draws", "losses",
                    "points_per_game", "forfeits", "provisional", "provisional_reasons"]
CSV_HEADER = ["rank", "name", "mu", "sigma", "conservative", "games", "wins", "draws", "losses", "points_per_game",
              "forfeits_timeout", "forfeits_illegal", "forfeits_crash", "forfeits_startup", "provisional",
              "provisional_reasons"]
START_LINE = re.compile(r"^tournament '(?P<name>[^']+)': (?P<bots>\d+) bots, (?P<games>\d+) games "
                        r"\((?P<played>\d+) already played\), (?P<at_once>\d+) at once; database sqlite:///\S+$")
PROGRESS_LINE = re.compile(r"^(\d+)/(\d+) games, [\d.]+ games/s$")
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
OVERSUBSCRIBED = "arena: warning: concurrency "
OLD_GAMES_COLUMNS = ["number", "round", "set", "deck_seed", "status", "attempt", "seats", "scores", "ranks", "reason",
                     "error"]
NEW_GAMES_COLUMNS = ["winner", "forfeited_by", "forfeit_kind", "forfeit_reason", "forfeit_at", "random_moves"]
MOVE_LINE = re.compile(r"^\s+(\d+)\. P(\d) (\S+): (\S.*)$")
SEAT_LINE = re.compile(r"^seat (\d) (\S+): (\d+) moves, median [\d.]+ ms, max [\d.]+ ms, CPU median [\d.]+ ms, max [\d.]+ ms$")
HANDS_LINE = re.compile(r"^ {8}hands (P0: .*)$")
TABLE_LINE = re.compile(r"^ {8}table loose: .*$")


def sample_bot(script: str) -> str:
    """The command line of a sample Python bot (deterministic ones only: random_bot.py, greedy_bot.py)."""
    return shlex.join([sys.executable, str(sample_bot_path(script))])


def bot_entry(name: str, command: str, seed: int | None = None) -> str:
    """One [[bots]] entry as TOML text (JSON strings are valid TOML basic strings)."""
    lines = ["[[bots]]", f"name = {json.dumps(name)}", f"command = {json.dumps(command)}"]
    if seed is not None:
        lines.append(f'env = {{ CASINO_BOT_SEED = "{seed}" }}')
    return "\n".join(lines) + "\n"


def tournament_text(name: str, bots: list[str], top: str = "") -> str:
    """A 2-player tournament file (one duplicate set per pairing, fast moves); ``top`` adds top-level lines."""
    return (f"name = {json.dumps(name)}\nplayers = 2\ngames_per_pairing = 2\nseed = 11\nconcurrency = 2\n{top}\n"
            "\n[time]\nmove_ms = 2000\n\n" + "\n".join(bots))


def wait_no_bots(patterns: tuple[str, ...], wait_s: float = 10.0) -> list[tuple[int, str]]:
    """Poll until no bot process of this test session matches ``patterns``; the ones still alive."""
    deadline = time.monotonic() + wait_s
    while (left := bot_processes(patterns)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def arena(*args: str) -> subprocess.CompletedProcess[str]:
    """A quick `arena` command (not one that plays games), run in this process; fails the test on a
    traceback."""
    done = arena_here(*args)
    assert "Traceback" not in done.stderr, done.stderr
    return done



@dataclass(frozen=True)
class Built:
    """The module's tournament: its file, both `arena run` outputs, and bots left running after them."""

    file: Path
    first: subprocess.CompletedProcess[str]
    second: subprocess.CompletedProcess[str]
    left_running: list[tuple[int, str]]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Three fast deterministic bots, a round robin of 6 games played by `arena run`, then run again."""
    folder = tmp_path_factory.mktemp("arena-cli")
    path = folder / "cli.toml"
    path.write_text(tournament_text(NAME, [
        bot_entry("random-1", sample_bot("random_bot.py"), seed=1),
        bot_entry("random-2", sample_bot("random_bot.py"), seed=2),
        bot_entry("greedy", sample_bot("greedy_bot.py")),
    ]), encoding="utf-8")
    first = run_arena("run", str(path), timeout=RUN_TIMEOUT_S)
    second = run_arena("run", str(path), timeout=RUN_TIMEOUT_S)
    return Built(path, first, second, wait_no_bots(("sample_bots/",)))


@pytest.fixture(scope="module")
def failing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-game tournament where one bot answers an illegal move on its third turn (so forfeits)."""
    folder = tmp_path_factory.mktemp("arena-cli-failing")
    path = folder / "failing.toml"
    path.write_text(tournament_text("failing", [
        bot_entry("illegal", python_bot_command("illegal", after=3)),
        bot_entry("greedy", sample_bot("greedy_bot.py")),
    ]), encoding="utf-8")
    done = run_arena("run", str(path), timeout=RUN_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert wait_no_bots(("scripted_bot.py", "sample_bots/")) == []
    return path


@pytest.fixture(scope="module")
def exported(built: Built, tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`arena export` of the module's tournament: its output and the folder written."""
    out = tmp_path_factory.mktemp("arena-cli-export") / "export"
    return run_arena("export", str(built.file), str(out), timeout=CMD_TIMEOUT_S), out


@pytest.fixture(scope="module")
def standings_json(built: Built) -> str:
    """`arena standings --format json` of the module's tournament (checked to succeed)."""
    done = arena("standings", str(built.file), "--format", "json")
    assert done.returncode == 0, done.stderr
    return done.stdout


def split_tables(out: str) -> tuple[list[list[str]], list[list[str]]]:
    """The body rows of the standings table and of the head-to-head table printed after it."""
    at = out.index("head to head")
    return table_rows(out[:at]), table_rows(out[at:])


# --- arena run --------------------------------------------------------------------------------


def test_run_prints_start_line_progress_and_both_tables(built: Built) -> None:
    done = built.first
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stderr == "" or (CORES < 2 and done.stderr.startswith(OVERSUBSCRIBED)), done.stderr
    lines = done.stdout.splitlines()
    start = START_LINE.match(lines[0])
    assert start, lines[0]
    assert start.group("name", "bots", "games", "played", "at_once") == (NAME, str(BOTS), str(GAMES), "0", "2")
    progress = [(int(m[1]), int(m[2])) for m in map(PROGRESS_LINE.match, lines) if m]
    # in a pipe: a line every PIPE_PROGRESS_S (as many as the machine's speed gives), then the last game's
    assert progress and progress[-1] == (GAMES, GAMES), progress
    assert [n for n, _ in progress] == sorted({n for n, _ in progress}) and {t for _, t in progress} == {GAMES}
    assert f"{NAME}: standings after {GAMES} games" in done.stdout
    standings, h2h = split_tables(done.stdout)
    assert sorted(r[1] for r in standings) == ["greedy", "random-1", "random-2"]
    assert [r[0] for r in standings] == ["1", "2", "3"]
    for row in standings:
        assert row[5] == "4" and int(row[6]) + int(row[7]) + int(row[8]) == 4, row  # 2 games x 2 opponents
        assert row[10] == "-", row  # nobody forfeits
    # head to head: a row per bot in standings order, "-" against itself, "score/2" against each other bot
    order = [r[1] for r in standings]
    assert [r[0] for r in h2h] == order
    for i, row in enumerate(h2h):
        for j, cell in enumerate(row[1:]):
            assert (cell == "-") if i == j else re.fullmatch(r"[\d.]+/2", cell), (row, cell)
    assert lines[-1].startswith("database: sqlite:///") and "bot logs: " in lines[-1]
    assert built.left_running == [], "bot processes left running after `arena run`"


def test_run_warns_once_when_concurrency_exceeds_the_cores(built: Built) -> None:
    """More games at once than cores: one warning line on stderr at the start of the run (here a
    finished tournament, so nothing plays); as many as the cores: no warning."""
    over = arena("run", str(built.file), "--concurrency", str(CORES + 1))
    assert over.returncode == 0, over.stderr
    (line,) = over.stderr.splitlines()
    assert line.startswith(f"arena: warning: concurrency {CORES + 1} is more than the {CORES} CPU core(s) here: ")
    assert "may lose games on time" in line, line
    assert START_LINE.match(over.stdout.splitlines()[0]), over.stdout[:300]
    fits = arena("run", str(built.file), "--concurrency", str(CORES))
    assert (fits.returncode, fits.stderr) == (0, "")


@pytest.mark.parametrize("every_s, lines", [(0.0, [1, 2, 3, 4]), (1e9, [4])], ids=["every-game", "final-only"])
def test_progress_in_a_pipe_is_timed_and_ends_with_the_last_game(tmp_path: Path, every_s: float,
                                                                 lines: list[int]) -> None:
    """Not on a terminal, `arena run` prints a progress line when ``pipe_every_s`` has passed since
    the last one, and always after the last game: an interval of 0 gives a line per game, a huge
    one only the last line (whatever the machine's speed). In-process, real bots and database."""
    path = tmp_path / "pipe.toml"
    path.write_text(tournament_text("pipe", two_bots("greedy", "other")).replace(
        "games_per_pairing = 2", "games_per_pairing = 4"), encoding="utf-8")
    out = io.StringIO()
    status = asyncio.run(run_tournament(load_config(path), Console(file=out, width=120), pipe_every_s=every_s))
    assert status == 0, out.getvalue()[-2000:]
    progress = [m.groups() for m in map(PROGRESS_LINE.match, out.getvalue().splitlines()) if m]
    assert progress == [(str(n), "4") for n in lines]
    assert wait_no_bots(("sample_bots/",)) == []


def test_live_standings_on_a_terminal_are_computed_off_the_loop(tmp_path: Path) -> None:
    """On a terminal the live standings refresh (here after every game: ``refresh_s`` 0) in a
    thread, never on the loop that times the bots; each refresh reaches the display, and the run
    ends with the final tables. In-process, real bots and database, a console that is a terminal."""
    path = tmp_path / "live.toml"
    path.write_text(tournament_text("live", two_bots("greedy", "other")), encoding="utf-8")
    out = io.StringIO()
    computed: list[str] = []
    real = play_session.current_standings

    def noting(store, tid, settings=None):  # type: ignore[no-untyped-def]
        computed.append(threading.current_thread().name)
        return real(store, tid, settings)

    play_session.current_standings = noting  # type: ignore[assignment]
    try:
        console = Console(file=out, width=120, force_terminal=True)
        status = asyncio.run(run_tournament(load_config(path), console, refresh_s=0.0))
    finally:
        play_session.current_standings = real  # type: ignore[assignment]
    assert status == 0, out.getvalue()[-2000:]
    loop_thread = threading.current_thread().name
    # The final table alone is computed on the loop (after the run: no bot is timed then); it may be
    # noted before a live refresh's thread that started earlier, so only the count is checked.
    assert len(computed) >= 3 and computed.count(loop_thread) == 1, computed
    assert "live: standings after 2 games" in out.getvalue()
    assert wait_no_bots(("sample_bots/",)) == []


def test_run_again_plays_nothing_and_prints_the_same_standings(built: Built) -> None:
    done = built.second
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    start = START_LINE.match(done.stdout.splitlines()[0])
    assert start and start.group("games", "played") == (str(GAMES), str(GAMES)), done.stdout[:300]
    assert not [line for line in done.stdout.splitlines() if PROGRESS_LINE.match(line)], "a game was played again"
    assert split_tables(done.stdout) == split_tables(built.first.stdout)
    assert f"{NAME}: standings after {GAMES} games" in done.stdout


# --- arena standings ----------------------------------------------------------------------------


def test_standings_formats_agree(built: Built, standings_json: str) -> None:
    document = json.loads(standings_json)
    rows = document["standings"]
    assert [list(r) for r in rows] == [STANDINGS_FIELDS] * BOTS
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert set(rows[0]["forfeits"]) == {"timeout", "illegal", "crash", "startup"}
    assert all(sum(r["forfeits"].values()) == 0 for r in rows)
    assert sum(r["games"] for r in rows) == 2 * GAMES
    assert sum(r["wins"] for r in rows) == sum(r["losses"] for r in rows)
    assert sum(r["wins"] for r in rows) + sum(r["draws"] for r in rows) / 2 == GAMES
    conservative = [r["conservative"] for r in rows]
    assert conservative == sorted(conservative, reverse=True)
    pairs = {(h["bot"], h["opponent"]): h for h in document["head_to_head"]}
    assert len(pairs) == BOTS * (BOTS - 1) and all(h["games"] == 2 for h in pairs.values())
    for (a, b), h in pairs.items():
        assert h["score"] + pairs[b, a]["score"] == 2  # each game's point is shared between the two

    done = arena("standings", str(built.file), "--format", "csv")
    assert done.returncode == 0, done.stderr
    table = list(csv.reader(io.StringIO(done.stdout)))
    assert table[0] == CSV_HEADER
    assert [(r[1], int(r[5]), int(r[6]), int(r[7]), int(r[8])) for r in table[1:]] == \
        [(r["name"], r["games"], r["wins"], r["draws"], r["losses"]) for r in rows]
    assert [float(r[4]) for r in table[1:]] == conservative

    done = arena("standings", str(built.file), "--format", "table")
    assert done.returncode == 0, done.stderr
    assert f"{NAME}: standings" in done.stdout
    standings, h2h = split_tables(done.stdout)
    assert [(r[0], r[1], r[5], r[6], r[7], r[8]) for r in standings] == \
        [(str(r["rank"]), r["name"], str(r["games"]), str(r["wins"]), str(r["draws"]), str(r["losses"])) for r in rows]
    for row in h2h:
        for opponent, cell in zip([r["name"] for r in rows], row[1:]):
            if opponent != row[0]:
                assert cell == f"{pairs[row[0], opponent]['score']:g}/2"


def test_every_format_marks_a_bot_of_few_games_provisional_and_says_why(built: Built, standings_json: str) -> None:
    """Each bot has played 4 games: under the default 20, and σ is still wide (docs/tournaments.md)."""
    document = json.loads(standings_json)
    assert document["provisional"] == {"games": 20, "sigma": 2.5}
    for row in document["standings"]:
        assert row["provisional"] is True
        assert row["provisional_reasons"] == ["4 games of 20", f"σ {row['sigma']:.2f} > 2.5"]
    table = list(csv.DictReader(io.StringIO(arena("standings", str(built.file), "--format", "csv").stdout)))
    assert [(r["provisional"], r["provisional_reasons"]) for r in table] == [
        ("true", "; ".join(row["provisional_reasons"])) for row in document["standings"]]
    done = arena("standings", str(built.file))
    standings, _ = split_tables(done.stdout)
    assert [r[2] for r in standings] == [f"{row['conservative']:.2f}?" for row in document["standings"]]
    assert "? provisional: under 20 games or σ above 2.5" in " ".join(done.stdout.split())
    notes = [line for line in done.stdout.splitlines() if line.startswith("note: ")]
    assert len(notes) == len(document["rank_notes"])
    assert f"{NAME}: standings after {GAMES} games" in built.first.stdout and "? provisional" in built.first.stdout


def test_the_thresholds_come_from_the_file_and_change_no_tournament(built: Built, tmp_path: Path) -> None:
    path = copy_of_built(built, tmp_path)
    path.write_text(path.read_text(encoding="utf-8") + "\n[standings]\nprovisional_games = 4\nprovisional_sigma = 8\n",
                    encoding="utf-8")
    document = json.loads(arena("standings", str(path), "--format", "json").stdout)
    assert document["provisional"] == {"games": 4, "sigma": 8.0}
    assert [(r["provisional"], r["provisional_reasons"]) for r in document["standings"]] == [(False, [])] * BOTS
    assert "provisional" not in arena("standings", str(path)).stdout
    path.write_text(path.read_text(encoding="utf-8").replace("provisional_games = 4", "provisional_games = 5"),
                    encoding="utf-8")
    again = json.loads(arena("standings", str(path), "--format", "json").stdout)["standings"]
    assert [r["provisional_reasons"] for r in again] == [["4 games of 5"]] * BOTS


# --- arena games ---------------------------------------------------------------------------------


GAMES_HEADER = re.compile(r"^ game  set\s+bots by seat\s+status\s+result$")


def games_lines(done: subprocess.CompletedProcess[str]) -> list[list[str]]:
    """The words of each line `arena games` printed after its header row (checked to succeed)."""
    assert done.returncode == 0, done.stderr
    header, *lines = done.stdout.splitlines()
    assert GAMES_HEADER.match(header), header
    return [line.split() for line in lines]


def test_games_lists_every_game_and_filters_by_bot(built: Built) -> None:
    every = games_lines(arena("games", str(built.file)))
    assert [int(g[0]) for g in every] == list(range(1, GAMES + 1))
    for g in every:
        assert g[1] == "set" and g[4] == "v" and g[6] == "done", g
        assert re.fullmatch(r"\d+-\d+", g[7]) and g[8] in ("won", "draw"), g
    seats = {int(g[0]): (g[3], g[5]) for g in every}
    mine = games_lines(arena("games", str(built.file), "--bot", "random-1"))
    assert [int(g[0]) for g in mine] == [n for n, pair in seats.items() if "random-1" in pair]
    assert len(mine) == 4 and all("random-1" in (g[3], g[5]) for g in mine)
    # duplicate sets: each set is one pairing in both seatings
    sets: dict[str, list[tuple[str, str]]] = {}
    for g in every:
        sets.setdefault(g[2], []).append((g[3], g[5]))
    assert len(sets) == 3 and all(len(s) == 2 and s[0] == s[1][::-1] for s in sets.values()), sets


def test_games_failed_on_a_clean_tournament_says_no_games(built: Built) -> None:
    done = arena("games", str(built.file), "--failed")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "no games\n"


def test_games_failed_lists_forfeits_with_kind_and_reason(failing: Path) -> None:
    done = arena("games", str(failing), "--failed")
    assert done.returncode == 0, done.stderr
    header, *lines = done.stdout.splitlines()
    assert GAMES_HEADER.match(header), header
    games = [line for line in lines if not line.startswith(" " * 9)]
    failures = [line.strip() for line in lines if line.startswith(" " * 9)]
    assert [g.split()[0] for g in games] == ["1", "2"]  # both games: the illegal bot plays in each
    for line in games:
        assert " done " in line and "won by greedy (forfeit)" in line, line
    assert len(failures) == 2
    for line in failures:
        match = re.fullmatch(r"illegal \(seat (\d)\): illegal_move at deal \d+ play \d+: (.+) -> forfeit", line)
        assert match, line
        assert match.group(2).strip(), "the referee's reason is shown"
    seats = sorted(int(re.search(r"seat (\d)", line).group(1)) for line in failures)  # type: ignore[union-attr]
    assert seats == [0, 1]  # one game in each seat
    rows = json.loads(arena("standings", str(failing), "--format", "json").stdout)["standings"]
    assert {r["name"]: r["forfeits"]["illegal"] for r in rows} == {"greedy": 0, "illegal": 2}


def test_bots_list_has_a_header_row(tmp_path: Path) -> None:
    """`arena bots list`: a header, then each bot with its state, rating and command (a removed
    bot stays, marked removed). Listing starts no bot and plays nothing."""
    path = tmp_path / "pool.toml"
    path.write_text(tournament_text("pool", [*two_bots("greedy", "other"), LADDER]), encoding="utf-8")
    assert arena("bots", "remove", "other", "-f", str(path)).returncode == 0
    done = arena("bots", "list", "-f", str(path))
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["bot", "state", "mu", "sigma", "command", "or", "address"]
    assert [row.split()[:4] for row in rows] == [["greedy", "active", "25.00", "8.33"],
                                                 ["other", "removed", "25.00", "8.33"]]
    assert all(row.endswith(sample_bot("greedy_bot.py")) for row in rows)
    assert header.index("mu") + len("mu") == rows[0].index("25.00") + len("25.00"), "figures under their header"


# --- arena show ----------------------------------------------------------------------------------


def exported_game(exported: tuple[subprocess.CompletedProcess[str], Path],
                  number: int) -> tuple[dict[str, Any], list[str]]:
    """Game ``number``'s record from the module's export, and its bots by seat (games.csv)."""
    done, out = exported
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "records" / f"game-{number:06d}.json").read_text(encoding="utf-8"))
    with (out / "games.csv").open(encoding="utf-8", newline="") as f:
        (row,) = [g for g in csv.DictReader(f) if g["number"] == str(number)]
    return record, row["seats"].split()


def test_show_prints_the_game_move_by_move_with_timings(
        built: Built, exported: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    """Every play with the seat and the tournament's name of the bot that made it (not the name
    the bot calls itself), then the result and each seat's move times."""
    done = arena("show", str(built.file), "2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    record, seats = exported_game(exported, 2)
    assert lines[0] == f"game {NAME}-g2 [P0 {seats[0]}, P1 {seats[1]}]"
    # the record names seats as the tournament does; the bots call themselves otherwise
    assert [s["name"] for s in sorted(record["seats"], key=lambda s: s["seat"])] == seats
    assert {s["hello_name"] for s in record["seats"]}.isdisjoint(seats)
    # the moves shown are the stored record's, deal by deal
    deals = record["engine"]["deals"]
    assert len([line for line in lines if line.startswith("== deal ")]) == len(deals)
    shown = [m.groups() for m in map(MOVE_LINE.match, lines) if m]
    forced_mark = "  [forced: the only legal move]"
    assert [move.removesuffix(forced_mark) for _, _, _, move in shown] == [move for deal in deals
                                                                         for move in deal["moves"]]
    # the referee's own plays are marked, exactly those the record lists
    assert [i for i, (_, _, _, move) in enumerate(shown) if move.endswith(forced_mark)] == record.get("forced", [])
    # who made each play: the seat the referee timed for it, and the bot in that seat
    assert [int(seat) for _, seat, _, _ in shown] == [seat for seat, _ in record["timings_us"]]
    assert all(name == seats[int(seat)] for _, seat, name, _ in shown)
    winner = re.search(r"^(?:P(\d) (\S+) wins|draw) \(\w+\) after \d+ deal\(s\)", done.stdout, re.MULTILINE)
    assert winner, done.stdout[-500:]
    if winner.group(1) is not None:
        assert winner.group(2) == seats[int(winner.group(1))]
        assert record["result"]["winnerSide"] == int(winner.group(1))
    seat_lines = [m.groups() for m in map(SEAT_LINE.match, lines) if m]
    assert [(s, name) for s, name, _ in seat_lines] == [("0", seats[0]), ("1", seats[1])]
    # the seats' move counts are of the moves they were asked for: forced plays are the referee's
    assert sum(int(n) for _, _, n in seat_lines) == len(shown) - len(record.get("forced", []))


def test_show_full_gives_every_hand_and_the_table_before_each_play(
        built: Built, exported: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    """``--full``: before every play, each seat's hand and the table; the card played is in the
    mover's hand just before it."""
    done = arena("show", str(built.file), "3", "--full")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    record, _ = exported_game(exported, 3)
    plays = [i for i, line in enumerate(lines) if MOVE_LINE.match(line)]
    assert len(plays) == sum(len(d["moves"]) for d in record["engine"]["deals"]) > 0
    hands_before = []
    for i in plays:
        hands, table = HANDS_LINE.match(lines[i - 2]), TABLE_LINE.match(lines[i - 1])
        assert hands and table, lines[i - 2:i + 1]
        held = dict(part.split(": ") for part in hands.group(1).split(" / "))
        assert list(held) == ["P0", "P1"]
        move = MOVE_LINE.match(lines[i])
        assert move is not None
        card = move.group(4).split()[0]
        assert card in held[f"P{move.group(2)}"].split(), (lines[i - 2], lines[i])
        hands_before.append(held)
    first = [h.split() for h in hands_before[0].values()]
    assert [len(h) for h in first] == [4, 4] and not set(first[0]) & set(first[1])
    assert "hands" not in arena("show", str(built.file), "3").stdout, "only with --full"


def test_show_of_a_forfeit_says_who_forfeited_why_where_and_who_won(failing: Path) -> None:
    done = arena("show", str(failing), "1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "game failing-g1 [P0 illegal, P1 greedy]"
    plays = [m.groups() for m in map(MOVE_LINE.match, lines) if m]
    assert plays[-1][1:] == ("0", "illegal", "forfeits (illegal_move)")  # the play it did not make
    assert [seat for _, seat, _, _ in plays] == ["0", "1"] * (len(plays) // 2) + ["0"] * (len(plays) % 2)
    (why,) = [line for line in lines if line.endswith("-> forfeit")]
    assert re.fullmatch(rf"P0 illegal: illegal_move at deal 1 play {len(plays)}: \S+ .*\(rules? [\d, ]+\).* -> forfeit",
                        why), why
    assert "ended early: forfeit; P1 greedy wins after 1 deal(s): P0=0 P1=0" in lines


def test_show_unknown_game_is_a_usage_error(built: Built) -> None:
    line = assert_usage_error(arena("show", str(built.file), "999"), "arena")
    assert "999" in line


# --- arena export --------------------------------------------------------------------------------


def test_export_writes_records_games_standings_and_rating_history(
        exported: tuple[subprocess.CompletedProcess[str], Path], standings_json: str) -> None:
    done, out = exported
    assert done.returncode == 0, done.stderr
    assert f"exported {GAMES} game records" in done.stdout
    records = sorted(p.name for p in (out / "records").iterdir())
    assert records == [f"game-{n:06d}.json" for n in range(1, GAMES + 1)]
    for n in range(1, GAMES + 1):
        record = json.loads((out / "records" / f"game-{n:06d}.json").read_text(encoding="utf-8"))
        assert record["game_id"] == f"{NAME}-g{n}" and record["game_number"] == n
    with (out / "games.csv").open(encoding="utf-8", newline="") as f:
        header = next(csv.reader(f))
    assert header == OLD_GAMES_COLUMNS + NEW_GAMES_COLUMNS  # the original columns first, where they were
    with (out / "games.csv").open(encoding="utf-8", newline="") as f:
        games = list(csv.DictReader(f))
    assert [int(g["number"]) for g in games] == list(range(1, GAMES + 1))
    for g in games:  # nobody forfeits here: the forfeit columns are empty; a winner is one of the seats
        assert [g[c] for c in NEW_GAMES_COLUMNS[1:]] == ["", "", "", "", "0"], g
        assert g["winner"] in g["seats"].split() if g["winner"] else len(set(g["ranks"].split())) == 1, g
    # attempt 1 everywhere: the second `arena run` replayed nothing
    assert all(g["status"] == "done" and g["attempt"] == "1" and g["error"] == "" for g in games)
    assert all(len(g["seats"].split()) == 2 and len(g["scores"].split()) == 2 for g in games)
    standings_text = (out / "standings.json").read_text(encoding="utf-8")
    assert standings_text == standings_json
    history = json.loads((out / "rating_history.json").read_text(encoding="utf-8"))
    by_game: dict[int, list[str]] = {}
    for entry in history:
        assert set(entry) == {"game", "bot", "mu", "sigma"}
        by_game.setdefault(entry["game"], []).append(entry["bot"])
    assert sorted(by_game) == list(range(1, GAMES + 1))
    for g in games:
        assert sorted(by_game[int(g["number"])]) == sorted(g["seats"].split())  # both players, once each
    final = {e["bot"]: e["mu"] for e in history}  # the last entry of each bot is its current rating
    assert final == {r["name"]: r["mu"] for r in json.loads(standings_text)["standings"]}


def copy_of_built(built: Built, folder: Path) -> Path:
    """The module's finished tournament (file and SQLite database) copied into ``folder``."""
    for source in built.file.parent.iterdir():
        if source.name.startswith(built.file.stem + ".") and source.is_file():  # cli.toml, cli.db (-wal, -shm)
            shutil.copy2(source, folder / source.name)
    return folder / built.file.name


def test_a_changed_file_is_refused_with_each_changed_setting_old_and_new(built: Built, tmp_path: Path) -> None:
    path = copy_of_built(built, tmp_path)
    text = path.read_text(encoding="utf-8")
    assert "move_ms = 2000" in text and "seed = 11" in text
    path.write_text(text.replace("move_ms = 2000", "move_ms = 2500").replace("seed = 11", "seed = 12")
                    .replace('name = "greedy"', 'name = "greedy2"'), encoding="utf-8")
    line = assert_usage_error(arena("run", str(path)), "arena")
    assert (f"tournament {NAME!r} in sqlite:///{tmp_path / 'cli.db'} was scheduled with other settings "
            '([[bots]] names: "greedy2" added and "greedy" removed; seed 11 -> 12; [time] move_ms 2000 -> 2500); '
            ) in line, line
    assert "rules" not in line and "players" not in line  # only what changed


# --- reading a read-only copy ------------------------------------------------------------------------

NOBODY = 65534  # the unprivileged user root runs the readers as: root itself ignores permission bits


def reader_argv(*args: str) -> list[str]:
    """`arena ARGS` as a process that may not write a read-only folder: as root, under setpriv as nobody."""
    argv = [sys.executable, "-m", "arena.cli", *args]
    if os.geteuid() != 0:
        return argv
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]


def run_reader(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(reader_argv(*args), cwd="/", capture_output=True, text=True, timeout=CMD_TIMEOUT_S, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done


@pytest.fixture
def read_only_copy(built: Built) -> Iterator[Path]:
    """The module's finished tournament (file and database) in a folder nobody may write, the
    file and database read-only too; outside pytest's own (root-only) temporary folder, so the
    unprivileged reader can reach it."""
    opened: list[tuple[Path, int]] = []  # folders above the checkout made passable for the reader
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root, and without setpriv there is no unprivileged user to read as")
        # a clone in a private folder (mktemp -d makes it 0700): for this test, let others read the
        # checkout and pass through (o+x, not read) the folders above it, as a shared checkout would
        for folder, bits in ((ROOT, 0o005), *((parent, 0o001) for parent in ROOT.parents)):
            mode = folder.stat().st_mode
            if mode & bits != bits:
                opened.append((folder, mode))
                folder.chmod(mode | bits)
        probe = run_reader("--help")
        if probe.returncode != 0:
            for folder, mode in opened:
                folder.chmod(mode)
            pytest.skip(f"running as root, and user {NOBODY} cannot run this checkout's Python: {probe.stderr[-300:]}")
    base = Path(tempfile.mkdtemp(prefix="arena-readonly-", dir="/tmp"))
    base.chmod(0o755)
    folder = base / "copy"
    folder.mkdir()
    path = copy_of_built(built, folder)
    # Programs any user may look at (how bots are started is not part of the stored settings), so
    # what is tested here is reading the database, not the bot checks a reading command skips.
    path.write_text(path.read_text(encoding="utf-8").replace(sys.executable, "/usr/bin/env"), encoding="utf-8")
    (base / "out").mkdir(mode=0o777)
    (base / "out").chmod(0o777)  # where the reader may export to
    for item in (*folder.iterdir(), folder):  # shared for reading (the arena makes its database its own: 0600)
        item.chmod(item.stat().st_mode & ~0o222 | 0o444)
    try:
        yield path
    finally:
        for item in (folder, *folder.iterdir()):
            item.chmod(item.stat().st_mode | 0o200)
        shutil.rmtree(base)
        for opened_folder, mode in opened:
            opened_folder.chmod(mode)


def test_reading_commands_work_on_a_read_only_copy(built: Built, read_only_copy: Path,
                                                   exported: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    folder = read_only_copy.parent
    names = sorted(p.name for p in folder.iterdir())
    assert "cli.db" in names and not os.access(folder, os.W_OK) or os.geteuid() == 0
    for args in (["standings", "{file}", "--format", "json"], ["games", "{file}"], ["show", "{file}", "2"],
                 ["bots", "list", "-f", "{file}"]):
        done = run_reader(*(a.format(file=read_only_copy) for a in args))
        assert done.returncode == 0, (args, done.stderr)
        assert done.stdout == arena(*(a.format(file=built.file) for a in args)).stdout, args
    out = folder.parent / "out" / "export"
    done = run_reader("export", str(read_only_copy), str(out))
    assert done.returncode == 0, done.stderr
    assert (out / "games.csv").read_text(encoding="utf-8") == (exported[1] / "games.csv").read_text(encoding="utf-8")
    assert sorted(p.name for p in folder.iterdir()) == names, "the reader left no -wal/-shm file behind"


def test_a_write_ahead_log_that_cannot_be_read_is_one_clear_line(read_only_copy: Path) -> None:
    folder = read_only_copy.parent
    folder.chmod(0o755)
    (folder / "cli.db-wal").write_bytes(b"\0" * 4096)  # a log left by a killed writer, without its -shm
    folder.chmod(0o555)
    try:
        done = run_reader("standings", str(read_only_copy))
    finally:
        folder.chmod(0o755)
        (folder / "cli.db-wal").unlink()
        folder.chmod(0o555)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert "write-ahead log cli.db-wal holds games not yet in the file" in line and "cli.db-shm" in line, line


def test_reading_commands_create_nothing(tmp_path: Path) -> None:
    path = tmp_path / "never.toml"
    path.write_text(tournament_text("never", two_bots()), encoding="utf-8")
    line = assert_usage_error(arena("games", str(path)), "arena")
    assert f"'never' has not been run yet (no database file {tmp_path / 'never.db'})" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["never.toml"]


def test_reading_commands_do_not_need_the_bots_programs(built: Built, tmp_path: Path) -> None:
    """A finished tournament moved where its bots are not (another machine) can still be read."""
    path = copy_of_built(built, tmp_path)
    path.write_text(path.read_text(encoding="utf-8").replace(sys.executable, "/no/such/python"), encoding="utf-8")
    done = arena("standings", str(path), "--format", "json")
    assert done.returncode == 0, done.stderr
    refused = arena("run", str(path))  # running still checks them: one line per bot
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == BOTS, refused.stderr
    assert all("/no/such/python does not exist" in line for line in refused.stderr.splitlines())


def test_export_says_who_forfeited_why_and_who_won(failing: Path, tmp_path: Path) -> None:
    """A forfeit's row in games.csv names the bot that forfeited (its tournament name), the
    failure's kind, the referee's reason and where it happened, and the winner."""
    done = arena("export", str(failing), str(tmp_path / "export"))
    assert done.returncode == 0, done.stderr
    with (tmp_path / "export" / "games.csv").open(encoding="utf-8", newline="") as f:
        games = list(csv.DictReader(f))
    assert len(games) == 2
    for g in games:
        record = json.loads((tmp_path / "export" / "records" / f"game-{int(g['number']):06d}.json").read_text())
        (failure,) = record["failures"]
        assert (g["reason"], g["error"]) == ("forfeit", "")  # the original columns, unchanged
        assert (g["forfeited_by"], g["forfeit_kind"], g["winner"], g["random_moves"]) == (
            "illegal", "illegal_move", "greedy", "0"), g
        assert g["forfeit_reason"] == failure["reason"] and "(rule" in g["forfeit_reason"], g
        assert g["forfeit_at"] == f"deal {failure['deal'] + 1} play {failure['playNumber']}", g
        assert g["seats"].split()[failure["seat"]] == "illegal"


# --- usage errors ----------------------------------------------------------------------------------


LADDER = '[ladder]\ninterval = "1h"\n'  # with it, a file is a ladder's (`arena bots add/remove`)


def two_bots(first_name: str = "a", second_name: str = "b", command: str | None = None) -> list[str]:
    """Two [[bots]] entries (greedy bots unless ``command`` replaces the first one's)."""
    return [bot_entry(first_name, command or sample_bot("greedy_bot.py")),
            bot_entry(second_name, sample_bot("greedy_bot.py"))]


BAD_FILES = {
    "unknown-key": (tournament_text("bad", two_bots(), top="gmaes_per_pairing = 2"),
                    ['unknown key "gmaes_per_pairing"', 'did you mean "games_per_pairing"?']),
    "duplicate-bot-names": (tournament_text("bad", two_bots("twin", "Twin")), ['"Twin" is already used']),
    "missing-program": (tournament_text("bad", two_bots(command="no-such-program-xyz --fast")),
                        ["no-such-program-xyz"]),
    "unknown-standings-key": (tournament_text("bad", two_bots()) + "\n[standings]\nprovisional_sigmas = 3\n",
                              ['unknown key "provisional_sigmas" in [standings]',
                               'did you mean "provisional_sigma"?']),
    "bad-provisional-games": (tournament_text("bad", two_bots()) + '\n[standings]\nprovisional_games = "few"\n',
                              ['[standings] provisional_games must be a whole number >= 0, not "few"']),
    "unreachable-database": (tournament_text("bad", two_bots(),
                                             top='database = "postgresql+psycopg://postgres@127.0.0.1:1/nope"'),
                             ["cannot use database", "127.0.0.1:1"]),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_tournament_file_is_a_usage_error(case: str, tmp_path: Path) -> None:
    text, wanted = BAD_FILES[case]
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    line = assert_usage_error(arena("run", str(path)), "arena")
    for part in wanted:
        assert part in line, line
    assert not (tmp_path / "bad-logs").exists(), "nothing ran"


def test_every_problem_of_a_bad_file_is_reported_one_line_each(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    text = tournament_text("bad", two_bots("evil\nFORFEITS", "b"), top='gmaes_per_pairing = 2\nduplicate = "yes"')
    path.write_text(text, encoding="utf-8")
    done = arena("run", str(path))
    assert done.returncode == 2 and done.stdout == "", done
    lines = done.stderr.splitlines()
    assert len(lines) == 3, done.stderr
    assert all(line.startswith("arena: error: bad.toml: ") for line in lines), lines
    assert 'unknown key "gmaes_per_pairing"' in lines[0]
    assert 'duplicate must be true or false, not "yes"' in lines[1]
    assert lines[2].startswith('arena: error: bad.toml: [[bots]] #1 ("evil\\nFORFEITS") name must be'), lines[2]
    assert not (tmp_path / "bad-logs").exists(), "nothing ran"


def test_a_bot_program_that_is_not_executable_is_refused_before_anything_runs(tmp_path: Path) -> None:
    script = tmp_path / "my_bot.py"
    script.write_text((sample_bot_path("greedy_bot.py")).read_text(encoding="utf-8"), encoding="utf-8")
    script.chmod(0o644)  # a file that exists, but no execute bit (root honours that too)
    path = tmp_path / "noexec.toml"
    path.write_text(tournament_text("noexec", two_bots(command=str(script))), encoding="utf-8")
    line = assert_usage_error(arena("run", str(path)), "arena")
    assert "[[bots]] #1 (\"a\") command is not usable" in line and "my_bot.py is not executable" in line, line
    assert not (tmp_path / "noexec-logs").exists() and not (tmp_path / "noexec.db").exists(), "nothing ran"


def test_bots_add_refuses_a_bad_name_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "pool.toml"
    path.write_text(tournament_text("pool", [*two_bots(), LADDER]), encoding="utf-8")
    line = assert_usage_error(arena("bots", "add", "two\nlines", sample_bot("greedy_bot.py"), "-f", str(path)), "arena")
    assert line.endswith('not "two\\nlines"'), line


@pytest.mark.parametrize("action", ["add", "remove"])
def test_bots_add_and_remove_are_for_ladders_only(tmp_path: Path, action: str) -> None:
    """A round robin's games are scheduled from its file's [[bots]] at its first run: a bot added
    later would play nothing, so adding (or removing) is refused and the file says what to change."""
    path = tmp_path / "cup.toml"
    path.write_text(tournament_text("cup", two_bots()), encoding="utf-8")
    extra = [sample_bot("greedy_bot.py")] if action == "add" else []
    line = assert_usage_error(arena("bots", action, "b" if action == "remove" else "newbie", *extra, "-f", str(path)),
                              "arena")
    assert line == (f"arena: error: cup.toml: no [ladder] section: `arena bots {action}` changes a ladder's pool; "
                    "a round robin's bots are its file's [[bots]]"), line
    assert not (tmp_path / "cup.db").exists(), "refused before the database is made"


def test_export_to_a_path_that_cannot_be_made_is_one_escaped_line(built: Built, tmp_path: Path) -> None:
    (tmp_path / "block").write_text("a file, not a folder\n", encoding="utf-8")
    line = assert_usage_error(arena("export", str(built.file), str(tmp_path / "block" / "two\nlines")), "arena")
    assert line == f'arena: error: cannot create "{tmp_path}/block/two\\nlines": Not a directory', line


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    line = assert_usage_error(arena("run", str(tmp_path / "nowhere.toml")), "arena")
    assert "nowhere.toml" in line


def test_unreachable_database_also_stops_standings(tmp_path: Path) -> None:
    path = tmp_path / "pg.toml"
    path.write_text(BAD_FILES["unreachable-database"][0], encoding="utf-8")
    assert "cannot use database" in assert_usage_error(arena("standings", str(path)), "arena")


def test_standings_of_a_tournament_never_run(tmp_path: Path) -> None:
    path = tmp_path / "never.toml"
    path.write_text(tournament_text("never", two_bots()), encoding="utf-8")
    line = assert_usage_error(arena("standings", str(path)), "arena")
    assert "'never' has not been run yet" in line


@pytest.mark.parametrize("args, wanted", [
    (["games", "{file}", "--bot", "nobody"], "no bot named 'nobody'"),
    (["standings", "{file}", "--format", "xml"], "invalid choice: 'xml'"),
    (["run", "{file}", "--concurrency", "0"], "--concurrency must be at least 1"),
], ids=["games-unknown-bot", "bad-format", "concurrency-0"])
def test_bad_arguments_are_usage_errors(built: Built, args: list[str], wanted: str) -> None:
    line = assert_usage_error(arena(*(a.format(file=built.file) for a in args)), "arena")
    assert wanted in line, line


def test_demo_with_an_odd_number_of_games_is_a_usage_error() -> None:
    assert "--games must be a positive multiple of 2" in assert_usage_error(arena("demo", "--games", "3"), "arena")


def test_serve_needs_a_ladder_section(tmp_path: Path) -> None:
    path = tmp_path / "noladder.toml"
    path.write_text(tournament_text("noladder", two_bots()), encoding="utf-8")
    assert "no [ladder] section" in assert_usage_error(arena("serve", str(path)), "arena")


# --- help ------------------------------------------------------------------------------------------


HELP_COMMANDS = ["", "run", "standings", "games", "show", "export", "serve", "bots", "demo"]


def test_help_of_arena_and_every_subcommand_exits_0() -> None:
    with ThreadPoolExecutor(max_workers=4) as pool:  # independent processes: overlap their start-up
        done = dict(zip(HELP_COMMANDS, pool.map(lambda c: run_arena(*([c] if c else []), "--help", timeout=CMD_TIMEOUT_S), HELP_COMMANDS)))
    for command, result in done.items():
        assert result.returncode == 0, (command, result.stderr)
        assert result.stdout.startswith(f"usage: arena {command}".rstrip()), (command, result.stdout[:200])
        assert result.stderr == "", command
    assert all(c in done[""].stdout for c in HELP_COMMANDS[1:])
