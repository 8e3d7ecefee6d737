"""The ``arena`` command: run tournaments and ladders, and look at what they stored.

Every usage problem (bad file, unknown bot, unreachable database, bad argument) is one line on
stderr and exit status 2; a bad tournament file gets one line per problem.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

# Only what building the parser and reporting an error need is imported here, so `arena --help`
# and a subcommand's --help answer at once: the database (SQLAlchemy, Alembic, procrastinate),
# the referee's game machinery (gRPC, protobuf, prometheus_client) and rich are imported by the
# commands that use them (docs/benchmarks.md, "Commands that answer at once";
# tests/arena/test_cli_imports.py keeps it so).
from referee.cli.main import add_metrics_argument
from referee.errors import RefereeError
from referee.logs import add_log_format_arg
from referee.logs import configure as configure_logging

from ..errors import ArenaError, UsageError, one_line, quoted, shown
from ..play.joblog import job_fields
from .compare import add_compare_parser, add_gauntlet_parser
from .console import PROG, add_outage_argument, make_console
from .migrate import add_migrate_parser
from .submissions import add_submissions_parser
from .users import add_users_parser
from .web import add_web_parser

if TYPE_CHECKING:
    from ..config import TournamentConfig
    from ..store.store import Store


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # "arena: error: ..." for a subcommand's arguments too, like every other usage problem
        command = self.prog.removeprefix(PROG).strip()
        self.exit(2, f"{PROG}: error: {command + ': ' if command else ''}{message}\n")


def _load(path: str, reading: bool = False) -> TournamentConfig:
    """The tournament file; a command that only reads results does not need the bots' programs."""
    from ..config import load_config

    return load_config(path, check_programs=not reading)


def _open(config: TournamentConfig) -> tuple[Store, int]:
    """The tournament's database opened for reading (a read-only copy works too) and its id."""
    from ..store.store import NoDatabaseError, Store

    try:
        store = Store(config.database, read_only=True)
    except NoDatabaseError as exc:
        raise UsageError(f"tournament {config.name!r} has not been run yet ({exc})") from None
    tid = store.tournament_id(config.name)
    if tid is None:
        store.close()
        raise UsageError(f"tournament {config.name!r} has not been run yet (no games in {store.url_for_people})")
    return store, tid


def run_async(args: argparse.Namespace, main: Callable[[], Coroutine[Any, Any, int]]) -> int:
    """Run a long-running command's coroutine; with ``--metrics-listen``, its metrics are served
    (and the event loop's lag watched) while it runs (docs/operations.md)."""
    from referee.loop import run_main
    from referee.metrics import serve_metrics, with_loop_watch

    if args.metrics_listen:
        serve_metrics(args.metrics_listen, f"{PROG} {args.command}")  # a bad address: one line, exit 2
        return run_main(with_loop_watch(main()))
    return run_main(main())


# --- run ------------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    if args.concurrency is not None and args.concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1, not {args.concurrency}")
    if args.detach and not args.queue:
        raise UsageError("--detach is for --queue runs (the workers play the games while nothing follows them)")
    if args.queue and args.concurrency is not None:
        raise UsageError("--concurrency is the workers' with --queue (arena worker --concurrency N)")
    config = _load(args.file)  # before the run's machinery: a refused file needs none of it
    from .live import run_tournament

    return run_async(args, lambda: run_tournament(config, make_console(), args.concurrency, queue=args.queue,
                                                  detach=args.detach))


def cmd_worker(args: argparse.Namespace) -> int:
    from ..play.worker import WorkerSettings, run_worker

    given = {"heartbeat_s": args.heartbeat, "stalled_after_s": args.stalled_after, "grace_s": args.grace,
             "bots_idle_s": args.bots_idle, "pause_s": args.pause_check}
    settings = WorkerSettings(args.db, args.concurrency, Path(args.logs) if args.logs else None, name=args.name or "",
                              **{key: value for key, value in given.items() if value is not None})
    return run_async(args, lambda: run_worker(settings))


def cmd_status(args: argparse.Namespace) -> int:
    from .status import print_status

    config = _load(args.file, reading=True)
    store, tid = _open(config)
    try:
        return print_status(store, tid, config, args.format)
    finally:
        store.close()


# --- looking at results -----------------------------------------------------------------------


