"""``referee match`` and ``referee check`` as real processes (python -m referee.cli) with real bots.

``match`` prints one line per game (and one per failure under it), then a summary table, and
exits 0 even when bots failed; bad options and unknown bots exit 2 with one ``error:`` line on
stderr and nothing on stdout. ``check`` exits 0 and says ``clean`` for a well-behaved bot, and
exits 1 explaining each failure for a misbehaving one. No bot process outlives the command.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import assert_no_bot_processes, builtin_bot_command, python_bot_command
from tests.support import assert_usage_error, fresh_temp_dir, run_referee

GAME_LINE = re.compile(
    r"^game (?P<number>\d+) \[P0 (?P<p0>\S+), P1 (?P<p1>\S+)\]: (?P<who>\S+ wins|draw) "
    r"\((?P<reason>target_reached|condition_met|max_deals|forfeit)\) (?P<scores>\d+-\d+)$"
)
SUMMARY_HEADER = re.compile(r"^bot\s+games\s+W\s+D\s+L\s+forfeits\s+move ms p50\s+p99\s+cpu ms p50\s+p99$")
SUMMARY_ROW = re.compile(
    r"^(?P<name>\S+)\s+(?P<games>\d+)\s+(?P<w>\d+)\s+(?P<d>\d+)\s+(?P<l>\d+)\s+(?P<f>\d+)\s+[\d.]+\s+[\d.]+"
    r"\s+(?:[\d.]+\s+[\d.]+|-\s+-)$"  # the CPU columns: "-" for a bot whose CPU time was not measured (an address)
)
RANDOM_BOT = shlex.join([sys.executable, "sample_bots/random/random_bot.py"])  # seeded by CASINO_BOT_SEED



def test_match_prints_each_game_and_a_summary(tmp_path: Path) -> None:
    done = run_referee("match", "--bot", builtin_bot_command(1), "--bot", builtin_bot_command(2), "--games", "2",
                       "--seed", "5", "--records", str(tmp_path / "records"), "--logs", str(tmp_path / "logs"))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    games = [GAME_LINE.match(line) for line in lines[:2]]
    assert all(games), lines[:2]
    assert [int(g["number"]) for g in games] == [1, 2]
    assert all(g["reason"] != "forfeit" for g in games)
    assert lines[2] == ""
    assert SUMMARY_HEADER.match(lines[3]), lines[3]
    rows = [SUMMARY_ROW.match(line) for line in lines[4:6]]
    assert all(rows), lines[4:6]
    for row in rows:
        assert row["name"] == "builtin-random" and row["games"] == "2" and row["f"] == "0"
        assert int(row["w"]) + int(row["d"]) + int(row["l"]) == 2
    assert int(rows[0]["w"]) == int(rows[1]["l"]) and int(rows[0]["d"]) == int(rows[1]["d"])
    # the bot logs of the match in a folder named by its match id under --logs
    logs = re.fullmatch(rf"bot logs: ({re.escape(str(tmp_path / 'logs'))}/[0-9a-f]{{12}}); "
                        rf"records: {re.escape(str(tmp_path / 'records'))}", lines[6])
    assert logs, lines[6]
    assert len(lines) == 7
    match_id = Path(logs[1]).name
    assert sorted(p.name for p in (tmp_path / "records").iterdir()) == [f"{match_id}-g1.json", f"{match_id}-g2.json"]
    assert sorted(p.name for p in Path(logs[1]).iterdir()) == ["bot0.log", "bot1.log"]
    assert_no_bot_processes()



def test_the_same_seeded_match_plays_the_same_games_again(tmp_path: Path) -> None:
    """The match id follows the seed (and the bots and options), so the same ``referee match``
    gives the same game ids, and the sample random bot, seeded by CASINO_BOT_SEED and its game id,
    plays the same moves again: identical records; ``--games 1`` plays the first of them again.
    Another CASINO_BOT_SEED (passed to the sandboxed bot by CASINO_SANDBOX_PASS_ENV) plays the same
    ids and decks, other moves. Each run's logs get a folder of their own beside the first run's."""
    def play(run: str, bot_seed: str, games: str = "2") -> dict[str, dict[str, Any]]:
        records = tmp_path / run
        passed = ",".join(filter(None, [os.environ.get("CASINO_SANDBOX_PASS_ENV"), "CASINO_BOT_SEED"]))
        done = run_referee("match", "--bot", RANDOM_BOT, "--bot", RANDOM_BOT, "--seed", "5", "--games", games,
                           "--move-time", "5000", "--records", str(records), "--logs", str(tmp_path / "logs"),
                           env={"CASINO_BOT_SEED": bot_seed, "CASINO_SANDBOX_PASS_ENV": passed})
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
        return {p.name: json.loads(p.read_text(encoding="utf-8")) for p in sorted(records.iterdir())}

    def games(records: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """What was played: ids, seats, decks and moves, results (not how long the moves took, nor
        where in its log a bot's output lies: a log line holds the time)."""
        seats = lambda r: [{k: v for k, v in s.items() if k != "log"} for s in r["seats"]]  # noqa: E731
        return {name: (r["game_id"], r["match_id"], seats(r), r["engine"], r["failures"], r["result"])
                for name, r in records.items()}

    first, again, other, short = play("first", "7"), play("again", "7"), play("other", "8"), play("short", "7", "1")
    match_id = first[min(first)]["match_id"]
    assert list(first) == [f"{match_id}-g1.json", f"{match_id}-g2.json"]
    assert games(again) == games(first)
    assert games(short) == {name: game for name, game in games(first).items() if name.endswith("-g1.json")}
    assert all(not r["failures"] for r in first.values())
    assert list(other) == list(first), "the bot's own seed is no part of the match id"
    decks = [r["engine"]["deals"][0]["deck"] for r in (*first.values(), *other.values())]
    assert decks[:2] == decks[2:], "the same decks"
    moves = [[d["moves"] for d in r["engine"]["deals"]] for r in (*first.values(), *other.values())]
    assert moves[:2] != moves[2:], "CASINO_BOT_SEED reached the bots"
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == [match_id, *(f"{match_id}-{n}" for n in (2, 3, 4))]
    assert_no_bot_processes()


def test_check_names_its_matches_by_the_seed(tmp_path: Path) -> None:
    """``referee check`` run twice plays matches of the same ids (its logs: a new folder each time).
    (The bot is seeded apart from the check's own random bot, so its two matches differ.)"""
    logs = tmp_path / "logs"
    for _ in range(2):
        done = run_referee("check", "--bot", builtin_bot_command(2), "--games", "1", "--logs", str(logs))
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    ids = sorted(p.name for p in logs.iterdir())
    assert len(ids) == 4 and [i.removesuffix("-2") for i in ids] == [ids[0], ids[0], ids[2], ids[2]], ids
    assert_no_bot_processes()

@pytest.mark.parametrize(
    "bot, message",
    [("no-such-bot-program --fast", "no program 'no-such-bot-program' on PATH"),
     ("./no/such/bot.py", "./no/such/bot.py does not exist")],
    ids=["not-on-path", "no-such-file"],
)
def test_match_with_an_unknown_bot_exits_2(bot: str, message: str) -> None:
    line = assert_usage_error(run_referee("match", "--bot", bot, "--bot", builtin_bot_command(1)))
    assert "unknown bot" in line and message in line, line
    assert_no_bot_processes()


def test_match_with_an_unreachable_address_forfeits_at_startup(running_builtin_bot: tuple[str, int]) -> None:
    # nothing listens on 127.0.0.1:1: the match runs, and that bot forfeits with a STARTUP failure
    address, pid = running_builtin_bot
    done = run_referee("match", "--bot", "127.0.0.1:1", "--bot", address, "--startup-time", "1000")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    game = GAME_LINE.match(lines[0])
    assert game, lines[0]
    assert (game["p0"], game["p1"], game["who"], game["reason"]) == (
        "bot0", "builtin-random", "builtin-random wins", "forfeit")
    failure = r"^    P0 bot0: startup at deal 1 play 0: not healthy within the startup time \(.*\) -> forfeit$"
    assert re.match(failure, lines[1]), lines[1]
    rows = {m["name"]: m for m in map(SUMMARY_ROW.match, lines) if m}
    assert (rows["bot0"]["l"], rows["bot0"]["f"]) == ("1", "1")
    assert (rows["builtin-random"]["w"], rows["builtin-random"]["f"]) == ("1", "0")
    assert_no_bot_processes(exclude={pid})


def test_a_bot_cannot_paint_or_flood_the_output_with_its_hello(tmp_path: Path) -> None:
    # its Hello name has colour escapes, a newline before a fake failure line, a terminal-title
    # sequence, a bidi override and 200 kB; its version clears the screen and is 200 kB too
    done = run_referee("match", "--bot", python_bot_command("rude-hello"), "--bot", builtin_bot_command(1),
                       "--records", str(tmp_path / "records"))
    assert done.returncode == 0, done.stderr
    shown = "mallory P1 builtin-random: crash at deal 1 play 1: FORFEITS MMM…"  # 64 characters
    version = "6.6.6 " + "v" * 57 + "…"
    assert "\x1b" not in done.stdout + done.stderr and "\r" not in done.stdout and "\u202e" not in done.stdout
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"game 1 [P0 {shown}, P1 builtin-random]: "), lines[0]
    assert not any(line.lstrip().startswith("P1 builtin-random: crash") for line in lines), "a line of the bot's"
    assert len(done.stdout) < 2000, "the name is capped"
    (path,) = (tmp_path / "records").glob("*.json")
    text = path.read_text(encoding="utf-8")
    assert "M" * 65 not in text and "v" * 65 not in text and "\\u001b" not in text
    seat = json.loads(text)["seats"][0]
    assert (seat["name"], seat["hello_name"], seat["version"]) == (shown, shown, version)
    assert_no_bot_processes()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--players", "5"], "argument --players: invalid choice"),
        (["--players", "3"], "3 players need 3 --bot options, got 2"),
        (["--games", "0"], "games must be 1 to 1000000, not 0"),
        (["--games", "1099511627776"], "games must be 1 to 1000000, not 1099511627776"),
        (["--seed", "-1"], "seed must be 0 to 18446744073709551615 for 1 game(s), not -1"),
        (["--seed", "18446744073709551615", "--games", "2"], "seed must be 0 to 18446744073709551614 for 2 game(s)"),
        (["--move-time", "0"], "move_time_ms must be at least 1"),
        (["--move-time", "1099511627776"], "move_time_ms must be at most 3600000 ms (one hour), not 1099511627776"),
        (["--grace", "3600001"], "grace_ms must be at most 3600000 ms"),
        (["--bank", "1099511627776"], "bank_initial_ms must be at most 3600000 ms"),
        (["--increment", "99999999999999999999999"], "bank_increment_ms must be at most 3600000 ms"),
        (["--startup-time", "1099511627776"], "startup_time_ms must be at most 3600000 ms"),
        (["--grace", "-1"], "grace_ms must be a whole number of milliseconds >= 0"),
        (["--deck", "/no/such/deck.txt"], "cannot read deck file /no/such/deck.txt"),
        (["--deck", "tests/golden/2p-seed7.txt"], "bad deck: bad card code"),
        (["--policy", "retry"], "argument --policy: invalid choice"),
        (["--games", "two"], "argument --games: invalid int value"),
    ],
    ids=["players-5", "players-3-with-2-bots", "games-0", "games-huge", "seed-negative", "seed-past-uint64",
         "move-time-0", "move-time-huge", "grace-huge", "bank-huge", "increment-huge", "startup-huge",
         "negative-grace", "missing-deck", "not-a-deck", "unknown-policy", "games-not-a-number"],
)
def test_match_bad_options_exit_2(args: list[str], message: str) -> None:
    bots = ["--bot", builtin_bot_command(1), "--bot", builtin_bot_command(2)]
    line = assert_usage_error(run_referee("match", *bots, *args))
    assert message in line, line
    assert_no_bot_processes()


