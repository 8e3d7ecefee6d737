"""The tournament file (arena/config.py): values, defaults, paths, every error, the docs example."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import re
import shlex
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

from arena.config import (
    BotConfig,
    ConfigError,
    LadderConfig,
    StandingsSettings,
    TournamentConfig,
    load_config,
    parse_config,
    parse_duration,
)
from referee.clock import TimeControl
from referee.match.spec import FailurePolicy
from referee.rules import Condition, RuleOptions

ROOT = Path(__file__).resolve().parents[2]
PYTHON = json.dumps(shlex.join([sys.executable, "bot.py"]))  # a command whose program exists, as a TOML string
TWO_BOTS = f"""
[[bots]]
name = "a"
command = {PYTHON}

[[bots]]
name = "b"
address = "localhost:50051"
"""
FOUR_BOTS = TWO_BOTS + """
[[bots]]
name = "c"
address = "unix:/tmp/c.sock"

[[bots]]
name = "d"
address = "127.0.0.1:50052"
"""


def cup(top: str = "", bots: str = TWO_BOTS, tail: str = "") -> str:
    """A tournament file: top-level lines, then the bots, then any further sections."""
    return f'name = "cup"\n{top}\n{bots}\n{tail}\n'


def parse(text: str, folder: Path) -> TournamentConfig:
    return parse_config(text, folder / "cup.toml")


def test_full_file_gives_every_value(tmp_path: Path) -> None:
    (tmp_path / "bots").mkdir()
    path = tmp_path / "spring.toml"
    path.write_text(f"""
name = "spring-cup"
players = 4
games_per_pairing = 8
duplicate = true
concurrency = 3
seed = 7
database = "postgresql+psycopg://arena:secret@dbhost/arena"

[rules]
on_twenty = "most_spades"
max_deals = 12

[time]
move_ms = 500
grace_ms = 20
bank_ms = 3000
increment_ms = 100
startup_ms = 4000

[failures]
policy = "random_move"
max_strikes = 0

[[bots]]
name = "greedy.v2"
command = {PYTHON}
cwd = "bots"
env = {{ SEED = "3", MODE = "fast" }}

[[bots]]
name = "remote"
address = "localhost:50051"

[[bots]]
name = "sock_bot"
address = "unix:/tmp/b.sock"

[[bots]]
name = "cmd-addr"
command = "localhost:50099"

