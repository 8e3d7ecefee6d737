"""``arena run``'s live run of a tournament on a terminal or in a log: a TournamentSession
(play/session.py) with a progress display (a live bar and standings on a terminal, a line every few
seconds in a pipe), Ctrl-C and SIGTERM handling, and the final tables. ``arena run`` and
``arena demo`` both call ``run_tournament``."""

from __future__ import annotations

import asyncio
import signal
import sys
import time

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..config import TournamentConfig
from ..errors import one_line
from ..play.coordinator import QueuedSession
from ..play.runner import available_cores, oversubscription_warning
from ..play.session import GameFinished, RunEnded, RunStarted, TournamentSession
from ..rating.standings import Standings, fitting_standings_table, head_to_head_table, rank_notes
from .console import PROG

NEVER_STARTED = 3  # the exit status of a run in which a bot could not be started in any game
PIPE_PROGRESS_S = 5.0  # in a pipe or a log: a progress line at most this often (and one after the last game)


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:.1f} games/s"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
    )


def warn_if_oversubscribed(concurrency: int) -> None:
    """One warning line on stderr, at the start of a run, when games outnumber the cores."""
    warning = oversubscription_warning(concurrency, available_cores())
    if warning:
        sys.stderr.write(f"{PROG}: warning: {warning}\n")
        sys.stderr.flush()


class LiveDisplay:
    """A session's progress on a console: on a terminal a live bar with standings refreshed at most
    every ``refresh_s`` (computed in a thread); in a pipe a line every ``pipe_every_s`` seconds and
    after the last game."""

    def __init__(self, console: Console, session: TournamentSession | QueuedSession, refresh_s: float,
                 pipe_every_s: float) -> None:
        self.console = console
        self.session = session
        self.refresh_s = refresh_s
        self.pipe_every_s = pipe_every_s
        self.progress = _progress()
        self.bar = self.progress.add_task(session.config.name, total=0, rate=0.0)
        self.live: Live | None = None
        self.table: object = ""
        self._table_at = 0.0
        self._line_at = time.monotonic()
        self._refreshing = False

    def started(self, event: RunStarted) -> None:
        if event.lease_taken_from:
            self.console.print(f"took over the lease of a process that is gone: {event.lease_taken_from}", soft_wrap=True)
        self.progress.update(self.bar, total=event.total, completed=event.settled)
        warn_if_oversubscribed(event.concurrency)
        how = f"{event.concurrency} at once" if event.concurrency else "played by queue workers (arena worker)"
        self.console.print(f"tournament {event.name!r}: {event.bots} bots, {event.total} games "
                           f"({event.settled} already played), {how}; database {event.database}",
                           soft_wrap=True)  # one line even in a log: paths are not cut
        if self.console.is_terminal:
            self._refresh()  # the standings as they are, before the first game of this run

    def game_finished(self, event: GameFinished) -> None:
        now = time.monotonic()
        self.progress.update(self.bar, advance=1, rate=event.rate)
        if not self.console.is_terminal and (now - self._line_at >= self.pipe_every_s or event.finished == event.total):
            self._line_at = now
            self.console.print(f"{event.finished}/{event.total} games, {event.rate:.1f} games/s")
        if self.console.is_terminal and now - self._table_at >= self.refresh_s:
            self._refresh()

    def _refresh(self) -> None:
        """Standings cost a query over every game: not after every game, and never on the loop that
        times the bots (the session computes them in a thread; the display takes them when ready)."""
        if self._refreshing:
            return
        self._refreshing, self._table_at = True, time.monotonic()
        asyncio.ensure_future(self.session.standings_now()).add_done_callback(self._show)

    def _show(self, task: asyncio.Future[Standings]) -> None:
        self._refreshing = False
        if not task.cancelled() and task.exception() is None:
            self.table = fitting_standings_table(self.console, task.result(), "standings")
            if self.live is not None:
                self.live.update(Group(self.progress, self.table))