@pytest.mark.parametrize("command", ["match", "check"])
@pytest.mark.parametrize("option, make, message", [
    ("--deck", lambda d: d / "deck.bin", "is not text (not UTF-8 at byte 2)"),
    ("--deck", lambda d: Path("/dev/zero"), "deck file /dev/zero is larger than 65536 bytes"),
    ("--records", lambda d: d / "deck.bin", "cannot create records folder"),
    ("--logs", lambda d: d / "deck.bin" / "logs", "cannot create logs folder"),
], ids=["binary-deck", "endless-deck", "records-is-a-file", "logs-under-a-file"])
def test_match_bad_files_exit_2(tmp_path: Path, command: str, option: str, make: Callable[[Path], Path],
                                message: str) -> None:
    (tmp_path / "deck.bin").write_bytes(b"AS\xff\xfe\x00" * 100)
    bots = ["--bot", builtin_bot_command(1)] + (["--bot", builtin_bot_command(2)] if command == "match" else [])
    line = assert_usage_error(run_referee(command, *bots, option, str(make(tmp_path))))
    assert message in line, line
    assert_no_bot_processes()


def test_check_refuses_an_absurd_move_time() -> None:
    line = assert_usage_error(run_referee("check", "--bot", builtin_bot_command(1), "--move-time", "1099511627776"))
    assert "move_time_ms must be at most 3600000 ms" in line, line


