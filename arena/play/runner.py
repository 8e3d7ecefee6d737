"""Running a tournament: schedule it once in the database, then play its pending games through
an executor, ``concurrency`` at a time, storing each result and rating the games in number order.

Restarting after a crash is the same call: games left running are replayed from the start, and
finished ones are never played or stored again. A game the platform cannot play (a PlatformFault:
a full disk, no descriptors) stops the run once the running games are done (claimed.py): the
next run, once the platform is fixed, resumes.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from referee.errors import PlatformFault
from referee.match.report import GameReport
from referee.match.spec import GameSetup
from referee.metrics import BOTS
from referee.packages.load import Packages

from ..config import StandingsSettings, TournamentConfig
from ..cores import available_cores, oversubscription_warning  # noqa: F401  (arena.cli.live imports them from here)
from ..errors import quoted
from ..rating.standings import Standings, standings_of
from ..schedule.pairings import round_robin
from ..store.store import BotSpec, GameTask, Scheduled, StorageError, Store, TournamentExistsError
from .archives import ArchiveCache, bot_endpoint, store_config_archives
from .claimed import MAX_ATTEMPTS, ClaimedGames, Failed, Faulted, NotOurs, Played  # noqa: F401  (MAX_ATTEMPTS: for callers)
from .executor import GameExecutor, SeatBot
from .live import LiveWriter
from .rate import apply_ratings
from .sandbox import arena_packages, refuse_hidden_views

log = logging.getLogger(__name__)
T = TypeVar("T")
RATING_INTERVAL_S = 0.5  # ratings are brought up to date at most this often while games finish


def current_standings(store: Store, tid: int, settings: StandingsSettings | None = None) -> Standings:
    """The standings as stored now: the database's sums over every finished game, in rating order,
    provisional bots marked as ``settings`` say (None: as stored with the tournament, else the defaults)."""
    if settings is None:
        settings = StandingsSettings.from_stored(store.tournament(tid).settings)
    names = [b.name for b in store.bots(tid)]
    return standings_of(names, store.standings_tally(tid), store.ratings(tid), settings)

def seat_bots(store: Store, tid: int, active_only: bool = False, archives: ArchiveCache | None = None,
              packages: Packages | None = None) -> dict[int, SeatBot]:
    """The tournament's bots as games need them on this machine, by position (only the active
    ones: a ladder's pool); a bot with an archive runs from its copy in ``archives`` (unpacked there
    on first use; default: this machine's cache), a bot package as ``packages`` builds it. Call it
    from a thread that runs no event loop (a build runs in one of its own)."""
    cache = archives or ArchiveCache()
    return {b.position: SeatBot(b.name, bot_endpoint(store, b, cache, packages))
            for b in store.bots(tid, active_only=active_only)}


def logs_dir_for(config: TournamentConfig) -> Path:
    """Bot logs of a tournament: next to its file, under ``<stem>-logs/``."""
    return config.path.with_name(f"{config.path.stem}-logs")



def config_settings(config: TournamentConfig) -> dict[str, Any]:
    """What the database keeps of a tournament's settings (for people, for later rounds, and to
    say what changed when a file no longer matches): everything the fingerprint covers."""
    return {
        "bots": [bot.name for bot in config.bots],
        "players": config.players,
        "games_per_pairing": config.games_per_pairing,
        "duplicate": config.duplicate,
        "seed": config.seed,
        "rules": config.rules.to_dict(),
        "time_control": config.time_control.to_dict(),
        "policy": config.policy.value,
        "max_strikes": config.max_strikes,
        **({} if config.auto_forced else {"auto_forced": False}),  # as the fingerprint: only when off
    }


STANDINGS_KEY = "standings"  # where the stored settings keep [standings]
DISPLAY_KEY = "display"  # where they keep how pages show the tournament (public_notes)
CHALLENGES_KEY = "challenges"  # where they keep [challenges] (the web app's quotas read it)
NEW_BOTS_KEY = "new_bot_games"  # a ladder's [ladder] new_bot_games, for the web's queue page
SHOWN_KEYS = (STANDINGS_KEY, DISPLAY_KEY, CHALLENGES_KEY, NEW_BOTS_KEY)  # not fingerprinted, not played: updated on each open


def shown_settings(config: TournamentConfig) -> dict[str, Any]:
    """How the tournament is shown, kept with its settings so that a database served without its
    file (`arena web --db`) shows it as the file says; changing them changes no game."""
    ladder = {NEW_BOTS_KEY: config.ladder.new_bot_games} if config.ladder is not None else {}
    return {STANDINGS_KEY: config.standings.to_stored(), DISPLAY_KEY: {"public_notes": config.public_notes},
            CHALLENGES_KEY: config.challenges.to_stored(), **ladder}


def stored_settings(config: TournamentConfig) -> dict[str, Any]:
    """What a new tournament's row keeps: config_settings and shown_settings."""
    return {**config_settings(config), **shown_settings(config)}


