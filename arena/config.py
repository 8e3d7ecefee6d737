"""The tournament file (TOML, docs/tournaments.md): load it, check every key, and hand back plain values.

Every problem of the file is found, then ConfigError lists them, one line each naming the file and
the key, so the CLI can print them as they are. The referee's own checks (TimeControl, RuleOptions,
BotEndpoint.parse) run too; their errors come back in ConfigError with the key they concern. User
text in a message (names, values, paths) is escaped (arena.errors.quoted), so a line stays a line.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import math
import os
import re
import tomllib
from dataclasses import dataclass
from datetime import date, time, timezone
from pathlib import Path
from typing import Any

from apscheduler.triggers.cron import CronTrigger
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from referee.bots.cpu import proc_metering_problem
from referee.bots.endpoint import BotEndpoint
from referee.clock import MAX_TIME_MS, TimeControl
from referee.errors import EndpointError
from referee.match.spec import FailurePolicy, GameSettings
from referee.rules import Condition, InvalidOptionError, RuleOptions
from referee.sandbox import SandboxSettings, SandboxSettingsError
from referee.sandbox.settings import PATH_SETTINGS

from referee.packages.archive import ArchiveError, archive_folder, check_archive, command_problem, read_archive_file
from referee.packages.manifest import PackageError
from referee.packages.runtimes import runtimes_from_table

from .cores import available_cores
from .errors import ArenaError, UsageError, one_line, quoted, shown

SEED_MAX = 2**63 - 1  # fits a signed 64-bit database column and the protocol's uint64
BOT_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
TOURNAMENT_NAME = re.compile(r"[^/\x00-\x1f\x7f]{1,100}")  # spaces and any script, but one URL path segment
ON_TWENTY_CHOICES = (Condition.LITTLE_CASINO.value, Condition.MOST_SPADES.value)
POLICY_CHOICES = tuple(p.value for p in FailurePolicy)

# The keys each part of the file may hold; "" is the top level.
TOP_KEYS = ("name", "players", "games_per_pairing", "duplicate", "concurrency", "seed", "database", "auto_forced",
            "rules", "time", "failures", "bots", "ladder", "sandbox", "runtimes", "standings", "public_notes", "challenges")
SECTION_KEYS = {
    "": TOP_KEYS,
    "[rules]": ("on_twenty", "max_deals"),
    "[time]": ("move_ms", "grace_ms", "bank_ms", "increment_ms", "startup_ms", "cpu_ms"),
    "[failures]": ("policy", "max_strikes"),
    "[[bots]]": ("name", "command", "address", "package", "cwd", "env", "archive"),
    "[ladder]": ("interval", "cron", "pairings_per_bot", "sets_per_pairing", "bots_per_round", "new_bot_games"),
    "[standings]": ("provisional_games", "provisional_sigma"),
    "[challenges]": ("in_flight", "games_per_day", "games_per_round", "max_pairs", "unit", "lower", "upper", "alpha",
                     "beta"),
    "[sandbox]": SandboxSettings.keys(),
}
PACKAGE_SPEC = "package"  # a bot row's spec when it is a bot package (its archive holds the package)
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_MISSING = object()


class ConfigError(ArenaError, ValueError):
    """A bad tournament file: ``errors`` holds one line per problem, each naming the file and the
    key (the CLI prints every one of them and exits 2); str(exc) is those lines."""

    def __init__(self, *errors: str) -> None:
        super().__init__(*errors)
        self.errors: tuple[str, ...] = errors

    def __str__(self) -> str:
        return "\n".join(self.errors)


@dataclass(frozen=True)
class BotConfig:
    """One [[bots]] entry: a unique name and where the bot is (a command to start or an address).
    With an ``archive`` (the file's absolute path), ``cwd`` is a folder inside the archive (None:
    its root) and ``archive_sha256`` the hash it had when the file was read (None when the file's
    programs were not checked: the reading commands)."""

    name: str
    spec: str
    cwd: str | None
    env: dict[str, str]
    archive: str | None = None
    archive_sha256: str | None = None
    package: str | None = None  # a bot package's folder or .tar.gz (absolute); spec is then PACKAGE_SPEC

    def endpoint(self) -> BotEndpoint:
        """The referee's endpoint for a bot without an archive (checks again that a command's
        program exists); one with an archive starts from its unpacked copy (arena/play/archives.py)."""
        if self.archive is not None or self.package is not None:
            raise ValueError(f"bot {self.name!r} runs from an archive: its endpoint comes from the archive cache")
        return BotEndpoint.parse(self.spec, cwd=self.cwd, env=self.env, trusted=True)  # the operator's file


@dataclass(frozen=True)
class LadderConfig:
    """When `arena serve` plays a ladder round (every interval_s seconds or on a cron schedule) and how big it is."""

    interval_s: float | None
    cron: str | None
    pairings_per_bot: int = 2
    sets_per_pairing: int = 1
    bots_per_round: int = 0  # bots a round pairs at most (0: every active bot); the rest wait their turn
    new_bot_games: int = 8  # a bot's first games after it enters the pool, played first (docs/tournaments.md)


@dataclass(frozen=True)
class StandingsSettings:
    """How the standings are shown, not how games are played ([standings], docs/tournaments.md):
    a bot with fewer than ``provisional_games`` games or a σ above ``provisional_sigma`` is marked
    provisional. Defaults chosen from how σ falls with games here (bench/provisional_sigma.py)."""

    provisional_games: int = 20
    provisional_sigma: float = 2.5

    def to_stored(self) -> dict[str, Any]:
        """As the database keeps it, beside the tournament's settings (for `arena web --db`)."""
        return {"provisional_games": self.provisional_games, "provisional_sigma": self.provisional_sigma}

    @classmethod
    def from_stored(cls, settings: Any) -> StandingsSettings:
        """A tournament's stored settings' ``standings``; the defaults where it has none (a
        tournament stored before the table existed) or holds something unusable."""
        found = settings.get("standings") if isinstance(settings, dict) else None
        found = found if isinstance(found, dict) else {}
        d = cls()
        games, sigma = found.get("provisional_games"), found.get("provisional_sigma")
        if not (isinstance(games, int) and not isinstance(games, bool) and games >= 0):
            games = d.provisional_games
        if not (isinstance(sigma, (int, float)) and not isinstance(sigma, bool) and 0 < sigma < math.inf):
            sigma = d.provisional_sigma
        return cls(games, float(sigma))