def cmd_standings(args: argparse.Namespace) -> int:
    from ..play.runner import current_standings
    from ..rating.standings import (
        fitting_standings_table,
        head_to_head_table,
        rank_notes,
        standings_csv,
        standings_json,
    )

    config = _load(args.file, reading=True)
    store, tid = _open(config)
    try:
        standings = current_standings(store, tid, config.standings)
    finally:
        store.close()
    if args.format == "json":
        sys.stdout.write(standings_json(standings) + "\n")
    elif args.format == "csv":
        sys.stdout.write(standings_csv(standings))
    else:
        console = make_console()
        console.print(fitting_standings_table(console, standings, f"{config.name}: standings"))
        console.print(head_to_head_table(standings))
        for note in rank_notes(standings):
            console.print(f"note: {note.text()}", markup=False, highlight=False)
    return 0


def _result_text(result: dict | None, seat_names: list[str], players: int) -> str:  # type: ignore[type-arg]
    if not result:
        return ""
    scores = "-".join(str(s) for s in result.get("scores", []))
    ranks = result.get("ranks", [])
    winners = sorted({seat_names[s] for s, r in enumerate(ranks) if r == 1}) if ranks else []
    verdict = "draw" if result.get("winnerSide", -1) < 0 and len(winners) > 1 else f"won by {'+'.join(winners)}"
    return f"{scores} {verdict} ({result.get('reason', '')})"