# config_settings' keys (nested ones dotted) as a tournament file writes them, in the file's order
FILE_KEYS = {
    "bots": "[[bots]] names", "players": "players", "games_per_pairing": "games_per_pairing",
    "duplicate": "duplicate", "seed": "seed", "rules.on_twenty": "[rules] on_twenty",
    "rules.max_deals": "[rules] max_deals", "time_control.move_time_ms": "[time] move_ms",
    "time_control.grace_ms": "[time] grace_ms", "time_control.bank_initial_ms": "[time] bank_ms",
    "time_control.bank_increment_ms": "[time] increment_ms", "time_control.startup_time_ms": "[time] startup_ms",
    "time_control.cpu_time_ms": "[time] cpu_ms",
    "policy": "[failures] policy", "max_strikes": "[failures] max_strikes", "auto_forced": "auto_forced",
}
DERIVED_KEYS = {"rules.players", "rules.partnerships"}  # follow from players: reported there


def settings_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What differs between two config_settings, for people: ``"[time] move_ms 1000 -> 500"``,
    ``'[[bots]] names: "c" added, "b" removed'``; in the file's order, one entry per setting."""
    old, new = _flatten(before), _flatten(after)
    order = {key: i for i, key in enumerate(FILE_KEYS)}
    changes = []
    for key in sorted(set(old) | set(new), key=lambda k: (order.get(k, len(order)), k)):
        if key in DERIVED_KEYS or old.get(key, _UNSET) == new.get(key, _UNSET):
            continue
        label = FILE_KEYS.get(key, key)
        if key == "bots" and isinstance(old.get(key), list) and isinstance(new.get(key), list):
            changes.append(f"{label}: {_bots_change(old[key], new[key])}")
        else:
            changes.append(f"{label} {_setting_text(old.get(key, _UNSET))} -> {_setting_text(new.get(key, _UNSET))}")
    return changes


_UNSET = object()