[ladder]
interval = "90s"
pairings_per_bot = 3
sets_per_pairing = 2
""", encoding="utf-8")
    config = load_config(path)
    assert config == TournamentConfig(
        path=path,
        name="spring-cup",
        players=4,
        bots=(
            BotConfig("greedy.v2", shlex.join([sys.executable, "bot.py"]), str(tmp_path / "bots"),
                      {"SEED": "3", "MODE": "fast"}),
            BotConfig("remote", "localhost:50051", None, {}),
            BotConfig("sock_bot", "unix:/tmp/b.sock", None, {}),
            BotConfig("cmd-addr", "localhost:50099", None, {}),
        ),
        games_per_pairing=8,
        duplicate=True,
        rules=RuleOptions(players=4, partnerships=True, on_twenty=Condition.MOST_SPADES, max_deals=12),
        time_control=TimeControl(move_time_ms=500, grace_ms=20, bank_initial_ms=3000, bank_increment_ms=100,
                                 startup_time_ms=4000),
        policy=FailurePolicy.RANDOM_MOVE,
        max_strikes=0,
        concurrency=3,
        seed=7,
        database="postgresql+psycopg://arena:secret@dbhost/arena",
        ladder=LadderConfig(interval_s=90.0, cron=None, pairings_per_bot=3, sets_per_pairing=2),
    )
    greedy = config.bots[0].endpoint()
    assert greedy.command == (sys.executable, "bot.py")
    assert greedy.cwd == str(tmp_path / "bots")
    assert dict(greedy.env) == {"SEED": "3", "MODE": "fast"}
    assert config.bots[3].endpoint().address == "localhost:50099"  # BotEndpoint.parse decides


def test_defaults(tmp_path: Path) -> None:
    config = parse(cup(), tmp_path)
    assert config.path == tmp_path / "cup.toml"
    assert (config.players, config.games_per_pairing, config.duplicate) == (2, 2, True)
    assert config.rules == RuleOptions(players=2, partnerships=True, on_twenty=Condition.LITTLE_CASINO, max_deals=30)
    assert config.time_control == TimeControl()
    assert (config.policy, config.max_strikes, config.seed) == (FailurePolicy.FORFEIT, 3, 1)
    assert config.concurrency == len(os.sched_getaffinity(0))
    assert config.ladder is None
    assert config.bots[0] == BotConfig("a", shlex.join([sys.executable, "bot.py"]), None, {})


def test_the_default_concurrency_is_the_cores_this_process_may_use(tmp_path: Path) -> None:
    # a process pinned to one core (taskset, a container's cpuset) plays one game at once by
    # default, however many cores the machine has
    mask = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(mask)})
    try:
        assert parse(cup(), tmp_path).concurrency == 1
    finally:
        os.sched_setaffinity(0, mask)


def test_default_games_are_one_duplicate_set_or_two(tmp_path: Path) -> None:
    assert parse(cup("players = 4", bots=FOUR_BOTS), tmp_path).games_per_pairing == 4
    assert parse(cup("players = 3\nduplicate = false", bots=FOUR_BOTS), tmp_path).games_per_pairing == 2


def test_database_default_is_next_to_the_file(tmp_path: Path) -> None:
    config = parse(cup(), tmp_path)
    assert config.database == f"sqlite:///{tmp_path / 'cup.db'}"


def test_relative_sqlite_path_is_relative_to_the_file(tmp_path: Path) -> None:
    config = parse(cup('database = "sqlite:///data/results.db"'), tmp_path / "sub")
    assert config.database == f"sqlite:///{tmp_path / 'sub' / 'data' / 'results.db'}"


def test_absolute_sqlite_and_server_urls_are_kept(tmp_path: Path) -> None:
    assert parse(cup('database = "sqlite:////srv/arena/x.db"'), tmp_path).database == "sqlite:////srv/arena/x.db"
    url = "postgresql+psycopg://user@host/db"
    assert parse(cup(f'database = "{url}"'), tmp_path).database == url


def test_relative_path_given_to_parse_config_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = parse_config(cup(), Path("cup.toml"))
    assert config.path == tmp_path / "cup.toml"
    assert config.database == f"sqlite:///{tmp_path / 'cup.db'}"


def test_cron_ladder(tmp_path: Path) -> None:
    config = parse(cup(tail='[ladder]\ncron = "*/10 * * * *"'), tmp_path)
    assert config.ladder == LadderConfig(interval_s=None, cron="*/10 * * * *", pairings_per_bot=2, sets_per_pairing=1)


@pytest.mark.parametrize(("text", "seconds"), [
    ("90s", 90.0), ("10m", 600.0), ("2h", 7200.0), ("1d", 86400.0), ("1.5h", 5400.0), (" 5 m ", 300.0),
    (30, 30.0), (0.5, 0.5),
])
def test_parse_duration(text: str | int | float, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["fast", "10", "10x", "-5s", "", "1h30m", 0, -3, True, float("inf")])
def test_parse_duration_refuses(text: str | int | float) -> None:
    with pytest.raises(ConfigError, match="duration"):
        parse_duration(text)


BOT_ERRORS = """
[[bots]]
name = "a"
command = {cmd}
{extra}

