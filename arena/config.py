"""The tournament file (TOML, docs/tournaments.md): load it, check every key, and hand back plain values.

Every problem raises ConfigError with one line naming the file and the key, so the CLI can print
it as is. The referee's own checks (TimeControl, RuleOptions, BotEndpoint.parse) run too; their
errors come back as ConfigError with the key they concern.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
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

from referee.clock import MAX_TIME_MS, TimeControl
from referee.endpoints import BotEndpoint
from referee.errors import EndpointError
from referee.match import FailurePolicy
from referee.rules import Condition, InvalidOptionError, RuleOptions

SEED_MAX = 2**63 - 1  # fits a signed 64-bit database column and the protocol's uint64
BOT_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
ON_TWENTY_CHOICES = (Condition.LITTLE_CASINO.value, Condition.MOST_SPADES.value)
POLICY_CHOICES = tuple(p.value for p in FailurePolicy)

# The keys each part of the file may hold; "" is the top level.
TOP_KEYS = ("name", "players", "games_per_pairing", "duplicate", "concurrency", "seed", "database",
            "rules", "time", "failures", "bots", "ladder")
SECTION_KEYS = {
    "": TOP_KEYS,
    "[rules]": ("on_twenty", "max_deals"),
    "[time]": ("move_ms", "grace_ms", "bank_ms", "increment_ms", "startup_ms"),
    "[failures]": ("policy", "max_strikes"),
    "[[bots]]": ("name", "command", "address", "cwd", "env"),
    "[ladder]": ("interval", "cron", "pairings_per_bot", "sets_per_pairing"),
}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_MISSING = object()


class ConfigError(ValueError):
    """A bad tournament file; str(exc) is one clear line (the CLI prints it and exits 2)."""


@dataclass(frozen=True)
class BotConfig:
    """One [[bots]] entry: a unique name and where the bot is (a command to start or an address)."""

    name: str
    spec: str
    cwd: str | None
    env: dict[str, str]

    def endpoint(self) -> BotEndpoint:
        """The referee's endpoint for this bot (checks again that a command's program exists)."""
        return BotEndpoint.parse(self.spec, cwd=self.cwd, env=self.env)


@dataclass(frozen=True)
class LadderConfig:
    """When `arena serve` plays a ladder round (every interval_s seconds or on a cron schedule) and how big it is."""

    interval_s: float | None
    cron: str | None
    pairings_per_bot: int = 2
    sets_per_pairing: int = 1


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

    def settings_fingerprint(self) -> str:
        """sha256 hex of the settings that decide the schedule and the games played.

        Not concurrency, database, ladder or how bots are reached: a bot's command may move
        without invalidating the games it has played.
        """
        settings = {
            "players": self.players,
            "bots": [bot.name for bot in self.bots],
            "games_per_pairing": self.games_per_pairing,
            "duplicate": self.duplicate,
            "rules": self.rules.to_dict(),
            "time_control": dataclasses.asdict(self.time_control),
            "policy": self.policy.value,
            "max_strikes": self.max_strikes,
            "seed": self.seed,
        }
        canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def load_config(path: str | Path) -> TournamentConfig:
    """Read and check the tournament file at ``path``; ConfigError on any problem."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the tournament file: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")  # TOML is UTF-8; tolerate the byte-order mark some editors write
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path.name}: not UTF-8 text (byte {exc.start})") from None
    return parse_config(text, path)


