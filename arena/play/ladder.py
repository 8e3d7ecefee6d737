"""`arena serve`: a ladder that plays a new round on the file's interval or cron, forever or for
``max_rounds`` rounds, over a pool of bots kept in the database.

One APScheduler AsyncIOScheduler runs one job, a round; a round due while the last one still
plays is skipped (max_instances=1, coalesce), so rounds never overlap. A round pairs the active
bots (or ``bots_per_round`` of them, taking turns; a bot new to the pool always, its first games
first: ``plan_round``) with ``ladder_pairings`` (the most uncertain bots first, against the
opponents that teach their ratings most), schedules the pairings' games after every earlier game with fresh decks, and
plays them through one InProcessExecutor shared by every round (bot processes are reused; at the
start and end of each round, the processes of bots removed from the pool, or given a new command,
are stopped).
Games left pending or running by an earlier serve are played first, as the round they belong to.

SIGTERM or SIGINT: no new round; the running games finish, unstarted ones stay pending for the
next start; a second signal abandons the running games too (back to pending). Exit status 0.
A platform fault (a full disk under the bot logs: PlatformFault) stops the ladder the same way,
with one line and exit status 4; the next start plays what is left.

With ``queue`` (``arena serve --queue``, PostgreSQL) the server plays nothing itself: each round's
games are queued in the transaction that schedules them and played by ``arena worker`` processes
(docs/scale-out.md); the server follows the round until every game is settled, brings the
ratings up to date and only then plans the next round, whose pairings need them. A signal stops
the following; the queued games stay the workers'.

A database outage (a restart, a failover) is ridden out for the outage window (store/outage.py): a
queued round's follow loop waits for the database and goes on; a round that fails for it ends, its
games left for the next round, which plays them first. Past the window the ladder stops with one
line and exit status 2.
"""

from __future__ import annotations

import asyncio
import logging
import math
import signal
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from apscheduler.events import EVENT_JOB_MAX_INSTANCES, JobSubmissionEvent
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from rich.console import Console
from sqlalchemy import Connection

from referee.errors import PlatformFault

from ..config import ConfigError, LadderConfig, TournamentConfig
from ..errors import ArenaError, UsageError, shown
from ..rating.ratings import default_rating
from ..rating.standings import fitting_standings_table
from ..schedule.pairings import ScheduledGame, ladder_pairings, round_pool, schedule, set_size
from ..store.lease import Lease
from ..store.outage import DatabaseUnavailableError, Outage, ping, unreachable
from ..store.store import BotRow, Store
from ..store.versions import Entry, pool_history
from .archives import ArchiveCache
from .challenges import play_open_challenges, queued_seats
from .coordinator import follow_games, queue_missing, settled_games
from .executor import InProcessExecutor
from .queue import live_jobs, make_app, require_postgresql
from .rate import apply_ratings
from .runner import GameDone, TournamentRunner, current_standings, logs_dir_for, open_tournament, seat_bots
from .sandbox import arena_launcher, arena_packages

log = logging.getLogger(__name__)
JOB_ID = "ladder-round"
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def ladder_trigger(ladder: LadderConfig) -> BaseTrigger:
    """The APScheduler trigger of a [ladder] section: every interval_s seconds, or its crontab (local time)."""
    if ladder.interval_s is not None:
        return IntervalTrigger(seconds=ladder.interval_s)
    assert ladder.cron is not None
    return CronTrigger.from_crontab(ladder.cron)


def describe_schedule(ladder: LadderConfig) -> str:
    """When rounds run, for people: "every 10m", "on cron '*/10 * * * *'"."""
    if ladder.interval_s is None:
        return f"on cron {ladder.cron!r}"
    seconds = ladder.interval_s
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"every {seconds / size:g}{unit}"
    return f"every {seconds:g}s"