def cmd_games(args: argparse.Namespace) -> int:
    from referee.match.record import seat_move_times

    from ..rating.failures import failure_place, kind_name
    from .describe import seat_times_line

    config = _load(args.file, reading=True)
    store, tid = _open(config)
    try:
        bots = store.bots(tid)
        names = {b.position: b.name for b in bots}
        position = None
        if args.bot is not None:
            match = [b for b in bots if b.name == args.bot]
            if not match:
                bot_list = ", ".join(shown(n) for n in names.values())
                raise UsageError(f"no bot named {args.bot!r} in {config.name!r} (bots: {bot_list})")
            position = match[0].position
        statuses = ["failed"] if args.failed else []
        rows = store.games(tid, position, statuses)
        if args.failed:  # games with a failure of a bot count too
            rows = [g for g in store.games(tid, position) if g.status == "failed" or (g.result and g.result.get("failures"))]
        records = dict(store.records(tid)) if args.times else {}
    finally:
        store.close()
    out = sys.stdout
    if rows:
        out.write(f"{'game':>5s}  {'set':8s} {'bots by seat':40s} {'status':8s} result\n")
    for g in rows:
        seats = [names[p] for p in g.seat_bots]
        line = f"{g.number:5d}  set {g.set_number:<4d} {' v '.join(seats):40s} {g.status:8s}"
        if g.result:
            line += " " + _result_text(g.result, seats, config.players)
        if g.error:
            line += f" error: {g.error}"
        out.write(line.rstrip() + "\n")
        for f in (g.result or {}).get("failures", []):
            seat = int(f.get("seat", 0))
            what = "forfeit" if f.get("forfeit") else "random move played"
            out.write(f"         {seats[seat]} (seat {seat}): {kind_name(f.get('kind', ''))} {failure_place(f)}: "
                      f"{f.get('reason', '')} -> {what}\n")
        if g.number in records:
            for seat, moves in seat_move_times(records[g.number]).items():
                out.write(f"         {seat_times_line(seat, seats[seat], moves)}\n")
    if not rows:
        out.write("no games\n")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from referee.cli.render import record_lines
    from referee.match.record import seat_move_times
    from referee.rules import RulesError

    from ..store.store import StorageError
    from .describe import seat_times_line

    config = _load(args.file, reading=True)
    store, tid = _open(config)
    try:
        row, record = store.game(tid, args.game)
        names = {b.position: b.name for b in store.bots(tid)}
    except StorageError as exc:
        raise UsageError(str(exc)) from None
    finally:
        store.close()
    if record is None:
        sys.stdout.write(f"game {row.number} is {row.status}" + (f": {row.error}" if row.error else "") + "; no record yet\n")
        return 0
    # the tournament's names, by the game row's seats: whatever names the bots gave themselves
    seat_names = [names[p] for p in row.seat_bots]
    try:
        lines = record_lines(record, seat_names, full=args.full)
    except RulesError as exc:
        raise UsageError(f"game {row.number}: the stored record does not replay: {exc}") from None
    sys.stdout.write("\n".join(lines) + "\n")
    for seat, moves in seat_move_times(record).items():
        sys.stdout.write(seat_times_line(seat, seat_names[seat], moves) + "\n")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from ..play.runner import current_standings
    from ..rating.standings import standings_csv, standings_json
    from .describe import games_csv

    config = _load(args.file, reading=True)
    out = Path(args.dir)
    try:
        (out / "records").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {shown(str(out))}: {exc.strerror}") from None
    store, tid = _open(config)
    try:
        names = {b.position: b.name for b in store.bots(tid)}
        count = 0
        for number, record in store.records(tid):
            (out / "records" / f"game-{number:06d}.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
            count += 1
        (out / "games.csv").write_text(games_csv(store.games(tid), names), encoding="utf-8")
        standings = current_standings(store, tid, config.standings)
        (out / "standings.json").write_text(standings_json(standings) + "\n", encoding="utf-8")
        (out / "standings.csv").write_text(standings_csv(standings), encoding="utf-8")
        history = [{"game": n, "bot": b, "mu": mu, "sigma": sigma} for n, b, mu, sigma in store.rating_history(tid)]
        (out / "rating_history.json").write_text(json.dumps(history, indent=1) + "\n", encoding="utf-8")
    finally:
        store.close()
    sys.stdout.write(f"exported {count} game records, games.csv, standings.json/.csv and rating_history.json to {out}\n")
    return 0


# --- the pool of a ladder -----------------------------------------------------------------------


def cmd_bots(args: argparse.Namespace) -> int:
    from ..config import BOT_NAME
    from ..play.runner import open_tournament
    from ..store.store import Store

    config = _load(args.file, reading=args.action == "list")
    if args.action != "list" and config.ladder is None:  # a round robin's games were scheduled from its [[bots]]
        raise UsageError(f"{shown(config.path.name)}: no [ladder] section: `arena bots {args.action}` changes a "
                         "ladder's pool; a round robin's bots are its file's [[bots]]")
    store: Store | None = None
    tid = 0
    if args.action == "list":  # listing an existing pool only reads (a read-only copy works)
        try:
            store, tid = _open(config)
        except UsageError:  # no pool yet: created from the file's [[bots]] below, as add and remove do
            pass
    store = store or Store(config.database)
    try:
        tid = tid or store.tournament_id(config.name) or open_tournament(store, config, schedule_games=False)
        if args.action == "add":
            from referee.bots.endpoint import BotEndpoint
            from referee.packages.archive import ArchiveError
            from referee.packages.load import is_package

            from ..config import PACKAGE_SPEC
            from ..play.archives import store_package

            if not BOT_NAME.fullmatch(args.name):  # the file's rule: names also name log files
                raise UsageError("a bot name must be 1 to 64 of the characters A-Z a-z 0-9 _ . -, "
                                 f"not {quoted(args.name)}")
            archive = None
            spec = args.spec
            if is_package(args.spec):  # a bot package: stored, built and run on each machine that plays it
                if args.archive is not None:
                    raise UsageError("a bot package carries its files: --archive is for a command's")
                try:
                    archive = store_package(store, args.spec)
                except ArchiveError as exc:
                    raise UsageError(f"bot package {shown(args.spec)} {exc}") from None
                spec = PACKAGE_SPEC
            elif args.archive is not None:  # the command runs at the root of the archive, unpacked where it plays
                archive = _bot_archive(store, args.archive, args.spec)
            else:
                endpoint = BotEndpoint.parse(args.spec)  # raises EndpointError on a bad spec
                if config.time_control.cpu_time_ms and not endpoint.is_process:  # as the file's bots are checked
                    raise UsageError(f"cannot add {args.name}: [time] cpu_ms needs bots the arena starts, and "
                                     f"{quoted(args.spec)} is an address (its CPU time cannot be measured)")
            row = store.add_bot(tid, args.name, spec, archive=archive)
            sys.stdout.write(f"added {row.name}: {row.spec}{_archive_note(row.archive)}\n")
        elif args.action == "remove":
            store.remove_bot(tid, args.name)
            sys.stdout.write(f"removed {args.name} (its games and ratings stay)\n")
        else:
            ratings = store.ratings(tid)
            sys.stdout.write(f"{'bot':20s} {'state':8s} {'mu':>6s} {'sigma':>6s}  command or address\n")
            for b in store.bots(tid):
                r = ratings.get(b.name)
                state = "active" if b.active else "removed"
                mu, sigma = (f"{r.mu:.2f}", f"{r.sigma:.2f}") if r else ("-", "-")
                sys.stdout.write(f"{b.name:20s} {state:8s} {mu:>6s} {sigma:>6s}  {b.spec}{_archive_note(b.archive)}\n")
    finally:
        store.close()
    return 0


def _bot_archive(store: Store, path: str, spec: str) -> str:
    """Check the archive file of `bots add --archive` and the command against it, store it; its sha256."""
    from referee.packages.archive import ArchiveError, check_archive, command_problem, read_archive_file

    where = shown(path)
    try:
        content = read_archive_file(path)
        checked = check_archive(content)
    except ArchiveError as exc:
        raise UsageError(f"--archive {where} {exc}") from None
    if problem := command_problem(checked, spec, None):
        raise UsageError(f"bot command {quoted(spec)} cannot start from --archive {where}: {problem}")
    store.put_archive(checked.sha256, content)
    return checked.sha256


def _archive_note(sha256: str | None) -> str:
    """What `bots add` and `bots list` show of a bot's archive: its hash, short."""
    return f"  (archive {sha256[:12]})" if sha256 else ""


def cmd_serve(args: argparse.Namespace) -> int:
    config = _load(args.file)
    if config.ladder is None:
        raise UsageError(f"{shown(config.path.name)}: no [ladder] section: `arena serve` needs interval or cron")
    from ..play.ladder import serve_ladder
    from .live import warn_if_oversubscribed

    if args.rounds is not None and args.rounds < 1:
        raise UsageError(f"--rounds must be at least 1, not {args.rounds}")
    if not args.queue:
        warn_if_oversubscribed(config.concurrency)
    return run_async(args, lambda: serve_ladder(config, make_console(), max_rounds=args.rounds, queue=args.queue))


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    if args.games < 2 or args.games % 2:
        raise UsageError(f"--games must be a positive multiple of 2 (duplicate deals), not {args.games}")
    if args.move_time < 1:
        raise UsageError(f"--move-time must be at least 1 ms, not {args.move_time}")
    return run_demo(games_per_pairing=args.games, move_time_ms=args.move_time, seed=args.seed,
                    folder=Path(args.dir) if args.dir else None)


# --- wiring ------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Royal Casino tournaments: round robins, ladders and standings.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the referee does (to stderr)")
    add_log_format_arg(parser)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("run", help="run (or resume) a tournament file")
    p.add_argument("file", help="the tournament file (TOML, see docs/tournaments.md)")
    p.add_argument("--concurrency", type=int, help="games at once (default: the file's, else the number of cores)")
    p.add_argument("--queue", action="store_true",
                   help="queue the games for `arena worker` processes (PostgreSQL) and follow them (docs/scale-out.md)")
    p.add_argument("--detach", action="store_true", help="with --queue: return once the games are queued")
    add_metrics_argument(p)
    add_outage_argument(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("worker", help="play queued games of any tournament in a PostgreSQL database (--queue runs)")
    p.add_argument("--db", required=True, metavar="URL", help="the database, postgresql://user@host/name")
    p.add_argument("--concurrency", type=int, default=1, help="games at once (default 1)")
    p.add_argument("--logs", metavar="DIR", help="bot logs, a folder per tournament (default: a temporary folder)")
    p.add_argument("--heartbeat", type=float, metavar="S", help="seconds between the worker's heartbeats (default 10)")
    p.add_argument("--stalled-after", type=float, metavar="S",
                   help="a worker without a heartbeat this long is dead and its games are played again (default 30)")
    p.add_argument("--grace", type=float, metavar="S",
                   help="on SIGTERM, seconds running games get to finish before they are requeued (default 20)")
    p.add_argument("--name", help="the worker's name in `arena status` (default host:pid)")
    p.add_argument("--bots-idle", type=float, metavar="S", help="seconds a tournament's bot processes are kept "
                   "without a game of it before they are stopped (default 300)")
    p.add_argument("--pause-check", type=float, metavar="S", help="after a platform fault (a full disk under "
                   "--logs) the worker takes no games and checks again after S seconds, doubling the wait up to "
                   "12 times S (default 5)")
    add_metrics_argument(p)
    add_outage_argument(p)
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("status", help="a queued tournament: queue depth, workers, running, stalled and retried games")
    p.add_argument("file")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("standings", help="print the standings")
    p.add_argument("file")
    p.add_argument("--format", choices=["table", "json", "csv"], default="table")
    p.set_defaults(func=cmd_standings)

    p = sub.add_parser("games", help="list games with results and failure reasons")
    p.add_argument("file")
    p.add_argument("--bot", help="only games of this bot")
    p.add_argument("--failed", action="store_true", help="only games with a failure (a bot's or the referee's)")
    p.add_argument("--times", action="store_true",
                   help="also each seat's move times: wall clock and CPU (reads every game's record)")
    p.set_defaults(func=cmd_games)

    p = sub.add_parser("show", help="print one game's record, move by move")
    p.add_argument("file")
    p.add_argument("game", type=int, help="the game number (see `arena games`)")
    p.add_argument("--full", action="store_true", help="also every seat's hand and the table before each play")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("export", help="write every record and result to a folder")
    p.add_argument("file")
    p.add_argument("dir")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("serve", help="keep a ladder running: a new round on the file's interval or cron")
    p.add_argument("file")
    p.add_argument("--rounds", type=int, default=None, help="stop after this many rounds (default: run until stopped)")
    p.add_argument("--queue", action="store_true",
                   help="queue each round's games for `arena worker` processes (PostgreSQL; docs/scale-out.md)")
    add_metrics_argument(p)
    add_outage_argument(p)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("bots", help="change a ladder's pool between rounds: add, remove, list")
    p.add_argument("action", choices=["add", "remove", "list"])
    p.add_argument("name", nargs="?")
    p.add_argument("spec", nargs="?", help="command line, address, or bot package: a folder with bot.toml or a .tar.gz (add)")
    p.add_argument("--archive", metavar="FILE", help="add: the bot's files as a .tar.gz, stored in the database; "
                   "the command runs at the archive's root (docs/tournaments.md, \"Bot archives\")")
    p.add_argument("-f", "--file", default="tournament.toml", help="the ladder's tournament file (default ./tournament.toml)")
    p.set_defaults(func=cmd_bots)

    add_compare_parser(sub)
    add_gauntlet_parser(sub)
    add_web_parser(sub)
    add_users_parser(sub)
    add_submissions_parser(sub)
    add_migrate_parser(sub)

    p = sub.add_parser("demo", help="a quick tournament of the sample bots; its file and database are kept")
    p.add_argument("--games", type=int, default=4, help="games per pairing, a multiple of 2 (default 4)")
    p.add_argument("--move-time", type=int, default=200, help="ms per move (default 200)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dir", metavar="DIR", help="the folder for the tournament file, database and bot logs "
                   "(default: a new temporary folder); a folder holding the same demo resumes it")
    p.add_argument("--keep", action="store_true", help=argparse.SUPPRESS)  # the folder is always kept now
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "bots":
        if args.action in ("add", "remove") and not args.name:
            parser.error(f"bots {args.action} needs a bot NAME")
        if args.action == "add" and not args.spec:
            parser.error("bots add needs NAME and CMD_OR_ADDR")
        if args.archive is not None and args.action != "add":
            parser.error(f"bots {args.action} takes no --archive")
    configure_logging(args.log_format, logging.INFO if args.verbose else logging.ERROR,
                      "%(asctime)s %(levelname)s %(name)s: %(message)s", fields_from=[job_fields])
    try:
        if getattr(args, "db_outage", None) is not None:
            from ..store.outage import set_window

            set_window(args.db_outage)
        return int(args.func(args))
    except (ArenaError, RefereeError) as exc:  # the arena's and the referee's (an endpoint, an option)
        from ..config import ConfigError

        # every problem of a tournament file, one line each (escaped again: a line stays a line)
        lines = exc.errors if isinstance(exc, ConfigError) else (str(exc),)
        sys.stderr.write("".join(f"{PROG}: error: {one_line(line)}\n" for line in lines))
        return exc.exit_status
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return 130
    except BrokenPipeError:  # `arena games ... | head`: the reader left; not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:
        # the database went away where no outage is ridden out (a short command, a start): one
        # line and exit 2, as for any unreachable database; anything else is a bug, with its traceback
        if "sqlalchemy" not in sys.modules and "psycopg" not in sys.modules:
            raise
        from ..store.outage import reason, unreachable

        if not unreachable(exc):
            raise
        sys.stderr.write(f"{PROG}: error: database unreachable: {one_line(reason(exc))}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