[[bots]]
name = "b"
address = "localhost:50051"
"""


def bots_with(extra: str = "", cmd: str = PYTHON) -> str:
    return BOT_ERRORS.format(cmd=cmd, extra=extra)


# (id, tournament file text, substrings the one-line message must contain)
ERROR_CASES = [
    ("toml-syntax", cup("players = \n"), ["invalid TOML", "line 2"]),
    ("missing-name", TWO_BOTS, ["name is required"]),
    ("empty-name", cup().replace('"cup"', '"  "'), ["name must be a non-empty string"]),
    ("unknown-top", cup("gmaes_per_pairing = 4"),
     ['unknown key "gmaes_per_pairing" (did you mean "games_per_pairing"?)']),
    ("unknown-top-no-hint", cup('colour = "red"'), ['unknown key "colour"']),
    ("section-key-at-top", cup("move_ms = 5"), ['unknown key "move_ms"', "belongs in [time]"]),
    ("top-key-in-section", cup(tail="[ladder]\ninterval = 60\nseed = 7"),
     ['unknown key "seed" in [ladder]', "top-level key"]),
    ("unknown-rules", cup(tail="[rules]\nmax_deal = 3"), ['"max_deal" in [rules]', 'did you mean "max_deals"']),
    ("unknown-time", cup(tail="[time]\nmove_time_ms = 3"), ['"move_time_ms" in [time]', 'did you mean "move_ms"']),
    ("unknown-failures", cup(tail='[failures]\npolcy = "forfeit"'), ['"polcy" in [failures]', '"policy"']),
    ("unknown-bot-key", cup(bots=bots_with('comand = "x"')), ['"comand" in [[bots]] #1 ("a")', '"command"']),
    ("unknown-ladder", cup(tail="[ladder]\ncron = \"* * * * *\"\nintervall = 60"),
     ['"intervall" in [ladder]', '"interval"']),
    ("section-not-table", cup("time = 5"), ["time must be a table", "not 5"]),
    ("time-string", cup(tail='[time]\nmove_ms = "fast"'),
     ['[time] move_ms must be a whole number from 1 to 3600000, not "fast"']),
    ("time-zero", cup(tail="[time]\nmove_ms = 0"), ["[time] move_ms", "not 0"]),
    ("startup-zero", cup(tail="[time]\nstartup_ms = 0"), ["[time] startup_ms", "not 0"]),
    ("grace-negative", cup(tail="[time]\ngrace_ms = -1"), ["[time] grace_ms", "not -1"]),
    ("bank-too-big", cup(tail="[time]\nbank_ms = 5000000"), ["[time] bank_ms", "3600000"]),
    ("players-bool", cup("players = true"), ["players must be a whole number", "not true"]),
    ("players-5", cup("players = 5"), ["players must be a whole number from 2 to 4, not 5"]),
    ("players-1", cup("players = 1"), ["players", "not 1"]),
    ("games-float", cup("games_per_pairing = 2.0"), ["games_per_pairing must be a whole number", "not 2.0"]),
    ("games-zero", cup("duplicate = false\ngames_per_pairing = 0"), ["games_per_pairing", "not 0"]),
    ("duplicate-not-bool", cup('duplicate = "yes"'), ['duplicate must be true or false, not "yes"']),
    ("duplicate-2p", cup("games_per_pairing = 3"),
     ["games_per_pairing must be a multiple of 2", "not 3", "use 2 or 4", "duplicate = false"]),
    ("duplicate-4p", cup("players = 4\ngames_per_pairing = 5", bots=FOUR_BOTS),
     ["multiple of 4", "use 4 or 8"]),
    ("duplicate-3p-too-few", cup("players = 3\ngames_per_pairing = 2", bots=FOUR_BOTS), ["multiple of 3", "use 3,"]),
    ("concurrency-zero", cup("concurrency = 0"), ["concurrency must be a whole number >= 1, not 0"]),
    ("seed-negative", cup("seed = -1"), ["seed", "not -1"]),
    ("seed-string", cup('seed = "7"'), ["seed", 'not "7"']),
    ("database-unparsable", cup('database = "not a url"'), ["database", '"not a url"']),
    ("database-unknown-dialect", cup('database = "postgres://u@h/db"'), ["database", "postgres"]),
    ("on-twenty", cup(tail='[rules]\non_twenty = "most_spade"'),
     ['[rules] on_twenty must be "little_casino" or "most_spades"', 'did you mean "most_spades"']),
    ("on-twenty-most-cards", cup(tail='[rules]\non_twenty = "most_cards"'), ["[rules] on_twenty"]),
    ("max-deals", cup(tail="[rules]\nmax_deals = 0"), ["[rules] max_deals", "not 0"]),
    ("policy", cup(tail='[failures]\npolicy = "forfit"'),
     ['[failures] policy must be "forfeit" or "random_move", not "forfit" (did you mean "forfeit"?)']),
    ("max-strikes", cup(tail="[failures]\nmax_strikes = -1"), ["[failures] max_strikes", "not -1"]),
    ("tournament-name-slash", cup().replace('"cup"', '"spring/cup"'), ['name must be 1 to 100 characters with no "/"',
                                                                      '"spring/cup"']),
    ("tournament-name-control", cup().replace('"cup"', '"cup\\u0007"'), ["name must be 1 to 100", "control"]),
    ("tournament-name-long", cup().replace('"cup"', '"' + "c" * 101 + '"'), ["name must be 1 to 100"]),
    ("no-bots", cup(bots=""), ["needs at least 2 [[bots]]", "found 0"]),
    ("too-few-bots", cup("players = 3\ngames_per_pairing = 3"), ["3-player", "at least 3", "found 2"]),
    ("bots-as-table", cup(bots='[bots]\nname = "a"'), ["bots must be an array of tables"]),
    ("duplicate-names", cup(bots=TWO_BOTS.replace('"b"', '"A"')),
     ['[[bots]] #2 name "A" is already used by [[bots]] #1']),
    ("bad-bot-name", cup(bots=TWO_BOTS.replace('"b"', '"my bot"')), ['[[bots]] #2 ("my bot") name', '"my bot"']),
    ("long-bot-name", cup(bots=TWO_BOTS.replace('"b"', '"' + "x" * 65 + '"')), ["name must be 1 to 64"]),
    ("bot-name-missing", cup(bots=TWO_BOTS.replace('name = "b"', "")), ["[[bots]] #2 name is required"]),
    ("both-command-address", cup(bots=bots_with('address = "localhost:1"')), ["has both command and address"]),
    ("neither-command-address", cup(bots=TWO_BOTS.replace('address = "localhost:50051"', "")),
     ['[[bots]] #2 ("b") needs command', "or address"]),
    ("empty-command", cup(bots=bots_with(cmd='"  "')), ['("a") command must be a non-empty string']),
    ("command-not-found", cup(bots=bots_with(cmd='"no-such-program-xyz --fast"')),
     ['("a") command is not usable', "no-such-program-xyz"]),
    ("command-unbalanced-quote", cup(bots=bots_with(cmd="'python \"bot.py'")), ['("a") command is not usable']),
    ("address-not-address", cup(bots=TWO_BOTS.replace('"localhost:50051"', '"python bot.py"')),
     ['("b") address must be "host:port" or "unix:/path"', "use command"]),
    ("address-bad-port", cup(bots=TWO_BOTS.replace("50051", "70000")), ['("b") address is not usable', "port"]),
    ("cwd-missing", cup(bots=bots_with('cwd = "no-such-dir"')), ['("a") cwd "no-such-dir" is not a directory']),
    ("cwd-on-address", cup(bots=TWO_BOTS + 'cwd = "."'), ['("b") cwd only applies to a command']),
    ("env-on-address", cup(bots=TWO_BOTS + "env = {}"), ['("b") env only applies to a command']),
    ("env-not-string", cup(bots=bots_with("env = { SEED = 3 }")), ['("a") env.SEED must be a string, not 3']),
    ("env-not-table", cup(bots=bots_with('env = "SEED=3"')), ['("a") env must be a table']),
    ("env-bad-name", cup(bots=bots_with('env = { "A=B" = "x" }')), ['("a") env has a bad variable name "A=B"']),
    ("interval-bad", cup(tail='[ladder]\ninterval = "fast"'), ["[ladder] interval is not valid", '"fast"']),
    ("interval-zero", cup(tail="[ladder]\ninterval = 0"), ["[ladder] interval is not valid"]),
    ("interval-bool", cup(tail="[ladder]\ninterval = true"), ["[ladder] interval", "not true"]),
    ("cron-fields", cup(tail='[ladder]\ncron = "* * * *"'), ["[ladder] cron", "5-field", "got 4"]),
    ("cron-range", cup(tail='[ladder]\ncron = "61 * * * *"'), ["[ladder] cron", "61"]),
    ("interval-and-cron", cup(tail='[ladder]\ninterval = "10m"\ncron = "* * * * *"'), ["both interval and cron"]),
    ("ladder-neither", cup(tail="[ladder]\npairings_per_bot = 2"), ["[ladder] needs interval"]),
    ("pairings-zero", cup(tail="[ladder]\ninterval = 60\npairings_per_bot = 0"), ["[ladder] pairings_per_bot"]),
    ("sets-zero", cup(tail="[ladder]\ninterval = 60\nsets_per_pairing = 0"), ["[ladder] sets_per_pairing"]),
    ("unknown-standings", cup(tail="[standings]\nprovisional_game = 30"),
     ['unknown key "provisional_game" in [standings] (did you mean "provisional_games"?)']),
    ("standings-key-at-top", cup("provisional_sigma = 2"), ['unknown key "provisional_sigma"', "belongs in [standings]"]),
    ("standings-not-table", cup("standings = 20"), ["standings must be a table", "not 20"]),
    ("provisional-games-negative", cup(tail="[standings]\nprovisional_games = -1"),
     ["[standings] provisional_games must be a whole number >= 0, not -1"]),
    ("provisional-games-float", cup(tail="[standings]\nprovisional_games = 20.5"),
     ["[standings] provisional_games", "not 20.5"]),
    ("provisional-sigma-zero", cup(tail="[standings]\nprovisional_sigma = 0"),
     ["[standings] provisional_sigma must be a number greater than 0, not 0"]),
    ("provisional-sigma-string", cup(tail='[standings]\nprovisional_sigma = "wide"'),
     ["[standings] provisional_sigma", 'not "wide"']),
    ("provisional-sigma-bool", cup(tail="[standings]\nprovisional_sigma = true"),
     ["[standings] provisional_sigma", "not true"]),
    ("provisional-sigma-inf", cup(tail="[standings]\nprovisional_sigma = inf"), ["[standings] provisional_sigma"]),
]


@pytest.mark.parametrize(("text", "expected"), [case[1:] for case in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_errors_name_the_file_and_key(tmp_path: Path, text: str, expected: list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(text, tmp_path)
    message = str(caught.value)
    assert message.startswith("cup.toml: ")
    assert "\n" not in message and caught.value.errors == (message,)  # each case has one mistake
    for part in expected:
        assert part in message


def test_every_error_of_a_file_is_reported_at_once(tmp_path: Path) -> None:
    text = cup('players = 5\ncolour = "red"', bots=bots_with('cwd = "no-such-dir"'),
               tail='[time]\nmove_ms = "fast"\n[failures]\npolicy = "forfit"')
    with pytest.raises(ConfigError) as caught:
        parse(text, tmp_path)
    errors = caught.value.errors
    expected = ["players must be a whole number from 2 to 4, not 5", 'unknown key "colour"',
                "[time] move_ms must be a whole number", "[failures] policy must be", '("a") cwd "no-such-dir"']
    assert len(errors) == len(expected), errors
    for part in expected:
        assert sum(part in e for e in errors) == 1, (part, errors)
    assert all(e.startswith("cup.toml: ") and "\n" not in e for e in errors)
    assert str(caught.value) == "\n".join(errors)


def test_checks_that_depend_on_a_bad_value_are_skipped(tmp_path: Path) -> None:
    """A bad players value reports itself only: not "games_per_pairing must be a multiple of 2"
    nor "needs at least 2 bots", which would be guesses made with the default."""
    with pytest.raises(ConfigError) as caught:
        parse(cup("players = true\ngames_per_pairing = 3", bots=""), tmp_path)
    assert caught.value.errors == ("cup.toml: players must be a whole number from 2 to 4, not true",)


@pytest.mark.parametrize("name", ["evil\nname", "a\u001b[31mFORFEITS\u001b[0m", "x\u2028y", "z\u0085w"])
def test_a_bot_name_with_control_characters_gives_one_line_errors(tmp_path: Path, name: str) -> None:
    bots = TWO_BOTS.replace('"b"', json.dumps(name)).replace('address = "localhost:50051"', 'address = "nowhere"')
    with pytest.raises(ConfigError) as caught:
        parse(cup(bots=bots), tmp_path)
    errors = caught.value.errors
    assert len(errors) == 2, errors  # the name, and the address, of entry #2
    for line in errors:
        assert line.splitlines() == [line] and line.isprintable(), line
        assert line.startswith(f"cup.toml: [[bots]] #2 ({json.dumps(name)}) "), line
    assert any("name must be 1 to 64" in e for e in errors) and any("address must be" in e for e in errors)


def test_a_very_long_value_is_cut_in_the_message(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(cup(bots=TWO_BOTS.replace('"b"', '"' + "y" * 200_000 + '"')), tmp_path)
    (message,) = caught.value.errors
    assert len(message) < 400 and "(200000 characters)" in message


def test_a_file_name_with_a_newline_stays_on_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(cup("players = 9"), tmp_path / "two\nlines.toml")
    assert str(caught.value).startswith('"two\\nlines.toml": players') and "\n" not in str(caught.value)


def test_command_naming_a_file_that_is_not_executable_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "bot.py"
    script.write_text("print('hi')\n", encoding="utf-8")
    script.chmod(0o644)
    with pytest.raises(ConfigError) as caught:
        parse(cup(bots=bots_with('cwd = "."', cmd='"./bot.py --fast"')), tmp_path)
    assert caught.value.errors == (
        "cup.toml: [[bots]] #1 (\"a\") command is not usable: bad bot command './bot.py --fast': ./bot.py is not "
        "executable (chmod +x it, or start it through its interpreter, e.g. python3 bot.py)",)
    script.chmod(0o755)
    assert parse(cup(bots=bots_with('cwd = "."', cmd='"./bot.py --fast"')), tmp_path).bots[0].spec == "./bot.py --fast"


def test_command_naming_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bots").mkdir()
    with pytest.raises(ConfigError, match=r"command is not usable: .*bots is a directory, not a program"):
        parse(cup(bots=bots_with('cwd = "."', cmd='"./bots"')), tmp_path)


def test_error_cases_are_otherwise_valid(tmp_path: Path) -> None:
    """The base files the error table builds on parse, so each case fails for its own reason."""
    assert parse(cup(), tmp_path).bots[1].spec == "localhost:50051"
    assert len(parse(cup("players = 4", bots=FOUR_BOTS), tmp_path).bots) == 4
    assert parse(cup(bots=bots_with('env = { SEED = "3" }\ncwd = "."')), tmp_path).bots[0].cwd == str(tmp_path)


def test_load_config_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "nope.toml")


def test_load_config_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "cup.toml"
    path.write_bytes(b'name = "caf\xe9"\n')
    with pytest.raises(ConfigError, match=r"^cup\.toml: not UTF-8"):
        load_config(path)


def docs_example() -> str:
    docs = (ROOT / "docs" / "tournaments.md").read_text(encoding="utf-8")
    match = re.search(r"```toml\n(.*?)```", docs, flags=re.S)
    assert match, "docs/tournaments.md has no ```toml block"
    return match.group(1)


def test_docs_example_parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The example's commands start with `python`: make sure that name is this interpreter.
    (tmp_path / "python").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    # its archive is made here (the example's path is relative to a file at the root, kept clean)
    archive = tmp_path / "packed.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        main = tarfile.TarInfo("main.py")
        tar.addfile(main, io.BytesIO(b""))
    example = docs_example()
    assert 'archive = "uploads/packed.tar.gz"' in example
    example = example.replace('archive = "uploads/packed.tar.gz"', f"archive = {json.dumps(str(archive))}")
    config = parse_config(example, ROOT / "spring-cup.toml")  # a file at the root: cwd "." exists
    assert config.name == "spring-cup"
    assert [bot.name for bot in config.bots] == ["greedy", "random", "packed", "remote"]
    assert config.bots[2].archive_sha256 == hashlib.sha256(archive.read_bytes()).hexdigest()
    assert config.ladder is not None and config.ladder.interval_s == 600.0
    assert config.database == f"sqlite:///{ROOT / 'spring-cup.db'}"


def test_docs_tables_list_every_key_of_the_example() -> None:
    docs = (ROOT / "docs" / "tournaments.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", docs, flags=re.M))
    example = tomllib.loads(docs_example())
    keys = {k for k, v in example.items() if not isinstance(v, (dict, list))}
    for value in example.values():
        for table in value if isinstance(value, list) else [value] if isinstance(value, dict) else []:
            keys |= set(table)
    assert keys - documented == set()
    assert "cron" in documented


FINGERPRINT_BASE = cup("games_per_pairing = 4\nseed = 3\nconcurrency = 2")


@pytest.mark.parametrize(("old", "new"), [
    ("games_per_pairing = 4", "games_per_pairing = 6"),
    ("seed = 3", "seed = 4"),
    ('name = "b"', 'name = "b2"'),
    ("concurrency = 2", "concurrency = 2\nduplicate = false"),
    ("concurrency = 2", "concurrency = 2\n[time]\nmove_ms = 999"),
    ("concurrency = 2", "concurrency = 2\n[rules]\nmax_deals = 29"),
    ("concurrency = 2", 'concurrency = 2\n[failures]\npolicy = "random_move"'),
    ("concurrency = 2", "concurrency = 2\nauto_forced = false"),
])
def test_fingerprint_changes_with_settings_that_decide_games(tmp_path: Path, old: str, new: str) -> None:
    assert old in FINGERPRINT_BASE
    before = parse(FINGERPRINT_BASE, tmp_path).settings_fingerprint()
    after = parse(FINGERPRINT_BASE.replace(old, new, 1), tmp_path).settings_fingerprint()
    assert re.fullmatch(r"[0-9a-f]{64}", before)
    assert after != before


def test_fingerprint_follows_bot_order(tmp_path: Path) -> None:
    swapped = cup(bots=FOUR_BOTS.replace('"c"', '"tmp"').replace('"d"', '"c"').replace('"tmp"', '"d"'))
    original = parse(cup(bots=FOUR_BOTS), tmp_path)
    assert [b.name for b in parse(swapped, tmp_path).bots] == ["a", "b", "d", "c"]
    assert parse(swapped, tmp_path).settings_fingerprint() != original.settings_fingerprint()


@pytest.mark.parametrize(("old", "new"), [
    ("concurrency = 2", "concurrency = 7"),
    ("concurrency = 2", 'concurrency = 2\ndatabase = "sqlite:///other.db"'),
    ('name = "cup"', 'name = "renamed"'),
    (f"command = {PYTHON}", f'command = {json.dumps(shlex.join([sys.executable, "other.py"]))}\ncwd = "."'),
    ('address = "localhost:50051"', 'address = "unix:/tmp/moved.sock"'),
    ("concurrency = 2", "concurrency = 2\n[ladder]\ninterval = 60"),
    ("concurrency = 2", "concurrency = 2\n[standings]\nprovisional_games = 5\nprovisional_sigma = 1.5"),
])
def test_fingerprint_ignores_how_and_where(tmp_path: Path, old: str, new: str) -> None:
    assert old in FINGERPRINT_BASE
    before = parse(FINGERPRINT_BASE, tmp_path)
    after = parse(FINGERPRINT_BASE.replace(old, new, 1), tmp_path)
    assert after != before
    assert after.settings_fingerprint() == before.settings_fingerprint()


def test_standings_thresholds_come_from_the_file_else_the_defaults(tmp_path: Path) -> None:
    assert parse(cup(), tmp_path).standings == StandingsSettings() == StandingsSettings(20, 2.5)
    given = parse(cup(tail="[standings]\nprovisional_games = 0\nprovisional_sigma = 3"), tmp_path).standings
    assert given == StandingsSettings(provisional_games=0, provisional_sigma=3.0)
    assert isinstance(given.provisional_sigma, float)
    only_sigma = parse(cup(tail="[standings]\nprovisional_sigma = 1.75"), tmp_path).standings
    assert only_sigma == StandingsSettings(20, 1.75)


def test_stored_standings_settings_round_trip_and_fall_back_to_the_defaults() -> None:
    mine = StandingsSettings(12, 3.25)
    assert StandingsSettings.from_stored({"players": 2, "standings": mine.to_stored()}) == mine
    # a tournament stored before [standings] existed, or a value no file could give
    assert StandingsSettings.from_stored({"players": 2}) == StandingsSettings()
    assert StandingsSettings.from_stored({"standings": {"provisional_games": "x", "provisional_sigma": 3}}) == \
        StandingsSettings(20, 3.0)
    assert StandingsSettings.from_stored(None) == StandingsSettings()


def test_config_values_are_frozen(tmp_path: Path) -> None:
    config = parse(cup(), tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.seed = 2  # type: ignore[misc]


def test_auto_forced_is_on_unless_the_file_turns_it_off(tmp_path: Path) -> None:
    assert parse(cup(), tmp_path).game_settings.auto_forced is True
    # the default written out: a tournament whose file predates the key resumes unchanged
    written = FINGERPRINT_BASE.replace("concurrency = 2", "concurrency = 2\nauto_forced = true", 1)
    assert parse(written, tmp_path).settings_fingerprint() == parse(FINGERPRINT_BASE, tmp_path).settings_fingerprint()
    off = parse(cup("auto_forced = false"), tmp_path)
    assert off.auto_forced is False and off.game_settings.auto_forced is False
    with pytest.raises(ConfigError, match="auto_forced"):
        parse(cup('auto_forced = "no"'), tmp_path)