def parse_config(text: str, path: Path) -> TournamentConfig:
    """Check a tournament file given as text; ``path`` names it and gives the folder for relative paths."""
    path = Path(os.path.abspath(Path(path).expanduser()))
    file = path.name
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: invalid TOML: {exc}") from None
    top = _Table(file, "", data)
    top.check_keys()

    name = top.string("name")
    players = top.integer("players", 2, minimum=2, maximum=4)
    duplicate = top.boolean("duplicate", True)
    # One duplicate set (a game per seat rotation) by default; plain 2 games without duplicates.
    games_per_pairing = top.integer("games_per_pairing", players if duplicate else 2, minimum=1)
    if duplicate and games_per_pairing % players:
        raise top.error("games_per_pairing", _duplicate_hint(games_per_pairing, players))
    concurrency = top.integer("concurrency", os.cpu_count() or 1, minimum=1)
    seed = top.integer("seed", 1, minimum=0, maximum=SEED_MAX)
    database = _database(top, path)

    rules = _rules(top.table("rules"), players)
    time_control = _time_control(top.table("time"))
    failures = top.table("failures")
    failures.check_keys()
    policy = FailurePolicy(failures.choice("policy", POLICY_CHOICES, FailurePolicy.FORFEIT.value))
    max_strikes = failures.integer("max_strikes", 3, minimum=0)

    bots = _bots(top, path.parent, players)
    ladder = _ladder(top.table("ladder")) if "ladder" in data else None
    return TournamentConfig(
        path=path, name=name, players=players, bots=bots, games_per_pairing=games_per_pairing,
        duplicate=duplicate, rules=rules, time_control=time_control, policy=policy, max_strikes=max_strikes,
        concurrency=concurrency, seed=seed, database=database, ladder=ladder,
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
    """One table of the file being read: typed getters whose errors name the file and the key."""

    def __init__(self, file: str, label: str, data: dict[str, Any], kind: str | None = None) -> None:
        self.file = file
        self.label = label  # "" for the top level, "[time]", '[[bots]] #2 ("greedy")', ...
        self.data = data
        self.kind = label if kind is None else kind  # which entry of SECTION_KEYS applies

    def error(self, key: str, message: str) -> ConfigError:
        where = f"{self.label} {key}" if self.label else key
        return ConfigError(f"{self.file}: {where} {message}")

    def check_keys(self) -> None:
        """Refuse keys this table does not know, with a hint when the key is a typo or misplaced."""
        known = SECTION_KEYS[self.kind]
        for key in self.data:
            if key in known:
                continue
            where = f" in {self.label}" if self.label else ""
            raise ConfigError(f'{self.file}: unknown key {_show(key)}{where}{_key_hint(key, self.kind)}')

    def table(self, key: str) -> _Table:
        """A sub-table such as [time]; empty when absent."""
        value = self.data.get(key, {})
        if not isinstance(value, dict):
            raise self.error(key, f"must be a table ([{key}] section), not {_show(value)}")
        return _Table(self.file, f"[{key}]", value)

    def integer(self, key: str, default: int, *, minimum: int, maximum: int | None = None) -> int:
        value = self.data.get(key, default)
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok and value >= minimum and (maximum is None or value <= maximum):
            return value
        wanted = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        raise self.error(key, f"must be a whole number {wanted}, not {_show(value)}")

    def boolean(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise self.error(key, f"must be true or false, not {_show(value)}")
        return value

    def string(self, key: str, default: Any = _MISSING) -> str:
        """A non-empty string; required unless a default is given."""
        value = self.data.get(key, default)
        if value is _MISSING:
            raise self.error(key, "is required")
        if not isinstance(value, str) or not value.strip():
            raise self.error(key, f"must be a non-empty string, not {_show(value)}")
        return value

    def choice(self, key: str, choices: tuple[str, ...], default: str) -> str:
        value = self.data.get(key, default)
        if isinstance(value, str) and value in choices:
            return value
        names = " or ".join(f'"{c}"' for c in choices)
        close = difflib.get_close_matches(value, choices, n=1) if isinstance(value, str) else []
        hint = f' (did you mean "{close[0]}"?)' if close else ""
        raise self.error(key, f"must be {names}, not {_show(value)}{hint}")


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
    text = top.string("database", f"sqlite:///{path.with_suffix('.db')}")
    try:
        url = make_url(text)
        url.get_dialect()  # an unknown dialect ("postgres://") fails here, without connecting
    except (ArgumentError, NoSuchModuleError, ValueError) as exc:
        raise top.error("database", f"is not a database URL SQLAlchemy knows: {_show(text)} ({exc})") from None
    db = url.database
    if url.get_backend_name() == "sqlite" and db and db != ":memory:" and not db.startswith("file:"):
        if not Path(db).is_absolute():
            return url.set(database=os.path.normpath(path.parent / db)).render_as_string(hide_password=False)
    return text


def _rules(table: _Table, players: int) -> RuleOptions:
    table.check_keys()
    on_twenty = table.choice("on_twenty", ON_TWENTY_CHOICES, Condition.LITTLE_CASINO.value)
    max_deals = table.integer("max_deals", 30, minimum=1)
    try:
        return RuleOptions(players=players, partnerships=True, on_twenty=Condition(on_twenty), max_deals=max_deals)
    except InvalidOptionError as exc:
        raise ConfigError(f"{table.file}: [rules] {exc}") from None


def _time_control(table: _Table) -> TimeControl:
    table.check_keys()
    d = TimeControl()
    values = {
        "move_time_ms": table.integer("move_ms", d.move_time_ms, minimum=1, maximum=MAX_TIME_MS),
        "grace_ms": table.integer("grace_ms", d.grace_ms, minimum=0, maximum=MAX_TIME_MS),
        "bank_initial_ms": table.integer("bank_ms", d.bank_initial_ms, minimum=0, maximum=MAX_TIME_MS),
        "bank_increment_ms": table.integer("increment_ms", d.bank_increment_ms, minimum=0, maximum=MAX_TIME_MS),
        "startup_time_ms": table.integer("startup_ms", d.startup_time_ms, minimum=1, maximum=MAX_TIME_MS),
    }
    try:
        return TimeControl(**values)
    except ValueError as exc:
        raise ConfigError(f"{table.file}: [time] {exc}") from None


def _bots(top: _Table, folder: Path, players: int) -> tuple[BotConfig, ...]:
    entries = top.data.get("bots", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise top.error("bots", f"must be an array of tables (one [[bots]] header per bot), not {_show(entries)}")
    if len(entries) < players:
        raise ConfigError(f"{top.file}: a {players}-player tournament needs at least {players} [[bots]] entries, "
                          f"found {len(entries)}")
    bots: list[BotConfig] = []
    seen: dict[str, int] = {}
    for number, entry in enumerate(entries, start=1):
        name = entry.get("name")
        label = f'[[bots]] #{number} ("{name}")' if isinstance(name, str) else f"[[bots]] #{number}"
        bot = _bot(_Table(top.file, label, entry, kind="[[bots]]"), folder)
        # Names also name log files and database rows: "Greedy" and "greedy" would collide on some disks.
        if (first := seen.setdefault(bot.name.lower(), number)) != number:
            raise ConfigError(f'{top.file}: [[bots]] #{number} name "{bot.name}" is already used by [[bots]] #{first}')
        bots.append(bot)
    return tuple(bots)


def _bot(table: _Table, folder: Path) -> BotConfig:
    table.check_keys()
    name = table.string("name")
    if not BOT_NAME.fullmatch(name):
        raise table.error("name", f"must be 1 to 64 of the characters A-Z a-z 0-9 _ . -, not {_show(name)}")
    has_command, has_address = "command" in table.data, "address" in table.data
    if has_command and has_address:
        raise ConfigError(f"{table.file}: {table.label} has both command and address: keep one")
    if not has_command and not has_address:
        raise ConfigError(f'{table.file}: {table.label} needs command = "..." (a program the arena starts) '
                          f'or address = "host:port" / "unix:/path" (a bot already running)')
    if has_address:
        for key in ("cwd", "env"):
            if key in table.data:
                raise table.error(key, "only applies to a command, not to an address")
        key, spec = "address", table.string("address")
        if not BotEndpoint.is_address(spec):
            raise table.error(key, f'must be "host:port" or "unix:/path", not {_show(spec)} '
                                   f'(use command = for a program the arena starts)')
        cwd, env = None, {}
    else:
        key, spec = "command", table.string("command")
        cwd = _cwd(table, folder)
        env = _env(table)
    try:
        BotEndpoint.parse(spec, cwd=cwd, env=env)
    except EndpointError as exc:
        raise table.error(key, f"is not usable: {exc}") from None
    return BotConfig(name=name, spec=spec, cwd=cwd, env=env)


def _cwd(table: _Table, folder: Path) -> str | None:
    if "cwd" not in table.data:
        return None
    text = table.string("cwd")
    resolved = os.path.normpath(folder / Path(text).expanduser())
    if not Path(resolved).is_dir():
        raise table.error("cwd", f"{_show(text)} is not a directory (looked for {resolved})")
    return resolved


def _env(table: _Table) -> dict[str, str]:
    value = table.data.get("env", {})
    if not isinstance(value, dict):
        raise table.error("env", f'must be a table such as {{ NAME = "value" }}, not {_show(value)}')
    for name, setting in value.items():
        if not name or "=" in name or "\0" in name:
            raise table.error("env", f"has a bad variable name {_show(name)}")
        if not isinstance(setting, str) or "\0" in setting:
            raise table.error(f"env.{name}", f'must be a string, not {_show(setting)} (write {name} = "...")')
    return dict(value)


def _ladder(table: _Table) -> LadderConfig:
    table.check_keys()
    has_interval, has_cron = "interval" in table.data, "cron" in table.data
    if has_interval and has_cron:
        raise ConfigError(f"{table.file}: [ladder] has both interval and cron: keep one")
    if not has_interval and not has_cron:
        raise ConfigError(f'{table.file}: [ladder] needs interval = "10m" or cron = "*/10 * * * *"')
    interval_s, cron = None, None
    if has_interval:
        try:
            interval_s = parse_duration(table.data["interval"])
        except ConfigError as exc:
            raise table.error("interval", f"is not valid: {exc}") from None
    else:
        cron = table.string("cron").strip()
        try:
            CronTrigger.from_crontab(cron, timezone=timezone.utc)  # the zone does not affect validity
        except ValueError as exc:
            raise table.error("cron", f"{_show(cron)} is not a valid 5-field crontab expression: {exc}") from None
    return LadderConfig(
        interval_s=interval_s, cron=cron,
        pairings_per_bot=table.integer("pairings_per_bot", 2, minimum=1),
        sets_per_pairing=table.integer("sets_per_pairing", 1, minimum=1),
    )


def _show(value: object) -> str:
    """A value as it would be written in TOML, or what kind of value it is."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, (date, time)):
        return f"the date/time {value.isoformat()}"
    return type(value).__name__