def test_check_a_clean_bot_keeps_its_logs_only_in_the_logs_folder(tmp_path: Path) -> None:
    temp, logs = fresh_temp_dir(), tmp_path / "logs"
    done = run_referee("check", "--bot", python_bot_command("normal"), "--logs", str(logs), env={"TMPDIR": str(temp)})
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    out = done.stdout
    assert out.startswith(f"checking {python_bot_command('normal')}\n")
    assert "2 game(s) against itself:" in out and "2 game(s) against the built-in random bot:" in out
    assert len(re.findall(r"^  game \d ", out, re.MULTILINE)) == 4
    times = r"^  move time ms: p50 [\d.]+, p90 [\d.]+, p99 [\d.]+, max [\d.]+ over \d+ moves \(limit 1000\)$"
    assert len(re.findall(times, out, re.MULTILINE)) == 2
    cpu = r"^  CPU time ms:  p50 [\d.]+, p90 [\d.]+, p99 [\d.]+, max [\d.]+ over \d+ moves \(no limit\)$"
    assert len(re.findall(cpu, out, re.MULTILINE)) == 2
    assert out.rstrip().endswith("clean: every answer was a legal move in time")
    assert "NOT CLEAN" not in out and "->" not in out
    # --logs: each match's logs in a folder of its own there, named in the output; nothing in TMPDIR
    shown = re.findall(rf"^  bot logs: ({re.escape(str(logs))}/[0-9a-f]{{12}})$", out, re.MULTILINE)
    assert sorted(shown) == sorted(str(p) for p in logs.iterdir()) and len(shown) == 2
    assert all(sorted(p.name for p in Path(folder).iterdir()) == ["bot0.log", "bot1.log"] for folder in shown)
    assert list(temp.iterdir()) == []
    assert_no_bot_processes()