def plan_round(config: TournamentConfig, active: list[BotRow], ratings: dict[str, Any], round_number: int,
               last_game: int, last_set: int, history: Mapping[int, Entry] | None = None) -> list[ScheduledGame]:
    """The games of ladder round ``round_number`` among the ``active`` bots (seat_bots are bot positions).

    ``round_pool`` picks the bots (every one, or ``bots_per_round`` of them: the new ones, then those
    that waited longest, from ``history``: each position's games since it entered the pool and its
    newest game; None: no bot is new and none has played). Pairings from ladder_pairings on the
    bots' (mu, sigma), the new bots' first, each new bot with enough pairings to play the games it
    has left of its first ``new_bot_games`` (as many as there are opponents), the others
    ``pairings_per_bot`` (a bot of the tournament file, there since the ladder began, is never new).
    The new bots' pairings are scheduled first, then the rest, each part in
    schedule()'s balanced order. Numbers and sets continue after ``last_game`` / ``last_set``;
    round r uses decks (r - 1) * sets_per_pairing onwards, so every round gets decks no earlier
    round used.
    """
    assert config.ladder is not None
    ladder = config.ladder
    history = history or {}
    blank = Entry(0, 0, entered_later=False)  # no history: never played, in the pool from the start
    entries = [history.get(bot.position, blank) for bot in active]
    # a bot of the tournament file, in the pool since the ladder began, is never new: its first
    # rounds are everyone's (it counts as having played its first games)
    since = [e.games_since_entry if e.entered_later else max(e.games_since_entry, ladder.new_bot_games)
             for e in entries]
    picked, new = round_pool(since, [e.last_game for e in entries], ladder.bots_per_round, ladder.new_bot_games)
    pool = [active[i] for i in picked]
    local = {index: k for k, index in enumerate(picked)}
    per_pairing = ladder.sets_per_pairing * set_size(config.players, config.duplicate)
    wants = [ladder.pairings_per_bot] * len(pool)
    for index in new:
        left = ladder.new_bot_games - entries[index].games_since_entry
        wants[local[index]] = max(ladder.pairings_per_bot, math.ceil(left / per_pairing))
    fallback = default_rating()
    rated = [ratings.get(bot.name, fallback) for bot in pool]
    chosen = ladder_pairings([(r.mu, r.sigma) for r in rated], config.players, ladder.pairings_per_bot,
                             wants=wants, first=[local[index] for index in new])
    newcomers = {active[index].position for index in new}
    groups = [tuple(pool[i].position for i in group) for group in chosen]
    games: list[ScheduledGame] = []
    for part in ([g for g in groups if newcomers & set(g)], [g for g in groups if not newcomers & set(g)]):
        if part:
            games += schedule(part, config.players, games_per_pairing=per_pairing, duplicate=config.duplicate,
                              seed=config.seed, first_number=last_game + len(games) + 1,
                              first_set=(games[-1].set_number if games else last_set) + 1,
                              first_deck_index=(round_number - 1) * ladder.sets_per_pairing)
    return games


