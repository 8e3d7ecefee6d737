"""What a match is: the bots, the rules and clock of its games (GameSettings), the failure policy,
and one game's setup (GameSetup), which is serialisable so a queue job can carry it."""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from casino.v1 import bot_pb2

from ..bots.cpu import proc_metering_problem
from ..bots.endpoint import BotEndpoint
from ..clock import TimeControl
from ..rules import RuleOptions
from ..wire.convert import PROTOCOL_VERSION, options_to_pb

SETUP_FORMAT = "royal-casino-game-setup"
SETUP_VERSION = 2  # 2: auto_forced (a version-1 setup asked for every move)
MAX_GAMES = 1_000_000  # games in one match (the Handshake says how many, as a uint32)
MAX_SEED = 2**64 - 1  # game seeds travel as uint64 (GameStarted.seed)



def cpu_limit_problem(control: TimeControl, bots: Sequence[BotEndpoint]) -> str | None:
    """Why ``control``'s CPU-time limit cannot be applied to these bots, in one line, or None.

    Only a bot the referee starts has a process whose CPU time it can read; a bot at an address
    would be judged on the wall clock alone, so such a match is refused rather than run unfairly.
    """
    if not control.cpu_time_ms:
        return None
    for i, bot in enumerate(bots):
        if not bot.is_process and not bot.inprocess:  # an in-process bot's calls' thread CPU is measured
            return (f"a CPU-time limit needs bots the referee starts: bot {i + 1} ({bot.spec!r}) is an address, "
                    "and its CPU time cannot be measured")
    problem = proc_metering_problem()
    return f"a CPU-time limit cannot be applied on this machine: {problem}" if problem else None


class FailurePolicy(enum.Enum):
    """What a failure costs (docs/protocol.md, "Failures")."""

    FORFEIT = "forfeit"
    RANDOM_MOVE = "random_move"


@dataclass(frozen=True)
class GameSettings:
    """How every game of a match, a tournament or a comparison is played: the rules, the clock and
    what a failure costs."""

    options: RuleOptions = field(default_factory=RuleOptions)
    time_control: TimeControl = field(default_factory=TimeControl)
    policy: FailurePolicy = FailurePolicy.FORFEIT
    max_strikes: int = 3
    auto_forced: bool = True  # the referee plays a seat's only legal move itself (docs/protocol.md)