@pytest.mark.parametrize("args, seats, sides", [
    (["--players", "3"], 3, 3), (["--players", "4"], 4, 2), (["--players", "4", "--individuals"], 4, 4),
], ids=["three", "four-partnerships", "four-individuals"])
def test_check_plays_the_table_it_is_asked_for(args: list[str], seats: int, sides: int) -> None:
    """With 3 or 4 players the bot fills every seat, then plays one seat beside built-in random
    bots; only its own seats count (a random bot's moves are not its)."""
    done = run_referee("check", "--bot", builtin_bot_command(1), *args, "--games", "2", timeout=120)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    out = done.stdout
    assert "2 game(s) against itself:" in out and "2 game(s) against the built-in random bots:" in out
    games = re.findall(r"^  game \d \[(.*)\]: .* (\d+(?:-\d+)+)$", out, re.MULTILINE)
    assert len(games) == 4 and all(len(names.split(", ")) == seats for names, _ in games), out
    assert all(len(score.split("-")) == sides for _, score in games), out
    moves = re.findall(r"^  move time ms: .* over (\d+) moves", out, re.MULTILINE)
    assert len(moves) == 2 and int(moves[0]) > int(moves[1]), "every seat's moves against itself, one seat's after"
    assert out.rstrip().endswith("clean: every answer was a legal move in time")
    assert_no_bot_processes()


def test_check_individuals_need_four_players() -> None:
    line = assert_usage_error(run_referee("check", "--bot", builtin_bot_command(1), "--players", "3", "--individuals"))
    assert "--individuals is for 4 players (--players 4)" in line, line