class LadderServer:
    """One `arena serve` run: the scheduler's round job, the signal handling and the shared executor."""

    def __init__(self, store: Store, tid: int, config: TournamentConfig, console: Console,
                 max_rounds: int | None, queue: bool = False) -> None:
        assert config.ladder is not None
        self.store = store
        self.tid = tid
        self.config = config
        self.ladder = config.ladder
        self.console = console
        self.max_rounds = max_rounds
        self.queue = queue
        self._queue_app = make_app() if queue else None
        self.executor = InProcessExecutor(logs_dir_for(config),
                                          arena_launcher(config.sandbox, store.sqlite_path, logs_dir_for(config)))
        self.archives = ArchiveCache()  # one for every round: each unpacked archive is checked once
        self.packages = arena_packages(config.sandbox, config.runtimes, store.sqlite_path, logs_dir_for(config))
        self.rounds_played = 0
        self.status = 0
        self.signals = 0
        self.stopping = False  # no new round
        self.finished = asyncio.Event()  # serve() may wind down
        self._runner: TournamentRunner | None = None
        self._round_task: asyncio.Task[Any] | None = None
        self._abandoning = False
        self._follow_stop = asyncio.Event()  # a queued round: stop following it
        # the database may go away for a while: a queued round's follow loop rides it out, and a
        # round that fails for it waits for it, bounded, and leaves its games for the next round
        self.outage = Outage(store.url_for_people, give_up=self._follow_stop)
        self.fatal: ArenaError | None = None  # why serve() stops with an error (the CLI's one line)

    # --- stopping -------------------------------------------------------------------------------

    def stop(self) -> None:
        """No new round; the running one (if any) plays its running games to the end."""
        self.stopping = True
        if self._runner is not None:
            self._runner.stopping.set()
        self._follow_stop.set()
        self.finished.set()

    def on_signal(self, signum: int) -> None:
        """First SIGINT/SIGTERM: stop cleanly; second: abandon the running games (they go back to pending)."""
        self.signals += 1
        name = signal.Signals(signum).name
        if self.signals == 1:
            self.console.print(f"{name}: stopping after the running games (signal again to abandon them)")
            self.stop()
        elif self._round_task is not None and not self._abandoning:
            self.console.print(f"{name}: abandoning the running games (replayed on the next start)")
            self._abandoning = True
            self._round_task.cancel()

    def on_skipped(self, event: JobSubmissionEvent) -> None:
        """A round came due while the previous one was still playing: APScheduler skipped it."""
        due = ", ".join(t.isoformat(timespec="seconds") for t in event.scheduled_run_times)
        log.warning("round due at %s skipped: the previous round is still playing", due, extra={"tournament": self.tid})
        self.console.print(f"round due at {due} skipped: the previous round is still playing")

    # --- rounds -----------------------------------------------------------------------------------

    async def round_job(self) -> None:
        """The scheduler's job: one round, unless stopping. Errors stop the ladder with status 1."""
        if self.stopping:
            return
        self._round_task = asyncio.current_task()
        try:
            await self.play_round()
        except asyncio.CancelledError:
            if not self._abandoning:
                raise
            # our own cancellation (second signal): the runner has put the running games back to pending
        except DatabaseUnavailableError as exc:
            self.fatal = exc
            self.stop()
        except PlatformFault as fault:  # no round can be played here until it is fixed: one line, exit 4
            log.warning("ladder stopped: platform fault (%s): %s", fault.condition, fault, extra={"tournament": self.tid})
            self.console.print(f"[red]ladder stopped: platform fault ({fault.condition}): {fault}; the round's games "
                               "left are played at the next start, none of it a bot's failure", soft_wrap=True)
            self.status = fault.exit_status
            self.stop()
        except Exception as exc:
            if unreachable(exc):
                await self.wait_for_database(exc)
                return
            log.exception("ladder round failed", extra={"tournament": self.tid})
            self.console.print(f"[red]ladder round failed: {type(exc).__name__}: {exc}")
            self.status = 1
            self.stop()
        except BaseException as exc:
            # e.g. SystemExit from rich when stdout is a closed pipe; APScheduler would only log it and
            # the ladder would wait forever for a round that ended
            self.status = exc.code if isinstance(exc, SystemExit) and isinstance(exc.code, int) else 1
            self.stop()
        finally:
            self._round_task = None
            self._runner = None

    async def wait_for_database(self, exc: BaseException) -> None:
        """A round failed because the database went away: wait for it (bounded by the outage
        window; past it the ladder stops with DatabaseUnavailableError). Its games stay pending
        and the next round plays them first."""
        try:
            await asyncio.sleep(self.outage.failed(exc))
            await self.outage.call(ping, self.store.engine)
        except DatabaseUnavailableError as gone:
            self.fatal = gone
            self.stop()

    async def play_round(self) -> None:
        """Finish the games an earlier serve left, or schedule a new round; play it; report it."""
        await self.retire_removed_bots()  # also when this round is skipped for want of bots
        left = self.games_left()
        if left:
            number = self.store.tournament(self.tid).rounds
            self.console.print(f"round {number}: {left} game(s) left by an earlier run are played first")
        else:
            planned = self.schedule_round()
            if planned is None:
                return
            number = planned
        try:
            played = await self.play_games()
            if not self.stopping and self.games_left() == 0:
                await self.play_challenges(number)
        except asyncio.CancelledError:
            self.console.print(f"round {number}: abandoned with {self.games_left()} game(s) left for the next start")
            raise
        self.rounds_played += 1
        await self.retire_removed_bots()
        self.report(number, played)
        if self.max_rounds is not None and self.rounds_played >= self.max_rounds:
            self.stop()

    def schedule_round(self) -> int | None:
        """Store the next round's games (one transaction); its number, or None when too few bots are active."""
        active = self.store.bots(self.tid, active_only=True)
        players = self.config.players
        if len(active) < players:
            log.warning("round skipped: %d active bot(s), games need %d", len(active), players,
                        extra={"tournament": self.tid})
            self.console.print(f"round skipped: {len(active)} active bot(s), a game needs {players} "
                               f"(add some with `arena bots add NAME CMD_OR_ADDR -f {self.config.path.name}`)")
            return None
        number = self.store.tournament(self.tid).rounds + 1
        history = pool_history(self.store, self.tid, [bot.position for bot in active])
        games = plan_round(self.config, active, self.store.ratings(self.tid), number,
                           self.store.last_game_number(self.tid), self.store.last_set_number(self.tid), history)
        self.store.add_games(self.tid, number, games, then=self._queue_games if self.queue else None)
        playing = {p for g in games for p in g.seat_bots}
        bots = f"{len(playing)} of {len(active)}" if len(playing) < len(active) else f"{len(active)}"
        names = {bot.position: bot.name for bot in active}
        new = [names[p] for p, e in history.items()
               if e.entered_later and e.games_since_entry < self.ladder.new_bot_games and p in playing]
        first = f"; first games of {', '.join(new)}" if new else ""
        self.console.print(f"round {number}: {bots} bots, {len(games)} games{first}", soft_wrap=True)
        log.info("round %d: %s bots, %d games%s", number, bots, len(games), first, extra={"tournament": self.tid})
        return number

    def _queue_games(self, conn: Connection, tid: int) -> int:
        """Queue every pending game without a job (in the caller's transaction)."""
        assert self._queue_app is not None
        return queue_missing(self._queue_app, self.config, conn, tid)

    async def follow_queued_games(self) -> int:
        """A queued round: queue what has no job (games an earlier serve left), then wait until the
        workers have settled every game, and rate them; how many were played to a result."""
        store, tid = self.store, self.tid
        await asyncio.to_thread(store.in_transaction, lambda conn: self._queue_games(conn, tid))
        counts = await asyncio.to_thread(store.counts, tid)
        before, total = counts["done"], sum(counts.values())
        settled = await self.outage.call(settled_games, store, tid)
        await follow_games(store, tid, total, settled, self._follow_stop, lambda conn: self._queue_games(conn, tid),
                           self.outage)
        await self.outage.call(apply_ratings, store, tid)  # the next round's pairings need every rating
        return (await self.outage.call(store.counts, tid))["done"] - before

    async def play_games(self) -> int:
        """Play every pending game; how many were played to a result."""
        if self.queue:
            return await self.follow_queued_games()
        played = 0

        def on_game(done: GameDone) -> None:
            nonlocal played
            played += done.report is not None

        runner = TournamentRunner(self.store, self.tid, self.config, self.executor, on_game=on_game,
                                  archives=self.archives)
        self._runner = runner
        if self.stopping:  # a signal came while the round was being scheduled
            runner.stopping.set()
        await runner.run()
        return played

    async def play_challenges(self, number: int) -> None:
        """After the round's own games: the open challenges' next games (arena/play/challenges.py),
        on the same executor, at most ``[challenges] games_per_round`` of them."""
        store = self.store

        def seats_of(games_tid: int) -> dict[int, Any]:
            if self.queue:  # the workers start the bots
                return queued_seats(store, games_tid)
            return seat_bots(store, games_tid, False, self.archives, self.packages)

        played = await play_open_challenges(store, self.tid, self.config, self.executor, seats_of,
                                            lambda: self.stopping, queue=self.queue)
        if played:
            self.console.print(f"round {number}: {played} challenge game{'s' * (played != 1)} played")
            log.info("round %d: %d challenge game(s) played", number, played, extra={"tournament": self.tid})

    async def retire_removed_bots(self) -> None:
        """Stop the processes of bots removed (or given a new command) since they were started."""
        pool = await asyncio.to_thread(seat_bots, self.store, self.tid, True, self.archives, self.packages)
        retired = await self.executor.retire(set(pool.values()))
        if retired:
            log.info("stopped the processes of %s: no longer in the pool", ", ".join(retired))

    def games_left(self) -> int:
        """Games not played yet (pending, or running in a process that died)."""
        counts = self.store.counts(self.tid)
        return counts["pending"] + counts["running"]

    def report(self, number: int, played: int) -> None:
        """The round's line (number, games played, leader) and the standings table."""
        standings = current_standings(self.store, self.tid, self.config.standings)
        leader = standings.rows[0]
        left = self.games_left()
        state = f", stopped with {left} left for the next start" if left else ""
        provisional = ", provisional" if leader.provisional else ""
        line = (f"round {number}: {played} game{'s' * (played != 1)} played{state}; leader {leader.name} "
                f"(μ−3σ {leader.conservative:.2f}{provisional})")
        self.console.print(line)
        log.info("%s", line, extra={"tournament": self.tid})  # the console's line, for the log
        title = f"{self.config.name}: standings after round {number}"
        self.console.print(fitting_standings_table(self.console, standings, title))

    # --- the whole run ---------------------------------------------------------------------------

    async def serve(self) -> int:
        """Run the scheduler until max_rounds or a signal; wait for the running round; close everything."""
        scheduler = AsyncIOScheduler()
        scheduler.add_listener(self.on_skipped, EVENT_JOB_MAX_INSTANCES)
        scheduler.add_job(self.round_job, ladder_trigger(self.ladder), id=JOB_ID, name=f"{self.config.name} round",
                          max_instances=1, coalesce=True, misfire_grace_time=None,
                          next_run_time=datetime.now(timezone.utc))
        active = len(self.store.bots(self.tid, active_only=True))
        self.console.print(f"ladder {self.config.name!r}: a round {describe_schedule(self.ladder)}, {active} active "
                           f"bots; database {self.store.url_for_people}; stop with Ctrl-C or SIGTERM")
        try:
            scheduler.start()
            await self.finished.wait()
            scheduler.pause()
            while (task := self._round_task) is not None:
                await asyncio.wait({task})
        finally:
            # shutdown would cancel a running round (AsyncIOExecutor cancels its tasks): only now
            if scheduler.running:
                scheduler.shutdown(wait=False)
                await asyncio.sleep(0)  # AsyncIOScheduler.shutdown runs on the loop's next turn
            await self.executor.close()
        if self.fatal is not None:
            raise self.fatal
        return self.status