@dataclass(frozen=True)
class MatchSpec:
    """Everything that defines a match; ``bots`` are in seat order for the first game."""

    bots: Sequence[BotEndpoint]
    options: RuleOptions = field(default_factory=RuleOptions)
    games: int = 1
    seed: int = 1
    decks: Sequence[Sequence[int]] = ()
    time_control: TimeControl = field(default_factory=TimeControl)
    policy: FailurePolicy = FailurePolicy.FORFEIT
    max_strikes: int = 3
    rotate_seats: bool = True
    auto_forced: bool = True
    records_dir: Path | None = None
    logs_dir: Path | None = None
    match_id: str = ""

    def __post_init__(self) -> None:
        if len(self.bots) != self.options.players:
            raise ValueError(f"{self.options.players} players need {self.options.players} bots, got {len(self.bots)}")
        if not 1 <= self.games <= MAX_GAMES:
            raise ValueError(f"games must be 1 to {MAX_GAMES}, not {self.games}")
        if not 0 <= self.seed <= MAX_SEED - (self.games - 1):  # every game's seed, seed + k - 1, must fit
            raise ValueError(
                f"seed must be 0 to {MAX_SEED - (self.games - 1)} for {self.games} game(s), not {self.seed}")
        if self.max_strikes < 0:
            raise ValueError(f"max_strikes must be 0 or more, not {self.max_strikes}")
        if problem := cpu_limit_problem(self.time_control, self.bots):
            raise ValueError(problem)

    def seat_bots(self, game_number: int) -> list[int]:
        """Bot index at each seat of game ``game_number`` (1-based): rotated one seat per game."""
        n = self.options.players
        shift = (game_number - 1) % n if self.rotate_seats else 0
        return [(seat + shift) % n for seat in range(n)]

    def game_seed(self, game_number: int) -> int:
        return self.seed + game_number - 1

    @property
    def settings(self) -> GameSettings:
        return GameSettings(self.options, self.time_control, self.policy, self.max_strikes, self.auto_forced)

    def seeded_match_id(self) -> str:
        """A match id that follows the seed: 12 hex digits of a hash of everything that decides the
        match's games (the bots as given, the seed, decks, rules, clocks, policy, seating), but not
        how many there are (game k is the same game in a longer match, so ``--games k`` replays it).
        The same match run again so has the same game ids, and a bot that seeds itself from its
        game id plays the same games again; matches that differ in any of these get other ids, so
        their records do not overwrite each other in one folder. ``referee match`` and ``check``
        use it; the Referee service, whose clients may ask for the same match at once, does not."""
        bots = [{"address": b.address, "command": list(b.command), "cwd": b.cwd, "env": dict(b.env),
                 "archive": b.archive} for b in self.bots]
        defining = {"bots": bots, "seed": self.seed, "decks": [list(d) for d in self.decks],
                    "options": self.options.to_dict(), "time_control": self.time_control.to_dict(),
                    "policy": self.policy.value, "max_strikes": self.max_strikes,
                    "rotate_seats": self.rotate_seats, "auto_forced": self.auto_forced}
        text = json.dumps(defining, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def game(self, match_id: str, game_number: int) -> GameSetup:
        """The setup of game ``game_number`` (1-based) of this match."""
        return GameSetup.build(self.settings, match_id=match_id, game_number=game_number,
                               seat_bots=self.seat_bots(game_number), seed=self.game_seed(game_number),
                               decks=self.decks)


@dataclass(frozen=True)
class GameSetup:
    """One game to play: its identity, deck seed and the rules, clocks and policy it is played by."""

    game_id: str
    game_number: int
    seat_bots: Sequence[int]  # which bot (the caller's numbering) sits at each seat, for records
    seed: int
    options: RuleOptions = field(default_factory=RuleOptions)
    decks: Sequence[Sequence[int]] = ()
    time_control: TimeControl = field(default_factory=TimeControl)
    policy: FailurePolicy = FailurePolicy.FORFEIT
    max_strikes: int = 3
    match_id: str = ""
    auto_forced: bool = True

    @classmethod
    def build(cls, settings: GameSettings, *, match_id: str, game_number: int, seat_bots: Sequence[int], seed: int,
              decks: Sequence[Sequence[int]] = (), game_id: str | None = None) -> "GameSetup":
        """The one place a GameSetup is made (a match's, a tournament's, a comparison's game);
        ``game_id`` defaults to ``<match_id>-g<game_number>``."""
        return cls(
            game_id=game_id or f"{match_id}-g{game_number}", game_number=game_number, seat_bots=tuple(seat_bots),
            seed=seed, options=settings.options, decks=tuple(tuple(d) for d in decks),
            time_control=settings.time_control, policy=settings.policy, max_strikes=settings.max_strikes,
            match_id=match_id, auto_forced=settings.auto_forced,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (for a job queue to carry a game); ``from_dict`` reads it back."""
        return {
            "format": SETUP_FORMAT, "version": SETUP_VERSION, "game_id": self.game_id,
            "game_number": self.game_number, "seat_bots": list(self.seat_bots), "seed": self.seed,
            "options": self.options.to_dict(), "decks": [list(d) for d in self.decks],
            "time_control": self.time_control.to_dict(), "policy": self.policy.value,
            "max_strikes": self.max_strikes, "match_id": self.match_id, "auto_forced": self.auto_forced,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GameSetup":
        """Inverse of ``to_dict``; ValueError (RulesError for bad rule options) on anything else."""
        if not isinstance(data, dict) or data.get("format") != SETUP_FORMAT:
            raise ValueError(f"not a {SETUP_FORMAT} object")
        if data.get("version") not in (1, SETUP_VERSION):
            raise ValueError(f"{SETUP_FORMAT} version {data.get('version')!r}; this referee reads 1 and {SETUP_VERSION}")
        try:
            auto_forced = data["auto_forced"] if data["version"] == SETUP_VERSION else False
            if not isinstance(auto_forced, bool):
                raise TypeError(f"auto_forced must be true or false, not {auto_forced!r}")
            settings = GameSettings(RuleOptions.from_dict(data["options"]), TimeControl(**data["time_control"]),
                                    FailurePolicy(data["policy"]), int(data["max_strikes"]), auto_forced)
            return cls.build(settings, match_id=str(data["match_id"]), game_number=int(data["game_number"]),
                             seat_bots=[int(b) for b in data["seat_bots"]], seed=int(data["seed"]),
                             decks=[[int(c) for c in d] for d in data["decks"]], game_id=str(data["game_id"]))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed {SETUP_FORMAT}: {exc!r}") from None

    def time_bound_s(self) -> float:
        """A bound on this game's wall time (one that takes longer is hung: the referee's fault,
        never a bot's): every seat's start-up and bank, then the rules' longest game
        (``RuleOptions.max_plays``) with every play at its full move time, grace and increment
        and 1 s of transport, and a minute to spare; it only has to be finite."""
        tc = self.time_control
        per_play_ms = tc.move_time_ms + tc.grace_ms + tc.bank_increment_ms + 1000
        seats_ms = self.options.players * (tc.startup_time_ms + tc.bank_initial_ms)
        return 60.0 + (seats_ms + self.options.max_plays * per_play_ms) / 1000

    def handshake(self, games: int = 0) -> bot_pb2.Handshake:
        """The handshake a bot stream for such games opens with (``games`` 0: not known ahead)."""
        return bot_pb2.Handshake(
            protocol_version=PROTOCOL_VERSION,
            match_id=self.match_id,
            options=options_to_pb(self.options),
            time_control=self.time_control.to_pb(),
            games=games,
            auto_forced=self.auto_forced,
        )


