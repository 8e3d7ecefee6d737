"""``arena run``'s live run of a tournament: the runner with a progress display (a live bar and
standings on a terminal, a line every few seconds in a pipe), Ctrl-C and SIGTERM handling, the run
lease, and the final tables. ``arena run`` and ``arena demo`` both call ``run_tournament``."""

from __future__ import annotations

import asyncio
import signal
import sys
import time

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from referee.sandbox import make_launcher

from .config import TournamentConfig
from .console import PROG
from .executor import InProcessExecutor
from .lease import Lease
from .runner import (
    GameDone, TournamentRunner, available_cores, current_standings, logs_dir_for, open_tournament,
    oversubscription_warning,
)
from .standings import Standings, fitting_standings_table, head_to_head_table
from .storage import Store


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


async def run_tournament(config: TournamentConfig, console: Console, concurrency: int | None = None,
                         refresh_s: float = 1.0, show_paths: bool = True, pipe_every_s: float = PIPE_PROGRESS_S) -> int:
    """``arena run``: schedule (first time) or resume, play every pending game, print standings.
    Not on a terminal, progress is a line every ``pipe_every_s`` seconds and after the last game."""
    store = Store(config.database)
    lease: Lease | None = None
    try:
        tid = open_tournament(store, config)
        lease = Lease.acquire(store, tid, config.name, "run")  # before any game is touched
        if lease.taken_from:
            console.print(f"took over the lease of a process that is gone: {lease.taken_from}", soft_wrap=True)
        counts = store.counts(tid)
        total = sum(counts.values())
        settled = counts["done"] + counts["failed"]
        executor = InProcessExecutor(logs_dir_for(config), make_launcher(config.sandbox))
        progress = _progress()
        bar = progress.add_task(config.name, total=total, completed=settled, rate=0.0)
        started, played = time.monotonic(), 0
        table_at, line_at = 0.0, started
        live_table = fitting_standings_table(console, current_standings(store, tid), "standings")
        failures: list[str] = []
        refreshing: asyncio.Future[Standings] | None = None  # the live standings being computed

        def on_game(done: GameDone) -> None:
            nonlocal played, table_at, line_at, refreshing
            played += 1
            now = time.monotonic()
            rate = played / max(now - started, 1e-9)
            progress.update(bar, advance=1, rate=rate)
            if not console.is_terminal and (now - line_at >= pipe_every_s or settled + played == total):
                line_at = now
                console.print(f"{settled + played}/{total} games, {rate:.1f} games/s")
            if done.report is None:
                failures.append(f"game {done.task.number}: {done.error}")
            if console.is_terminal and now - table_at >= refresh_s and refreshing is None:
                # standings cost a query over every game: not every game, and never on the loop
                # that times the bots (a thread computes them; the display takes them when ready)
                table_at = now
                refreshing = asyncio.ensure_future(asyncio.to_thread(current_standings, store, tid))
                refreshing.add_done_callback(show_standings)

        def show_standings(task: asyncio.Future[Standings]) -> None:
            nonlocal live_table, refreshing
            refreshing = None
            if not task.cancelled() and task.exception() is None:
                live_table = fitting_standings_table(console, task.result(), "standings")
                live.update(Group(progress, live_table))

        runner = TournamentRunner(store, tid, config, executor, concurrency, on_game)
        loop = asyncio.get_running_loop()
        lease.when_lost(lambda: loop.call_soon_threadsafe(runner.stopping.set))
        interrupts = 0

        def interrupt() -> None:
            nonlocal interrupts
            interrupts += 1
            if interrupts == 1:
                console.print("[yellow]stopping: finishing the running games (interrupt again to abandon them; "
                              "they will be replayed next time)")
                runner.stopping.set()
            else:
                main_task.cancel()

        main_task = asyncio.current_task()
        assert main_task is not None
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, interrupt)
        warn_if_oversubscribed(runner.concurrency)
        console.print(f"tournament {config.name!r}: {len(config.bots)} bots, {total} games "
                      f"({settled} already played), {runner.concurrency} at once; database {store.url_for_people}",
                      soft_wrap=True)  # one line even in a log: paths are not cut
        try:
            if console.is_terminal:
                with Live(Group(progress, live_table), console=console, refresh_per_second=4) as live:
                    try:
                        await runner.run()
                    except asyncio.CancelledError:
                        pass
                    if refreshing is not None:  # let the last refresh land before the store closes
                        await asyncio.wait([refreshing])
                    live.update(Group(progress))
            else:  # a log or a pipe: a plain line every few seconds instead of a live display
                try:
                    await runner.run()
                except asyncio.CancelledError:
                    pass
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            await executor.close()
        console.print()
        standings = current_standings(store, tid)
        counts = store.counts(tid)
        title = f"{config.name}: standings after {counts['done']} games"
        console.print(fitting_standings_table(console, standings, title))
        console.print(head_to_head_table(standings))
        for line in failures:
            console.print(f"[red]referee failure[/red] {line}")
        for row in standings.rows:
            if row.forfeits.get("startup"):
                console.print(f"[red]{row.name} could not be started[/red] for {row.forfeits['startup']} game(s): "
                              f"see `arena games {config.path.name} --bot {row.name} --failed` and its log in "
                              f"{logs_dir_for(config)}", soft_wrap=True)
        pending = counts["pending"] + counts["running"]
        if pending:
            console.print(f"stopped with {pending} games still to play: run the same command again to resume")
            return 130 if interrupts else 1
        if show_paths:
            console.print(f"database: {store.url_for_people}; bot logs: {logs_dir_for(config)}", soft_wrap=True)
        return 0
    finally:
        if lease is not None:
            lease.release()
        store.close()
