"""A game to play, as data: the one place a GameSetup is built, and GameSetup and BotEndpoint as
JSON that reads back to the same objects (what a job queue will carry to a worker)."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from referee.bots.endpoint import BotEndpoint
from referee.clock import TimeControl
from referee.errors import EndpointError
from referee.match.spec import FailurePolicy, GameSettings, GameSetup, MatchSpec
from referee.rules import Condition, RuleOptions
from referee.rules.errors import RulesError
from tests.conftest import ROOT

SETTINGS = GameSettings(RuleOptions(players=4, partnerships=False, on_twenty=Condition.MOST_SPADES, max_deals=3),
                        TimeControl(move_time_ms=700, grace_ms=20, bank_initial_ms=900, bank_increment_ms=10,
                                    startup_time_ms=5000),
                        FailurePolicy.RANDOM_MOVE, 2)


def test_build_names_the_game_after_its_match_unless_told() -> None:
    setup = GameSetup.build(SETTINGS, match_id="cup", game_number=7, seat_bots=[3, 0, 1, 2], seed=99)
    assert (setup.game_id, setup.game_number, setup.seat_bots, setup.seed, setup.match_id) == (
        "cup-g7", 7, (3, 0, 1, 2), 99, "cup")
    assert (setup.options, setup.time_control, setup.policy, setup.max_strikes) == (
        SETTINGS.options, SETTINGS.time_control, SETTINGS.policy, SETTINGS.max_strikes)
    named = GameSetup.build(SETTINGS, match_id="cmp", game_number=2, seat_bots=[1, 0, 1, 0], seed=5, game_id="cmp-p1-b")
    assert named.game_id == "cmp-p1-b"


def test_a_match_builds_its_games_through_the_same_place() -> None:
    bots = [BotEndpoint.parse("unix:/tmp/a.sock"), BotEndpoint.parse("unix:/tmp/b.sock")]
    spec = MatchSpec(bots=bots, games=3, seed=10, time_control=TimeControl(move_time_ms=500))
    game = spec.game("m1", 2)
    assert game == GameSetup.build(spec.settings, match_id="m1", game_number=2, seat_bots=[1, 0], seed=11)



def test_a_seeded_match_id_follows_everything_that_decides_the_games() -> None:
    """``referee match`` and ``check`` name a match by its seed, bots and settings: the same match
    (or a shorter one: its first games) gets the same id, so the same game ids, which seeded bots
    play from; any other match another."""
    bots = [BotEndpoint.parse("unix:/tmp/a.sock"), BotEndpoint.parse("unix:/tmp/b.sock")]
    spec = MatchSpec(bots=bots, games=3, seed=10, time_control=TimeControl(move_time_ms=500))
    match_id = spec.seeded_match_id()
    assert re.fullmatch(r"[0-9a-f]{12}", match_id)
    elsewhere = MatchSpec(bots=list(bots), games=3, seed=10, time_control=TimeControl(move_time_ms=500),
                          logs_dir=ROOT, records_dir=ROOT)
    assert elsewhere.seeded_match_id() == match_id, "where the output goes is no part of it"
    shorter = dataclasses.replace(spec, games=2)
    assert shorter.seeded_match_id() == match_id, "game k is the same game in a longer match"
    others = [dataclasses.replace(spec, seed=11),
              dataclasses.replace(spec, bots=bots[::-1]), dataclasses.replace(spec, rotate_seats=False),
              dataclasses.replace(spec, bots=[bots[0], BotEndpoint.parse("unix:/tmp/c.sock")]),
              dataclasses.replace(spec, bots=[dataclasses.replace(bots[0], env=(("CASINO_BOT_SEED", "1"),)), bots[1]]),
              dataclasses.replace(spec, time_control=TimeControl(move_time_ms=501)),
              dataclasses.replace(spec, options=RuleOptions(players=2, max_deals=5)),
              dataclasses.replace(spec, decks=[list(range(52))]), dataclasses.replace(spec, auto_forced=False),
              dataclasses.replace(spec, policy=FailurePolicy.RANDOM_MOVE), dataclasses.replace(spec, max_strikes=1)]
    ids = [other.seeded_match_id() for other in others]
    assert match_id not in ids and len(set(ids)) == len(ids)

def test_game_setup_round_trips_through_json() -> None:
    setup = GameSetup.build(SETTINGS, match_id="cup", game_number=7, seat_bots=[3, 0, 1, 2], seed=2**63,
                            decks=[list(range(52)), list(range(51, -1, -1))], game_id="cup-g7-x")
    data = json.loads(json.dumps(setup.to_dict()))
    assert (data["format"], data["version"]) == ("royal-casino-game-setup", 2)
    assert GameSetup.from_dict(data) == setup
    asked = dataclasses.replace(setup, auto_forced=False)
    assert GameSetup.from_dict(json.loads(json.dumps(asked.to_dict()))) == asked


def test_a_version_1_setup_asks_for_every_move() -> None:
    """Version 1 (before forced plays) had no auto_forced: such a game asked for every move."""
    data = GameSetup.build(SETTINGS, match_id="cup", game_number=1, seat_bots=[0, 1, 2, 3], seed=1).to_dict()
    del data["auto_forced"]
    data["version"] = 1
    assert GameSetup.from_dict(data).auto_forced is False


@pytest.mark.parametrize("change, error", [
    (lambda d: d.update(format="something"), ValueError),
    (lambda d: d.update(version=3), ValueError),
    (lambda d: d.update(auto_forced="yes"), ValueError),
    (lambda d: d.pop("seed"), ValueError),
    (lambda d: d.update(policy="shrug"), ValueError),
    (lambda d: d["time_control"].update(move_time_ms=0), ValueError),
    (lambda d: d["options"].update(players=9), RulesError),
], ids=["format", "version", "auto-forced", "missing-seed", "policy", "time", "rules"])
def test_a_bad_game_setup_is_refused(change, error) -> None:  # type: ignore[no-untyped-def]
    data = GameSetup.build(SETTINGS, match_id="cup", game_number=1, seat_bots=[0, 1, 2, 3], seed=1).to_dict()
    change(data)
    with pytest.raises(error):
        GameSetup.from_dict(data)


@pytest.mark.parametrize("endpoint", [
    BotEndpoint.parse("unix:/run/bots/a.sock"),
    BotEndpoint.parse("127.0.0.1:50051"),
    BotEndpoint.parse("python3 -c 'print(1)'", cwd="/tmp", env={"CASINO_BOT_SEED": "4", "A": "b c"}),
    dataclasses.replace(BotEndpoint.parse("python3 main.py", cwd="/tmp"), archive="ab" * 32),
], ids=["unix", "host-port", "command", "archive"])
def test_bot_endpoint_round_trips_through_json(endpoint: BotEndpoint) -> None:
    assert BotEndpoint.from_dict(json.loads(json.dumps(endpoint.to_dict()))) == endpoint


def test_an_endpoint_written_before_archives_reads_as_one_without() -> None:
    old = {"spec": "python3 x.py", "address": None, "command": ["python3", "x.py"], "cwd": None, "env": {}}
    assert BotEndpoint.from_dict(old).archive is None


@pytest.mark.parametrize("data", [
    {"spec": "x", "address": "unix:/a", "command": ["python"], "cwd": None, "env": {}},
    {"spec": "x", "address": None, "command": [], "cwd": None, "env": {}},
    {"spec": "x", "address": None, "command": [1], "cwd": None, "env": {}},
    {"spec": "x", "address": None, "command": ["python"], "cwd": None},
    {"spec": "x", "address": None, "command": ["python"], "cwd": None, "env": {}, "archive": 5},
], ids=["both", "neither", "not-strings", "missing-env", "archive-not-a-string"])
def test_a_bad_endpoint_is_refused(data: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(EndpointError):
        BotEndpoint.from_dict(data)


def test_only_one_place_constructs_a_game_setup() -> None:
    # GameSetup.build is the one builder (docs/architecture.md): no other module of the referee or
    # the arena calls the constructor
    calls = []
    for path in sorted([*(ROOT / "referee").rglob("*.py"), *(ROOT / "arena").rglob("*.py")]):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\bGameSetup\(", line) and "class GameSetup" not in line:
                calls.append(f"{path.relative_to(ROOT)}:{number}")
    assert calls == [], calls