CHALLENGE_UNITS = ("deals", "games")
DEFAULT_CHALLENGE_BOUNDS = {"deals": (0.0, 0.5), "games": (0.0, 20.0)}  # as `arena compare`'s defaults


@dataclass(frozen=True)
class ChallengeSettings:
    """A ladder's challenges ([challenges], docs/challenges.md): what one user may ask for (challenges
    in flight, games a day), how many challenge games `arena serve` plays after each round's own
    games, and the sequential test's cap and bounds (``arena compare``'s: points per deal for unit
    deals, Elo for unit games). Kept with the tournament's settings, so the web app reads the same."""

    in_flight: int = 2
    games_per_day: int = 400
    games_per_round: int = 40
    max_pairs: int = 100
    unit: str = "deals"
    lower: float = 0.0
    upper: float = 0.5
    alpha: float = 0.05
    beta: float = 0.05

    def to_stored(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_stored(cls, settings: Any) -> ChallengeSettings:
        """A tournament's stored ``challenges``; the defaults for what it lacks or holds unusable."""
        found = settings.get("challenges") if isinstance(settings, dict) else None
        if not isinstance(found, dict):
            return cls()
        try:
            return cls(**{f.name: found[f.name] for f in dataclasses.fields(cls) if f.name in found})
        except (TypeError, ValueError):
            return cls()


@dataclass(frozen=True)
class TournamentConfig:
    """A checked tournament file: the bots, how their games are played, and where results go."""

    path: Path
    name: str
    players: int
    bots: tuple[BotConfig, ...]
    games_per_pairing: int
    duplicate: bool
    rules: RuleOptions
    time_control: TimeControl
    policy: FailurePolicy
    max_strikes: int
    concurrency: int
    seed: int
    database: str
    ladder: LadderConfig | None
    sandbox: SandboxSettings = dataclasses.field(default_factory=SandboxSettings)  # how its bots are confined
    # the [runtimes] tables as written (each machine that plays resolves them: referee/packages/runtimes.py),
    # with relative folders made absolute from this file's folder
    runtimes: dict[str, Any] = dataclasses.field(default_factory=dict)
    public_notes: bool = False  # the bots' notes on their plays shown to everyone, not only to their owners
    auto_forced: bool = True  # a seat's only legal move is played by the referee (docs/protocol.md)
    # how standings mark provisional bots: shown, never fingerprinted (changing it resumes the same tournament)
    standings: StandingsSettings = dataclasses.field(default_factory=StandingsSettings)
    challenges: ChallengeSettings = dataclasses.field(default_factory=ChallengeSettings)  # shown, never fingerprinted

    @property
    def game_settings(self) -> GameSettings:
        """How each of the tournament's games is played (its GameSetups are built from this)."""
        return GameSettings(self.rules, self.time_control, self.policy, self.max_strikes, self.auto_forced)

    def settings_fingerprint(self) -> str:
        """sha256 hex of the settings that decide the schedule and the games played.

        Not concurrency, database, ladder, standings or how bots are reached: a bot's command
        may move without invalidating the games it has played.
        """
        settings = {
            "players": self.players,
            "bots": [bot.name for bot in self.bots],
            "games_per_pairing": self.games_per_pairing,
            "duplicate": self.duplicate,
            "rules": self.rules.to_dict(),
            "time_control": self.time_control.to_dict(),  # no cpu_time_ms when 0: older fingerprints hold
            "policy": self.policy.value,
            "max_strikes": self.max_strikes,
            "seed": self.seed,
        }
        if not self.auto_forced:  # only when off: fingerprints of files written before the key hold
            settings["auto_forced"] = False
        canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def load_config(path: str | Path, check_programs: bool = True) -> TournamentConfig:
    """Read and check the tournament file at ``path``; ConfigError on any problem. Commands that
    only read results pass ``check_programs=False``: they start no bot, so a bot's program and
    ``cwd`` need not exist (a finished tournament copied to another machine can still be read)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{shown(str(path))}: cannot read the tournament file: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")  # TOML is UTF-8; tolerate the byte-order mark some editors write
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{shown(path.name)}: not UTF-8 text (byte {exc.start})") from None
    return parse_config(text, path, check_programs)


def parse_config(text: str, path: Path, check_programs: bool = True) -> TournamentConfig:
    """Check a tournament file given as text; ``path`` names it and gives the folder for relative paths.

    Every problem is found before ConfigError is raised (one line each), so a file is fixed in
    one go; a check that depends on a bad value (the number of bots for a bad ``players``) is
    skipped rather than reported on a guess.
    """
    path = Path(os.path.abspath(Path(path).expanduser()))
    file = shown(path.name)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: invalid TOML: {one_line(str(exc))}") from None
    problems: list[str] = []
    top = _Table(file, "", data, problems)
    top.check_keys()

    name = top.string("name")
    if name and not TOURNAMENT_NAME.fullmatch(name):
        top.fail("name", f"must be 1 to 100 characters with no \"/\" and no control characters (it is a path "
                         f"segment of the web's pages), not {_show(name)}")
    players = top.integer("players", 2, minimum=2, maximum=4)
    duplicate = top.boolean("duplicate", True)
    # One duplicate set (a game per seat rotation) by default; plain 2 games without duplicates.
    games_per_pairing = top.integer("games_per_pairing", players if duplicate else 2, minimum=1)
    if duplicate and games_per_pairing % players and top.all_good("players", "duplicate", "games_per_pairing"):
        top.fail("games_per_pairing", _duplicate_hint(games_per_pairing, players))
    concurrency = top.integer("concurrency", available_cores(), minimum=1)  # the cores this process may use
    seed = top.integer("seed", 1, minimum=0, maximum=SEED_MAX)
    database = _database(top, path)
    auto_forced = top.boolean("auto_forced", True)
    public_notes = top.boolean("public_notes", False)

    rules = _rules(top.table("rules"), players, top.all_good("players"))
    time_control = _time_control(top.table("time"))
    failures = top.table("failures")
    failures.check_keys()
    policy = FailurePolicy(failures.choice("policy", POLICY_CHOICES, FailurePolicy.FORFEIT.value))
    max_strikes = failures.integer("max_strikes", 3, minimum=0)

    bots = _bots(top, path.parent, players, check_programs)
    _check_cpu_limit(top, time_control, bots)
    ladder = _ladder(top.table("ladder"), players) if "ladder" in data else None
    standings = _standings(top.table("standings"))
    challenges = _challenges(top.table("challenges"))
    sandbox = _sandbox(top.table("sandbox"), path.parent)
    runtimes = _runtimes(data.get("runtimes"), path, problems, check_programs)
    if problems:
        raise ConfigError(*problems)
    return TournamentConfig(
        path=path, name=name, players=players, bots=bots, games_per_pairing=games_per_pairing,
        duplicate=duplicate, rules=rules, time_control=time_control, policy=policy, max_strikes=max_strikes,
        concurrency=concurrency, seed=seed, database=database, ladder=ladder, sandbox=sandbox,
        auto_forced=auto_forced, runtimes=runtimes, standings=standings, public_notes=public_notes,
        challenges=challenges,
    )


def parse_duration(text: str | int | float) -> float:
    """Seconds in ``"90s"``, ``"10m"``, ``"2h"``, ``"1d"`` or a bare number of seconds; ConfigError otherwise."""
    expected = ('a duration must be a number of seconds > 0 or a number with a unit s, m, h or d '
                f'("90s", "10m", "2h", "1d"), not {_show(text)}')
    if isinstance(text, bool):
        raise ConfigError(expected)
    if isinstance(text, (int, float)):
        seconds = float(text)
    elif isinstance(text, str) and (match := _DURATION.fullmatch(text)):
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    else:
        raise ConfigError(expected)
    if not 0 < seconds < float("inf"):
        raise ConfigError(expected)
    return seconds


class _Table:
    """One table of the file being read: typed getters whose errors name the file and the key.

    A getter that finds a bad value records the problem in the file's shared ``problems`` list
    and returns the default, so reading goes on and every problem of the file is reported."""

    def __init__(self, file: str, label: str, data: dict[str, Any], problems: list[str],
                 kind: str | None = None) -> None:
        self.file = file
        self.label = label  # "" for the top level, "[time]", '[[bots]] #2 ("greedy")', ...
        self.data = data
        self.problems = problems
        self.bad: set[str] = set()  # keys of this table whose value was refused
        self.kind = label if kind is None else kind  # which entry of SECTION_KEYS applies

    def problem(self, message: str) -> None:
        """Record a problem of this table that no single key owns."""
        self.problems.append(f"{self.file}: {message}")

    def fail(self, key: str, message: str) -> None:
        """Record that ``key`` has a bad value."""
        self.bad.add(key)
        where = f"{self.label} {key}" if self.label else key
        self.problem(f"{where} {message}")

    def all_good(self, *keys: str) -> bool:
        """None of ``keys`` was refused (checks that combine values only run on good ones)."""
        return not self.bad.intersection(keys)

    def check_keys(self) -> None:
        """Refuse keys this table does not know, with a hint when the key is a typo or misplaced."""
        known = SECTION_KEYS[self.kind]
        for key in self.data:
            if key in known:
                continue
            where = f" in {self.label}" if self.label else ""
            self.problem(f"unknown key {_show(key)}{where}{_key_hint(key, self.kind)}")

    def table(self, key: str) -> _Table:
        """A sub-table such as [time]; empty when absent (or refused)."""
        value = self.data.get(key, {})
        if not isinstance(value, dict):
            self.fail(key, f"must be a table ([{key}] section), not {_show(value)}")
            value = {}
        return _Table(self.file, f"[{key}]", value, self.problems)

    def integer(self, key: str, default: int, *, minimum: int, maximum: int | None = None) -> int:
        value = self.data.get(key, default)
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok and value >= minimum and (maximum is None or value <= maximum):
            return value
        wanted = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        self.fail(key, f"must be a whole number {wanted}, not {_show(value)}")
        return default

    def boolean(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            self.fail(key, f"must be true or false, not {_show(value)}")
            return default
        return value

    def string(self, key: str, default: Any = _MISSING) -> str:
        """A non-empty string; required unless a default is given ("" after a problem)."""
        value = self.data.get(key, default)
        if value is _MISSING:
            self.fail(key, "is required")
            return ""
        if not isinstance(value, str) or not value.strip():
            self.fail(key, f"must be a non-empty string, not {_show(value)}")
            return "" if default is _MISSING else default
        return value

    def number(self, key: str, default: float, *, above: float) -> float:
        """A finite number (whole or not) greater than ``above``."""
        value = self.data.get(key, default)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and above < value < math.inf:
            return float(value)
        self.fail(key, f"must be a number greater than {above:g}, not {_show(value)}")
        return default

    def choice(self, key: str, choices: tuple[str, ...], default: str) -> str:
        value = self.data.get(key, default)
        if isinstance(value, str) and value in choices:
            return value
        names = " or ".join(f'"{c}"' for c in choices)
        close = difflib.get_close_matches(value, choices, n=1) if isinstance(value, str) else []
        hint = f' (did you mean "{close[0]}"?)' if close else ""
        self.fail(key, f"must be {names}, not {_show(value)}{hint}")
        return default


def _key_hint(key: str, kind: str) -> str:
    """' (did you mean ...?)' for a typo, or where the key belongs when it is in the wrong table."""
    if kind != "" and key in TOP_KEYS:
        # TOML puts every key after a [section] header into that section.
        return f" ({key} is a top-level key: move it above the first [section] header)"
    homes = [section for section, keys in SECTION_KEYS.items() if section not in ("", kind) and key in keys]
    if homes:
        entry = "a [[bots]] entry" if homes[0] == "[[bots]]" else homes[0]
        return f" ({key} belongs in {entry})"
    close = difflib.get_close_matches(key, SECTION_KEYS[kind], n=1)
    return f' (did you mean "{close[0]}"?)' if close else ""


def _duplicate_hint(games: int, players: int) -> str:
    """The error for a games_per_pairing that is not a whole number of duplicate sets."""
    lower = games // players * players
    nearest = " or ".join(str(n) for n in (lower, lower + players) if n >= players)
    return (f"must be a multiple of {players} with duplicate = true (one game per seat rotation), not {games}: "
            f"use {nearest}, or set duplicate = false")


def _database(top: _Table, path: Path) -> str:
    """The SQLAlchemy URL; a relative SQLite path is taken from the tournament file's folder."""
    default = f"sqlite:///{path.with_suffix('.db')}"
    text = top.string("database", default)
    try:
        url = make_url(text)
        url.get_dialect()  # an unknown dialect ("postgres://") fails here, without connecting
    except (ArgumentError, NoSuchModuleError, ValueError) as exc:
        top.fail("database", f"is not a database URL SQLAlchemy knows: {_show(text)} ({one_line(str(exc))})")
        return default
    db = url.database
    if url.get_backend_name() == "sqlite" and db and db != ":memory:" and not db.startswith("file:"):
        if not Path(db).is_absolute():
            return url.set(database=os.path.normpath(path.parent / db)).render_as_string(hide_password=False)
    return text


def _rules(table: _Table, players: int, players_good: bool) -> RuleOptions:
    table.check_keys()
    on_twenty = table.choice("on_twenty", ON_TWENTY_CHOICES, Condition.LITTLE_CASINO.value)
    max_deals = table.integer("max_deals", 30, minimum=1)
    try:
        return RuleOptions(players=players, partnerships=True, on_twenty=Condition(on_twenty), max_deals=max_deals)
    except InvalidOptionError as exc:
        if players_good and table.all_good("on_twenty", "max_deals"):
            table.problem(f"[rules] {one_line(str(exc))}")
        return RuleOptions(players=2, partnerships=True)


def _time_control(table: _Table) -> TimeControl:
    table.check_keys()
    d = TimeControl()
    values = {
        "move_time_ms": table.integer("move_ms", d.move_time_ms, minimum=1, maximum=MAX_TIME_MS),
        "grace_ms": table.integer("grace_ms", d.grace_ms, minimum=0, maximum=MAX_TIME_MS),
        "bank_initial_ms": table.integer("bank_ms", d.bank_initial_ms, minimum=0, maximum=MAX_TIME_MS),
        "bank_increment_ms": table.integer("increment_ms", d.bank_increment_ms, minimum=0, maximum=MAX_TIME_MS),
        "startup_time_ms": table.integer("startup_ms", d.startup_time_ms, minimum=1, maximum=MAX_TIME_MS),
        "cpu_time_ms": table.integer("cpu_ms", d.cpu_time_ms, minimum=0, maximum=MAX_TIME_MS),
    }
    try:
        return TimeControl(**values)
    except ValueError as exc:
        if not table.bad:
            table.problem(f"[time] {one_line(str(exc))}")
        return d


def _check_cpu_limit(top: _Table, control: TimeControl, bots: tuple[BotConfig, ...]) -> None:
    """A CPU-time limit needs every bot to be one the arena starts (the referee's rule, said here
    with the bot's entry)."""
    for number, bot in enumerate(bots, start=1):
        if control.cpu_time_ms and bot.spec and BotEndpoint.is_address(bot.spec):
            top.problem(f"[time] cpu_ms needs bots the arena starts: [[bots]] #{number} ({_show(bot.name)}) is an "
                        "address, and its CPU time cannot be measured")
    if control.cpu_time_ms and (problem := proc_metering_problem()):
        top.problem(f"[time] cpu_ms cannot be applied on this machine: {one_line(problem)}")


def _bots(top: _Table, folder: Path, players: int, check_programs: bool) -> tuple[BotConfig, ...]:
    entries = top.data.get("bots", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        top.fail("bots", f"must be an array of tables (one [[bots]] header per bot), not {_show(entries)}")
        return ()
    if len(entries) < players and top.all_good("players"):
        top.problem(f"a {players}-player tournament needs at least {players} [[bots]] entries, found {len(entries)}")
    bots: list[BotConfig] = []
    seen: dict[str, int] = {}
    for number, entry in enumerate(entries, start=1):
        name = entry.get("name")
        label = f"[[bots]] #{number} ({_show(name)})" if isinstance(name, str) else f"[[bots]] #{number}"
        table = _Table(top.file, label, entry, top.problems, kind="[[bots]]")
        bot = _bot(table, folder, check_programs)
        if table.bad.intersection(("name",)) or not bot.name:
            continue
        # Names also name log files and database rows: "Greedy" and "greedy" would collide on some disks.
        if (first := seen.setdefault(bot.name.lower(), number)) != number:
            top.problem(f"[[bots]] #{number} name {_show(bot.name)} is already used by [[bots]] #{first}")
        bots.append(bot)
    return tuple(bots)


def _bot(table: _Table, folder: Path, check_programs: bool) -> BotConfig:
    table.check_keys()
    name = table.string("name")
    if name and not BOT_NAME.fullmatch(name):
        table.fail("name", f"must be 1 to 64 of the characters A-Z a-z 0-9 _ . -, not {_show(name)}")
    has_command, has_address = "command" in table.data, "address" in table.data
    if "package" in table.data:
        return _package_bot(table, name, folder, check_programs)
    if has_command and has_address:
        table.problem(f"{table.label} has both command and address: keep one")
        return BotConfig(name=name, spec="", cwd=None, env={})
    if not has_command and not has_address:
        table.problem(f'{table.label} needs command = "..." (a program the arena starts) '
                      f'or address = "host:port" / "unix:/path" (a bot already running)')
        return BotConfig(name=name, spec="", cwd=None, env={})
    if has_address:
        for key in ("cwd", "env", "archive"):
            if key in table.data:
                table.fail(key, "only applies to a command, not to an address")
        key, spec = "address", table.string("address")
        if spec and not BotEndpoint.is_address(spec):
            table.fail(key, f'must be "host:port" or "unix:/path", not {_show(spec)} '
                            f'(use command = for a program the arena starts)')
        cwd, env = None, {}
    elif "archive" in table.data:
        return _archive_bot(table, name, folder, check_programs)
    else:
        key, spec = "command", table.string("command")
        cwd = _cwd(table, folder, check_programs)
        if cwd is None and BotEndpoint.is_inprocess(spec):  # its file is found beside the tournament file
            cwd = str(folder)
        env = _env(table)
    if table.all_good(key, "cwd") and (check_programs or has_address):
        try:
            BotEndpoint.parse(spec, cwd=cwd, env=env, trusted=True)
        except EndpointError as exc:
            table.fail(key, f"is not usable: {one_line(str(exc))}")
    return BotConfig(name=name, spec=spec, cwd=cwd, env=env)


def _package_bot(table: _Table, name: str, folder: Path, check: bool) -> BotConfig:
    """A [[bots]] entry that is a bot package (docs/packages.md): ``package`` from this file's
    folder, a folder with bot.toml or a .tar.gz; with ``check``, it is packed (or read) and
    checked as an upload would be, and its bot.toml read."""
    for key in ("command", "address", "cwd", "archive"):
        if key in table.data:
            table.fail(key, "does not go with package: a package's bot.toml says how it runs")
    env = _env(table)
    text = table.string("package")
    path = os.path.normpath(folder / Path(text).expanduser()) if text else ""
    sha256 = None
    if check and text:
        from referee.packages.load import manifest_of, package_archive  # packing: only where bots start

        try:
            content, checked = package_archive(path)
            sha256 = checked.sha256
            manifest_of(content)
        except (PackageError, OSError) as exc:
            table.fail("package", f"{_show(text)}: {one_line(str(exc))}")
    return BotConfig(name=name, spec=PACKAGE_SPEC, cwd=None, env=env, package=path or None, archive_sha256=sha256)


def _runtimes(table: Any, path: Path, problems: list[str], check: bool) -> dict[str, Any]:
    """The [runtimes] tables with relative folders made absolute; checked (folders exist, keys and
    names valid) where this machine starts bots (``check``)."""
    if table is None:
        return {}
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        problems.append(f"{path.name}: runtimes must be tables: [runtimes.NAME] with folders, path, env, offers")
        return {}
    absolute = {name: {key: ([os.path.normpath(path.parent / Path(v).expanduser()) if isinstance(v, str) else v
                              for v in value] if key in ("folders", "path") and isinstance(value, list) else value)
                       for key, value in spec.items()} for name, spec in table.items()}
    if check:
        try:
            runtimes_from_table(absolute, path.parent, where=f"{path.name}: [runtimes]")
        except UsageError as exc:
            problems += str(exc).splitlines()
    return absolute


def _archive_bot(table: _Table, name: str, folder: Path, check: bool) -> BotConfig:
    """A [[bots]] entry whose command runs from an archive: ``archive`` from this file's folder,
    ``cwd`` a folder inside the archive; with ``check``, the archive is read and checked, and so
    are ``cwd`` and the command's program against its members."""
    spec, env = table.string("command"), _env(table)
    text = table.string("archive")
    path = os.path.normpath(folder / Path(text).expanduser()) if text else ""
    cwd = None
    if "cwd" in table.data and (cwd_text := table.string("cwd")):
        try:
            cwd = archive_folder(cwd_text)
        except ArchiveError as exc:
            table.fail("cwd", f"{exc} (with archive, cwd is a folder inside it)")
    sha256 = None
    if check and text:
        try:
            checked = check_archive(read_archive_file(path))
        except ArchiveError as exc:
            table.fail("archive", f"{_show(text)} {exc}")
        else:
            sha256 = checked.sha256
            if cwd is not None and table.all_good("cwd") and not checked.is_folder(cwd):
                table.fail("cwd", f"{_show(cwd)} is not a folder in the archive {_show(text)}")
            elif spec and table.all_good("cwd") and (problem := command_problem(checked, spec, cwd)):
                table.fail("command", f"is not usable: {problem}")
    return BotConfig(name=name, spec=spec, cwd=cwd, env=env, archive=path or None, archive_sha256=sha256)


def _cwd(table: _Table, folder: Path, check: bool) -> str | None:
    if "cwd" not in table.data:
        return None
    text = table.string("cwd")
    if not text:
        return None
    resolved = os.path.normpath(folder / Path(text).expanduser())
    if check and not Path(resolved).is_dir():
        table.fail("cwd", f"{_show(text)} is not a directory (looked for {shown(resolved)})")
        return None
    return resolved


def _env(table: _Table) -> dict[str, str]:
    value = table.data.get("env", {})
    if not isinstance(value, dict):
        table.fail("env", f'must be a table such as {{ NAME = "value" }}, not {_show(value)}')
        return {}
    good = {}
    for name, setting in value.items():
        if not name or "=" in name or "\0" in name:
            table.fail("env", f"has a bad variable name {_show(name)}")
        elif not isinstance(setting, str) or "\0" in setting:
            table.fail(f"env.{shown(name)}", f'must be a string, not {_show(setting)} (write {shown(name)} = "...")')
        else:
            good[name] = setting
    return good


def _ladder(table: _Table, players: int) -> LadderConfig:
    table.check_keys()
    has_interval, has_cron = "interval" in table.data, "cron" in table.data
    if has_interval and has_cron:
        table.problem("[ladder] has both interval and cron: keep one")
    elif not has_interval and not has_cron:
        table.problem('[ladder] needs interval = "10m" or cron = "*/10 * * * *"')
    interval_s, cron = None, None
    if has_interval and not has_cron:
        try:
            interval_s = parse_duration(table.data["interval"])
        except ConfigError as exc:
            table.fail("interval", f"is not valid: {exc}")
    elif has_cron and not has_interval:
        cron = table.string("cron").strip()
        try:
            if cron:
                CronTrigger.from_crontab(cron, timezone=timezone.utc)  # the zone does not affect validity
        except ValueError as exc:
            table.fail("cron", f"{_show(cron)} is not a valid 5-field crontab expression: {one_line(str(exc))}")
    return LadderConfig(
        interval_s=interval_s, cron=cron,
        pairings_per_bot=table.integer("pairings_per_bot", 2, minimum=1),
        sets_per_pairing=table.integer("sets_per_pairing", 1, minimum=1),
        bots_per_round=_bots_per_round(table, players),
        new_bot_games=table.integer("new_bot_games", LadderConfig.new_bot_games, minimum=0),
    )


def _bots_per_round(table: _Table, players: int) -> int:
    """0 (every active bot in every round) or at least a game's seats."""
    count = table.integer("bots_per_round", 0, minimum=0)
    if 0 < count < players:
        table.fail("bots_per_round", f"must be 0 (every active bot) or at least players ({players}), not {count}")
        return 0
    return count


def _standings(table: _Table) -> StandingsSettings:
    """The [standings] table: when a bot is marked provisional."""
    table.check_keys()
    d = StandingsSettings()
    return StandingsSettings(
        provisional_games=table.integer("provisional_games", d.provisional_games, minimum=0),
        provisional_sigma=table.number("provisional_sigma", d.provisional_sigma, above=0),
    )


def _challenges(table: _Table) -> ChallengeSettings:
    """The [challenges] table: users' quotas, games per round, the sequential test's cap and bounds."""
    table.check_keys()
    d = ChallengeSettings()
    unit = table.choice("unit", CHALLENGE_UNITS, d.unit)
    lower, upper = DEFAULT_CHALLENGE_BOUNDS[unit]
    low = table.number("lower", lower, above=-math.inf)
    high = table.number("upper", upper, above=-math.inf)
    if not low < high:
        table.problem(f"[challenges] lower ({low:g}) must be below upper ({high:g})")
    alpha = table.number("alpha", d.alpha, above=0)
    beta = table.number("beta", d.beta, above=0)
    if not (alpha < 1 and beta < 1 and alpha + beta < 1):
        table.problem(f"[challenges] alpha and beta must be below 1 and add up to less than 1, not {alpha:g}, {beta:g}")
    return ChallengeSettings(
        in_flight=table.integer("in_flight", d.in_flight, minimum=0),
        games_per_day=table.integer("games_per_day", d.games_per_day, minimum=0),
        games_per_round=table.integer("games_per_round", d.games_per_round, minimum=2),
        max_pairs=table.integer("max_pairs", d.max_pairs, minimum=1, maximum=10_000),
        unit=unit, lower=low, upper=high, alpha=alpha, beta=beta)


def _sandbox(table: _Table, folder: Path) -> SandboxSettings:
    """The [sandbox] table (referee/sandbox/settings.py checks the values); a relative path
    (read_only, private, build_sources) is taken from the tournament file's folder."""
    table.check_keys()
    values = {key: value for key, value in table.data.items() if key in SandboxSettings.keys()}
    for key in PATH_SETTINGS:
        if isinstance(values.get(key), list):
            values[key] = [os.path.normpath(folder / Path(p).expanduser()) if isinstance(p, str) else p
                           for p in values[key]]
    try:
        return SandboxSettings.from_table(values)
    except SandboxSettingsError as exc:
        for line in exc.errors:
            table.problem(one_line(line))
        return SandboxSettings()


def _show(value: object) -> str:
    """A value as it would be written in TOML, or what kind of value it is."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return quoted(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, (date, time)):
        return f"the date/time {value.isoformat()}"
    return type(value).__name__
