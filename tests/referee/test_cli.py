"""The ``referee`` command line (referee/cli/main.py), run as ``python -m referee.cli`` in a subprocess:
``play`` prints a seeded game, ``--record`` writes a record that ``replay`` accepts, and bad
records or arguments exit with status 2 and one ``error:`` line on stderr."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

from tests.support import assert_usage_error, run_referee

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DECK = ROOT / "tests" / "data" / "decks" / "seed-11.txt"

RESULT_LINE = re.compile(r"^(draw|P\d(\+P\d)? wins) \((target_reached|condition_met|max_deals)\) after (\d+) deal\(s\): (P\d(\+P\d)?=\d+ ?)+$")
HEADER_LINE = re.compile(r"^== deal (\d+), dealer P(\d), table (\S+ ){3}\S+; P0: ")


referee = run_referee



@pytest.mark.parametrize(
    "args, players",
    [([], 2), (["--players", "3"], 3), (["--players", "4"], 4), (["--players", "4", "--individuals"], 4)],
    ids=["2p", "3p", "4p-partners", "4p-individuals"],
)
def test_play_prints_deal_headers_score_sheets_and_a_result(args: list[str], players: int) -> None:
    done = referee("play", "--seed", "12", *args)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    headers = [m for m in map(HEADER_LINE.match, lines) if m]
    assert headers, done.stdout[:500]
    assert [int(m.group(1)) for m in headers] == list(range(1, len(headers) + 1))
    assert [int(m.group(2)) for m in headers] == [(players - 1 + k) % players for k in range(len(headers))]  # rule 3
    assert lines[0].startswith("== deal 1, dealer P")
    sheets = [i for i, line in enumerate(lines) if line.startswith("item ")]
    assert len(sheets) == len(headers), "one score sheet per deal"
    for i in sheets:
        assert lines[i + 1].startswith("cards") and any(lines[j].startswith("score ") for j in range(i, i + 16))
    assert re.search(r"\| \d+ legal \| ", done.stdout)
    result = RESULT_LINE.match(lines[-1])
    assert result, lines[-1]
    assert int(result.group(4)) == len(headers)
    teams = players == 4 and "--individuals" not in args
    assert ("+P" in lines[-1]) == teams


def test_play_is_deterministic_per_seed() -> None:
    first = referee("play", "--seed", "5")
    second = referee("play", "--seed", "5")
    other = referee("play", "--seed", "6")
    assert first.returncode == second.returncode == other.returncode == 0
    assert first.stdout == second.stdout
    assert first.stdout != other.stdout


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A 3-player game played with --record: (record file, play output)."""
    path = tmp_path_factory.mktemp("records") / "game.json"
    done = referee("play", "--seed", "21", "--players", "3", "--record", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"record written to {path}"
    return path, done.stdout


def test_record_is_a_game_record_that_replay_accepts(recorded: tuple[Path, str]) -> None:
    path, output = recorded
    record = json.loads(path.read_text(encoding="utf-8"))
    assert record["format"] == "royal-casino-record" and record["version"] == 1
    assert record["seed"] == 21 and record["options"]["players"] == 3
    assert record["result"] is not None
    done = referee("replay", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[-1].startswith("record checked")
    played_result = output.splitlines()[-2]  # before "record written to ..."
    assert RESULT_LINE.match(played_result)
    assert lines[-2] == played_result
    moves = [line for line in lines if re.match(r"^\s+\d+\. ", line)]
    assert len(moves) == sum(len(d["moves"]) for d in record["deals"])


def corrupt(record: dict, how: str) -> str:
    record = json.loads(json.dumps(record))
    deal = record["deals"][0]
    if how == "illegal-move":
        deal["moves"][0] = deal["moves"][1]  # the second player's card, played by the first
    elif how == "bad-notation":
        deal["moves"][2] = "ZZ frobnicate"
    elif how == "wrong-result":
        record["result"]["scores"][0] += 1
    elif how == "wrong-sheet":
        deal["sheet"]["sides"][0]["points"] += 1
    elif how == "deck-not-from-seed":
        cards = deal["deck"].split()
        cards[0], cards[1] = cards[1], cards[0]
        deal["deck"] = " ".join(cards)
        assert record["explicit_decks"] == 0  # every deck must be the seed's shuffle
    elif how == "missing-moves":
        del deal["moves"]
    elif how == "bad-version":
        record["version"] = 99
    elif how == "not-a-record":
        return json.dumps({"hello": "world"})
    elif how == "truncated-json":
        return json.dumps(record)[:-40]
    return json.dumps(record)


EXPECTED_ERROR = {
    "illegal-move": "deal 1, play 1",
    "bad-notation": "deal 1, play 3",
    "wrong-result": "the result does not match",
    "wrong-sheet": "deal 1: the score sheet does not match",
    "deck-not-from-seed": "deal 1: the deck is not the one seed 21 deals",
    "missing-moves": "malformed record",
    "bad-version": "unsupported record version 99",
    "not-a-record": "not a royal-casino-record record",
    "truncated-json": "is not JSON",
}


@pytest.mark.parametrize(
    "how",
    ["illegal-move", "bad-notation", "wrong-result", "wrong-sheet", "deck-not-from-seed", "missing-moves", "bad-version", "not-a-record", "truncated-json"],
)
def test_corrupted_record_makes_replay_exit_2(recorded: tuple[Path, str], tmp_path: Path, how: str) -> None:
    path, _ = recorded
    record = json.loads(path.read_text(encoding="utf-8"))
    bad = tmp_path / f"{how}.json"
    bad.write_text(corrupt(record, how), encoding="utf-8")
    line = assert_usage_error(referee("replay", str(bad)))
    assert line.startswith("referee: error:")
    assert EXPECTED_ERROR[how] in line, line


def test_replay_missing_file_exits_2(tmp_path: Path) -> None:
    assert_usage_error(referee("replay", str(tmp_path / "nothing.json")))


@pytest.fixture
def game_record(recorded: tuple[Path, str]) -> dict:  # type: ignore[type-arg]
    """A referee game record (section 8 of docs/protocol.md) around the recorded engine record."""
    engine = json.loads(recorded[0].read_text(encoding="utf-8"))
    return {"format": "royal-casino-game", "version": 1, "game_id": "g-1", "match_id": "m", "game_number": 1,
            "seats": [{"seat": s, "bot": s, "name": f"bot{s}", "hello_name": f"bot{s}", "version": "1",
                       "endpoint": "x"} for s in range(3)],
            "engine": engine, "timings_us": [], "failures": [], "result": {}}


@pytest.fixture
def hostile_files(tmp_path: Path) -> dict[str, Path]:
    """Files no deck or record is: binary, endlessly long, nested 100 000 deep, a 5000-digit number."""
    files = {"binary": tmp_path / "binary.dat", "endless": Path("/dev/zero"), "deep": tmp_path / "deep.json",
             "huge-number": tmp_path / "number.json", "folder": tmp_path}
    files["binary"].write_bytes(bytes(range(256)) * 64)
    files["deep"].write_text("[" * 100_000 + "]" * 100_000, encoding="ascii")
    files["huge-number"].write_text("9" * 5000, encoding="ascii")
    return files


@pytest.mark.parametrize("command, which, message", [
    ("perft", "binary", "deck file {path} is not text (not UTF-8 at byte 128)"),
    ("perft", "endless", "deck file /dev/zero is larger than 65536 bytes"),
    ("perft", "folder", "cannot read deck file {path}: Is a directory"),
    ("replay", "binary", "record {path} is not text (not UTF-8 at byte 128)"),
    ("replay", "endless", "record /dev/zero is larger than 16777216 bytes"),
    ("replay", "deep", "record {path} is not a record: its JSON nests too deeply"),
    ("replay", "huge-number", "record {path} is not JSON: Exceeds the limit"),
    ("replay", "folder", "cannot read record {path}: Is a directory"),
])
def test_hostile_input_files_exit_2(hostile_files: dict[str, Path], command: str, which: str, message: str) -> None:
    path = hostile_files[which]
    args = ["perft", "--deck", str(path), "--depth", "1"] if command == "perft" else ["replay", str(path)]
    line = assert_usage_error(referee(*args))
    assert message.format(path=path) in line, line


@pytest.mark.parametrize("how, message", [
    ("seats-not-a-list", "malformed record: seats must be a list of objects"),
    ("seat-not-an-object", "malformed record: seats must be a list of objects"),
], ids=["seats-not-a-list", "seat-not-an-object"])
def test_game_record_with_bad_seats_makes_replay_exit_2(
        game_record: dict, tmp_path: Path, how: str, message: str) -> None:  # type: ignore[type-arg]
    record = json.loads(json.dumps(game_record))
    record["seats"] = 5 if how == "seats-not-a-list" else ["P0"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    line = assert_usage_error(referee("replay", str(path)))
    assert message in line, line


def test_replay_prints_a_record_s_names_cleaned(game_record: dict, tmp_path: Path) -> None:  # type: ignore[type-arg]
    record = json.loads(json.dumps(game_record))
    record["seats"][0]["name"] = "\x1b[31mred\nP1 b: FORFEITS" + "x" * 100
    path = tmp_path / "painted.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    done = referee("replay", str(path))
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout
    assert done.stdout.splitlines()[0].startswith("game g-1 [P0 red P1 b: FORFEITSxxxx"), done.stdout.splitlines()[0]
    assert "x" * 60 not in done.stdout.splitlines()[0], "capped at 64 characters"


def test_play_with_an_unwritable_record_exits_2_before_playing(tmp_path: Path) -> None:
    line = assert_usage_error(referee("play", "--record", str(tmp_path / "no" / "such" / "folder" / "game.json")))
    assert "cannot write record" in line and "No such file or directory" in line, line
    line = assert_usage_error(referee("play", "--record", str(tmp_path)))
    assert "Is a directory" in line, line


@pytest.mark.parametrize("args, message", [
    (["--move-time", "1099511627776"], "--move-time 1 to 3600000"),
    (["--games", "1099511627776"], "--games must be 1 to 1000000"),
], ids=["move-time", "games"])
def test_demo_with_absurd_values_exits_2(args: list[str], message: str) -> None:
    line = assert_usage_error(referee("demo", *args))
    assert message in line, line


def test_serve_on_an_address_it_cannot_have_exits_2(tmp_path: Path) -> None:
    with socket.socket() as taken:  # a port this test holds
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        cases = [
            (["--listen", "127.0.0.1:99999"], "cannot listen on 127.0.0.1:99999: port must be 0..65535"),
            (["--listen", f"127.0.0.1:{port}"], "Address already in use"),
            # an address of no form it knows counts as public, so it needs a token to get as far as the bind
            (["--listen", "nonsense::::", "--token-env", "TEST_TOKEN"], "cannot listen on nonsense::::: "),
            (["--listen", f"unix:{tmp_path}/no/such/folder/r.sock"], "No such file or directory"),
            (["--listen", "127.0.0.1:0", "--records", str(SAMPLE_DECK)], "cannot create records folder"),
        ]
        for args, message in cases:
            # gRPC's core says why a bind failed at its default verbosity (a test module that
            # imports the Python SDK may have set GRPC_VERBOSITY=NONE for this process)
            line = assert_usage_error(run_referee("serve", *args, timeout=30,
                                                  env={"GRPC_VERBOSITY": "ERROR", "TEST_TOKEN": "t" * 32}))
            assert message in line, (args, line)


@pytest.mark.parametrize(
    "args",
    [["play", "--players", "5"], ["play", "--seed", "x"], ["frobnicate"], ["perft", "--depth", "2"]],
    ids=["five-players", "seed-not-a-number", "unknown-command", "perft-without-deck"],
)
def test_bad_arguments_exit_2(args: list[str]) -> None:
    assert_usage_error(referee(*args))