def _flatten(settings: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _bots_change(old: list[str], new: list[str]) -> str:
    added = [quoted(n) for n in new if n not in old]
    removed = [quoted(n) for n in old if n not in new]
    parts = [f"{', '.join(added)} added"] * bool(added) + [f"{', '.join(removed)} removed"] * bool(removed)
    return " and ".join(parts) if parts else f"order {_setting_text(old)} -> {_setting_text(new)}"


def _setting_text(value: Any) -> str:
    """A stored setting as the file writes it."""
    if value is _UNSET:
        return "(not stored)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return quoted(value)
    if isinstance(value, list):
        return "[" + ", ".join(_setting_text(v) for v in value) + "]"
    return repr(value)


def _bot_specs(config: TournamentConfig, archives: dict[str, str]) -> list[BotSpec]:
    """How the file's bots start; ``archives``: the stored archive hash of each bot that has one."""
    return [BotSpec(b.name, b.spec, b.cwd, dict(b.env), archives.get(b.name)) for b in config.bots]


def open_tournament(store: Store, config: TournamentConfig, schedule_games: bool = True,
                    then: Scheduled | None = None) -> int:
    """The tournament's id, creating and scheduling it on first use (``then`` runs in the
    scheduling transaction: the queue defers the games' jobs there). A tournament of the same
    name scheduled with other settings is an error: its games would not be comparable. The
    bots' archives are stored first (once per content), and each bot row carries its hash."""
    archives = store_config_archives(store, config)
    tid = store.tournament_id(config.name)
    if tid is None:
        games = (round_robin(len(config.bots), config.players, config.games_per_pairing, config.duplicate, config.seed)
                 if schedule_games else [])
        try:
            return store.create_tournament(config.name, config.settings_fingerprint(), stored_settings(config),
                                           _bot_specs(config, archives), games, then)
        except TournamentExistsError:  # another process created it at the same moment: open theirs
            tid = store.tournament_id(config.name)
            assert tid is not None
    stored = store.tournament(tid)
    if stored.fingerprint != config.settings_fingerprint():
        # Tournaments stored before the settings kept their bots: the first bots of the pool are the file's.
        before = {k: v for k, v in stored.settings.items() if k not in SHOWN_KEYS}  # shown, not played
        before.setdefault("bots", [b.name for b in store.bots(tid)][:len(config.bots)])
        changes = settings_changes(before, config_settings(config)) or ["bots, games, rules, time or seed"]
        raise StorageError(
            f"tournament {config.name!r} in {store.url_for_people} was scheduled with other settings "
            f"({'; '.join(changes)}); change them back, or give it a new name or use another database"
        )
    store.update_bot_specs(tid, _bot_specs(config, archives))  # a changed archive, like a changed command
    shown = {k: v for k, v in shown_settings(config).items() if stored.settings.get(k) != v}
    if shown:  # how its pages show it: the file's, as it is now (also for `arena web --db`)
        store.update_settings(tid, shown)
    return tid


def game_setup(config: TournamentConfig, number: int, seat_bots: Sequence[int], deck_seed: int) -> GameSetup:
    """How game ``number`` of the tournament is played, wherever it is played."""
    return GameSetup.build(config.game_settings, match_id=config.name, game_number=number, seat_bots=seat_bots,
                           seed=deck_seed)


@dataclass(frozen=True, slots=True)
class GameDone:
    """What the runner reports after each game: the task, and the report (None if it failed)."""

    task: GameTask
    report: GameReport | None
    error: str = ""


class TournamentRunner:
    """Plays a tournament's pending games; see the module docstring."""

    def __init__(self, store: Store, tid: int, config: TournamentConfig, executor: GameExecutor,
                 concurrency: int | None = None, on_game: Callable[[GameDone], None] | None = None,
                 archives: ArchiveCache | None = None, live: bool = True) -> None:
        self.store = store
        self.live = live  # write running games' plays to the live table (arena/play/live.py)
        self._live: LiveWriter | None = None
        self.archives = archives or ArchiveCache()  # where bots with an archive run from on this machine
        # how bot packages are built and run here: the file's sandbox and runtimes, the arena's files private
        self.packages = arena_packages(config.sandbox, config.runtimes, store.sqlite_path, logs_dir_for(config))
        self.tid = tid
        self.config = config
        self.executor = executor
        self.concurrency = concurrency or config.concurrency
        self.on_game = on_game or (lambda done: None)
        self.stopping = asyncio.Event()  # set: start no new games, let running ones finish
        self.fault: PlatformFault | None = None  # the first platform fault of a game: the run stops, run() raises it
        self._rated_at = 0.0
        self._db_thread: ThreadPoolExecutor | None = None  # while run() runs: where store calls go

    def _seats(self, task: GameTask, bots: dict[int, SeatBot]) -> list[SeatBot]:
        return [bots[position] for position in task.seat_bots]

    def _setup(self, task: GameTask) -> GameSetup:
        return game_setup(self.config, task.number, task.seat_bots, task.deck_seed)

    async def _db(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a store call on the runner's one database thread, so a slow commit never holds the
        event loop that times the bots' answers; a single thread keeps the calls in the order they
        are made, as when they ran on the loop."""
        assert self._db_thread is not None
        return await asyncio.get_running_loop().run_in_executor(self._db_thread, functools.partial(fn, *args))

    async def _play(self, task: GameTask, bots: dict[int, SeatBot]) -> None:
        """Play one claimed game (claimed.py: stored, put back, or failed), then rate and report it."""
        games = ClaimedGames(self.store, self._db, log, self._live)
        outcome = await games.play(task, lambda: self._setup(task), lambda setup, observe: self.executor.play(
                                       setup, self._seats(task, bots), observe=observe),
                                   {"tournament": self.tid})
        if isinstance(outcome, NotOurs):
            return
        if isinstance(outcome, Faulted):  # the platform's: take no more games here (run() raises it)
            self.fault = self.fault or outcome.fault
            self.stopping.set()
            if not outcome.final:  # back to pending: not settled, nothing to rate or report
                return
        await self._rate()
        if isinstance(outcome, Played):
            self.on_game(GameDone(task, outcome.report))
        else:
            self.on_game(GameDone(task, None, outcome.error if isinstance(outcome, Failed) else
                                  f"platform fault ({outcome.fault.condition}): {outcome.fault}"))

    async def _rate(self, now: bool = False) -> None:
        """Apply ratings at most every RATING_INTERVAL_S (each call rates every game it can, in
        order, so batching changes nothing but the cost); ``now`` forces it."""
        clock = time.monotonic()
        if now or clock - self._rated_at >= RATING_INTERVAL_S:
            self._rated_at = clock
            await self._db(apply_ratings, self.store, self.tid)

    async def run(self) -> None:
        """Play until no game is pending (or ``stopping`` is set and the running ones are done).
        A game's PlatformFault stops the run as ``stopping`` does, and is raised once the running
        games are done: the platform cannot play here until it is fixed (the game is pending again)."""
        self._db_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="arena-db")
        try:
            if self.live:
                async with LiveWriter(self.store) as self._live:
                    await self._run()
            else:
                await self._run()
            if self.fault is not None:
                raise self.fault
        finally:
            self._live = None
            self._db_thread.shutdown(wait=True)  # its last call (a result, a rating) is written
            self._db_thread = None

    async def _run(self) -> None:
        requeued = await self._db(self.store.requeue_running, self.tid)
        if requeued:
            log.info("%d game(s) left running by an earlier process will be replayed", requeued)
        await self._db(apply_ratings, self.store, self.tid)
        bots = await self._db(seat_bots, self.store, self.tid, False, self.archives, self.packages)
        if (launcher := getattr(self.executor, "launcher", None)) is not None:
            refuse_hidden_views(launcher, bots.values())
        BOTS.keep_only([bot.name for bot in bots.values()])  # per-bot metrics: this tournament's bots only
        running: dict[asyncio.Task[None], GameTask] = {}
        stop_wait = asyncio.ensure_future(self.stopping.wait())
        try:
            while True:
                if not self.stopping.is_set() and len(running) < self.concurrency:
                    busy = {position for task in running.values() for position in task.seat_bots}
                    claimed = await self._db(self.store.claim, self.tid, self.concurrency - len(running), busy)
                    for task in claimed:
                        running[asyncio.create_task(self._play(task, bots), name=f"game-{task.number}")] = task
                if not running:
                    await self._rate(now=True)
                    return
                done, _ = await asyncio.wait({*running, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
                for finished in done - {stop_wait}:
                    running.pop(finished)  # type: ignore[call-overload]
                    finished.result()  # an unexpected error in our own bookkeeping stops the run
        finally:
            stop_wait.cancel()
            for t in running:
                t.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)