def test_check_a_bot_that_plays_illegal_moves() -> None:
    """A failing check without --logs: the failures explained, the end of the failing bot's logs
    printed, and nothing left in the temporary directory."""
    temp = fresh_temp_dir()
    done = run_referee("check", "--bot", python_bot_command("illegal"), env={"TMPDIR": str(temp)})
    assert done.returncode == 1, (done.stdout[-2000:], done.stderr[-2000:])
    assert list(temp.iterdir()) == [], "the check's folders are removed"
    out = done.stdout
    # where the logs were, and that they were deleted; the end of each failing process's log is shown
    where = re.search(rf"^bot logs: in {re.escape(str(temp))}/casino-check-\S+ while the check ran, deleted at its end "
                      r"\(--logs DIR keeps them\); the last lines of each failing process's log:$", out, re.MULTILINE)
    assert where, out
    tails = out[where.start():out.index("NOT CLEAN")]
    headings = re.findall(r"^  (bot\d\.log), (against .*):$", tails, re.MULTILINE)
    assert headings == [("bot0.log", "against itself"), ("bot1.log", "against itself"),
                        ("bot0.log", "against the built-in random bot")], tails
    logged = re.findall(r"^    \| (.*)$", tails, re.MULTILINE)
    assert sum(line.startswith("--- starting ") and "scripted_bot.py illegal" in line for line in logged) >= 3
    assert "  bot logs: " not in out
    # every game forfeited by the bot under test (against itself: one of its two copies)
    failure = r"^      P\d scripted-illegal: illegal_move at deal 1 play \d+: (.*) -> forfeit$"
    failures = re.findall(failure, out, re.MULTILINE)
    assert len(failures) == 4, out
    assert all(re.search(r"\(rules? \d+(, \d+)*\)$", reason) for reason in failures), failures
    summary = out[out.index("NOT CLEAN"):].splitlines()
    assert summary[0] == "NOT CLEAN: 4 failure(s):"
    assert all(re.match(r"^  \d+ x illegal_move: \S+ .*\(rules? [\d, ]+\)$", line) for line in summary[1:]), summary
    assert sum(int(line.split(" x ")[0]) for line in summary[1:]) == 4
    assert "clean: every answer" not in out
    assert_no_bot_processes()


def test_replay_shows_who_played_each_move_and_every_failure(tmp_path: Path) -> None:
    """``referee replay`` of a match record: each play with its seat and bot, the random moves the
    referee played for a failing bot marked where they were played, every failure with its kind,
    place and reason, and who won the forfeit."""
    done = run_referee("match", "--bot", python_bot_command("illegal", after=1), "--bot", builtin_bot_command(1),
                       "--policy", "random_move", "--max-strikes", "2", "--no-rotate",
                       "--ask-forced",  # every move asked: the bot's failures fall on plays 1, 3 and 5
                       "--records", str(tmp_path / "records"), "--logs", str(tmp_path / "logs"))
    assert done.returncode == 0, done.stderr
    (path,) = (tmp_path / "records").iterdir()
    replay = run_referee("replay", str(path))
    assert replay.returncode == 0, replay.stderr
    lines = replay.stdout.splitlines()
    assert lines[0].endswith("[P0 scripted-illegal, P1 builtin-random]"), lines[0]
    plays = [line.strip() for line in lines if re.match(r"^\s+\d+\. P\d ", line)]
    # the bot fails every turn: random moves for it at plays 1 and 3, the third failure forfeits
    assert [p.split(":")[0] for p in plays] == ["1. P0 scripted-illegal", "2. P1 builtin-random",
                                                "3. P0 scripted-illegal", "4. P1 builtin-random",
                                                "5. P0 scripted-illegal"], plays
    assert [p.endswith("[random move: illegal_move]") for p in plays] == [True, False, True, False, False]
    assert plays[4] == "5. P0 scripted-illegal: forfeits (illegal_move)"
    failures = [line for line in lines if line.startswith("P0 scripted-illegal: illegal_move at deal 1 play ")]
    assert [line.split(" -> ")[1] for line in failures] == ["random move played", "random move played", "forfeit"]
    assert [line.split(" play ")[1].split(":")[0] for line in failures] == ["1", "3", "5"]
    assert all(re.search(r"\(rules? [\d, ]+\)", line) for line in failures), failures
    assert "ended early: forfeit; P1 builtin-random wins after 1 deal(s): P0=0 P1=0" in lines
    assert lines[-1].startswith("record checked")
    assert_no_bot_processes()