async def serve_ladder(config: TournamentConfig, console: Console, max_rounds: int | None = None,
                       queue: bool = False) -> int:
    """`arena serve`: keep the file's ladder running (see the module docstring); the exit status."""
    if queue:
        require_postgresql(config.database, "arena serve --queue")
    if config.ladder is None:
        raise ConfigError(f"{shown(config.path.name)}: no [ladder] section: `arena serve` needs interval or cron")
    if max_rounds is not None and max_rounds < 1:
        raise ValueError(f"max_rounds must be at least 1, not {max_rounds}")
    loop = asyncio.get_running_loop()
    server: LadderServer | None = None

    def on_signal(signum: int) -> None:
        if server is not None:
            server.on_signal(signum)

    # Installed first, so a signal during the (blocking) database setup is not fatal: its handler
    # runs at the loop's first turn, when the server exists.
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
    store: Store | None = None
    lease: Lease | None = None
    try:
        store = Store(config.database)
        tid = open_tournament(store, config, schedule_games=False)
        queued = 0 if queue else store.in_transaction(lambda conn: live_jobs(conn, tid))
        if queued:  # the workers own those games: a local serve would play them again
            raise UsageError(f"ladder {config.name!r} has {queued} game(s) queued for workers: serve it with "
                             f"`arena serve {config.path.name} --queue`")
        # two servers would both schedule rounds
        lease = Lease.acquire(store, tid, config.name, "serve --queue" if queue else "serve")
        if lease.taken_from:
            console.print(f"took over the lease of a process that is gone: {lease.taken_from}", soft_wrap=True)
        server = LadderServer(store, tid, config, console, max_rounds, queue)
        lease.when_lost(lambda: loop.call_soon_threadsafe(server.stop) if server is not None else None)
        return await server.serve()
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
        if lease is not None:
            lease.release()
        if store is not None:
            store.close()