async def run_tournament(config: TournamentConfig, console: Console, concurrency: int | None = None,
                         refresh_s: float = 1.0, show_paths: bool = True, pipe_every_s: float = PIPE_PROGRESS_S,
                         queue: bool = False, detach: bool = False) -> int:
    """``arena run``: schedule (first time) or resume, play every pending game, print standings.
    Not on a terminal, progress is a line every ``pipe_every_s`` seconds and after the last game.
    The first interrupt (Ctrl-C, SIGTERM) finishes the running games; the second abandons them.
    With ``queue`` the games are queued for workers and followed (``detach``: not followed)."""
    session: TournamentSession | QueuedSession
    session = QueuedSession(config, detach=detach) if queue else TournamentSession(config, concurrency=concurrency)
    display = LiveDisplay(console, session, refresh_s, pipe_every_s)
    session.events = display
    loop = asyncio.get_running_loop()
    interrupts = 0

    def interrupt() -> None:
        nonlocal interrupts
        interrupts += 1
        if queue:
            console.print("[yellow]stopped following; the workers go on playing the queued games "
                          f"(`arena status {config.path.name}` shows them)")
            session.stop()
        elif interrupts == 1:
            console.print("[yellow]stopping: finishing the running games (interrupt again to abandon them; "
                          "they will be replayed next time)")
            session.stop()
        else:
            session.abandon()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, interrupt)
    try:
        if console.is_terminal:
            with Live(Group(display.progress), console=console, refresh_per_second=4) as live:
                display.live = live
                ended = await session.run()
                live.update(Group(display.progress))
        else:  # a log or a pipe: a plain line every few seconds instead of a live display
            ended = await session.run()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    if detach:
        console.print(f"{session.queued if isinstance(session, QueuedSession) else 0} game(s) queued, "
                      f"{ended.pending} to play in all; `arena status {config.path.name}` follows them", soft_wrap=True)
        return 0
    return _final_report(console, config, ended, interrupted=interrupts > 0, show_paths=show_paths, queue=queue)


def _final_report(console: Console, config: TournamentConfig, ended: RunEnded, interrupted: bool,
                  show_paths: bool, queue: bool = False) -> int:
    """The final tables and notes; the exit status (0 done, 1 stopped, 130 interrupted, 3 when a
    bot could not be started in any of its games: nothing of it was played)."""
    console.print()
    standings = ended.standings
    title = f"{config.name}: standings after {ended.counts['done']} games"
    console.print(fitting_standings_table(console, standings, title))
    console.print(head_to_head_table(standings))
    for note in rank_notes(standings):
        console.print(f"note: {note.text()}", markup=False, highlight=False)
    for line in ended.failures:
        console.print(f"[red]referee failure[/red] {line}")
    for row in standings.rows:
        if row.forfeits.get("startup"):
            console.print(f"[red]{row.name} could not be started[/red] for {row.forfeits['startup']} game(s): "
                          f"see `arena games {config.path.name} --bot {row.name} --failed` and its log in "
                          f"{'the bot logs of the workers that played it' if queue else ended.logs_dir}",
                          soft_wrap=True)
    if ended.pending:
        if queue:
            console.print(f"stopped following with {ended.pending} games still to play: the workers go on; "
                          f"`arena status {config.path.name}` follows them")
        else:
            console.print(f"stopped with {ended.pending} games still to play: run the same command again to resume")
        return 130 if interrupted else 1
    if show_paths:
        logs = "on the workers (arena worker --logs)" if queue else ended.logs_dir
        console.print(f"database: {ended.database}; bot logs: {logs}", soft_wrap=True)
    never = [row.name for row in standings.rows if row.games and row.forfeits.get("startup", 0) == row.games]
    if never:  # the run did not play what it was asked to: say why, and do not end as if it had
        for name in never:
            reason = startup_reason(config, name)
            console.file.flush()
            sys.stderr.write(f"arena: error: bot {name} could not be started in any of its games"
                             f"{': ' + one_line(reason) if reason else ''}\n")
        return NEVER_STARTED
    return 0


def startup_reason(config: TournamentConfig, bot: str) -> str | None:
    """Why ``bot`` last failed to start in the tournament (the newest such failure's reason)."""
    from ..store.store import Store

    store = Store(config.database, read_only=True)
    try:
        tid = store.tournament_id(config.name)
        position = next((b.position for b in store.bots(tid) if b.name == bot), None) if tid else None
        if tid is None or position is None:
            return None
        for game in reversed(store.games(tid, position)):
            for f in (game.result or {}).get("failures", []):
                if f.get("kind") == "FAILURE_KIND_STARTUP" and game.seat_bots[int(f.get("seat", 0))] == position:
                    return str(f.get("reason", ""))
        return None
    finally:
        store.close()
