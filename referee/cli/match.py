"""``referee match`` and ``referee check``: run matches from the command line and report them."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import shlex
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import TextIO

from casino.v1 import game_pb2

from ..bots.endpoint import BotEndpoint
from ..bots.launcher import Launcher
from ..clock import TimeControl
from ..errors import EndpointError, UsageError
from ..logs import configure as configure_logging
from ..loop import run_main
from ..match.record import seat_move_times
from ..match.report import GameReport, MatchReport
from ..match.spec import FailurePolicy, MatchSpec
from ..rules import RuleOptions, parse_deck
from ..rules.errors import RulesError
from ..sandbox import SandboxLauncher
from .files import make_folder, read_text_file
from .sandbox_args import launcher_from_args, runtimes_from_args, settings_from_args

F = game_pb2.FailureKind
LOG_TAIL_LINES = 15  # of a failing bot's log, printed by a check that does not keep the logs
LOG_TAIL_BYTES = 64 * 1024  # read from the end of a log for that tail
LOG_LINE_CHARS = 300  # a longer line of a log is cut when printed


MAX_DECK_BYTES = 64 << 10  # a deck file is 52 card codes (and perhaps comments)
MAX_RECORD_BYTES = 16 << 20  # a record of the longest game is well under a megabyte


def add_match_args(p: argparse.ArgumentParser, *, bots: bool = True,
                   logs_help: str = "bot logs (default: a new temporary folder)") -> None:
    if bots:
        p.add_argument("--bot", action="append", required=True, metavar="CMD_OR_ADDR",
                       help="a bot per seat: host:port, unix:/path, a command line the referee starts, or "
                            "inprocess:PATH.py[:CLASS] (trusted Python SDK code, played in this process)")
    p.add_argument("--players", type=int, choices=(2, 3, 4), default=None, help="players per game (default: one per --bot)")
    p.add_argument("--individuals", action="store_true", help="4 players play for themselves")
    p.add_argument("--games", type=int, default=1, help="games in the match (default 1)")
    p.add_argument("--seed", type=int, default=1,
                   help="seed of game 1; game k uses seed + k - 1 (default 1). The match id follows it, "
                        "the bots and the options: the same command gives the same game ids")
    p.add_argument("--deck", metavar="FILE", help="first deal of every game from this deck (52 codes); later deals from the seed")
    p.add_argument("--move-time", type=int, default=1000, metavar="MS", help="per-move limit (default 1000)")
    p.add_argument("--grace", type=int, default=50, metavar="MS", help="slack past the limit (default 50)")
    p.add_argument("--bank", type=int, default=0, metavar="MS", help="time bank per game (default none)")
    p.add_argument("--increment", type=int, default=0, metavar="MS", help="added to the bank after each move")
    p.add_argument("--startup-time", type=int, default=10_000, metavar="MS", help="to become healthy and answer the handshake (default 10000)")
    p.add_argument("--cpu-time", type=int, default=0, metavar="MS",
                   help="per-move limit on the CPU time of the bot's processes (default none); "
                        "--move-time stays as a wall-clock backstop")
    p.add_argument("--policy", choices=[p.value for p in FailurePolicy], default="forfeit",
                   help="on a failure: forfeit the game (default) or play a random move and count a strike")
    p.add_argument("--max-strikes", type=int, default=3, help="strikes before a forfeit with --policy random_move")
    p.add_argument("--no-rotate", action="store_true", help="keep seats fixed between games")
    p.add_argument("--ask-forced", action="store_true",
                   help="ask the bots for every move, even their only legal one (default: the referee plays it)")
    p.add_argument("--records", metavar="DIR", help="write each game's JSON record here")
    p.add_argument("--logs", metavar="DIR", help=logs_help)
    p.add_argument("-v", "--verbose", action="store_true", help="log every game and failure to stderr")


def spec_from_args(args: argparse.Namespace, bots: list[str | BotEndpoint]) -> MatchSpec:
    try:
        endpoints = [b if isinstance(b, BotEndpoint) else BotEndpoint.parse(b, trusted=True) for b in bots]
        players = args.players or len(endpoints)
        if len(endpoints) != players:
            raise UsageError(f"{players} players need {players} --bot options, got {len(endpoints)}")
        if players not in (2, 3, 4):
            raise UsageError(f"a game needs 2, 3 or 4 bots, got {players}")
        options = RuleOptions(players=players, partnerships=not args.individuals)
        decks = []
        if args.deck:
            decks = [parse_deck(read_text_file(args.deck, "deck file", MAX_DECK_BYTES))]
        control = TimeControl(move_time_ms=args.move_time, grace_ms=args.grace, bank_initial_ms=args.bank,
                              bank_increment_ms=args.increment, startup_time_ms=args.startup_time,
                              cpu_time_ms=args.cpu_time)
        spec = MatchSpec(
            bots=endpoints, options=options, games=args.games, seed=args.seed, decks=decks, time_control=control,
            policy=FailurePolicy(args.policy), max_strikes=args.max_strikes, rotate_seats=not args.no_rotate,
            auto_forced=not args.ask_forced, records_dir=Path(args.records) if args.records else None, logs_dir=Path(args.logs) if args.logs else None,
        )
        spec = dataclasses.replace(spec, match_id=spec.seeded_match_id())  # the same command, the same game ids
    except (EndpointError, RulesError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    # the output folders last, once every option is known to be good
    if args.records:
        make_folder(args.records, "records folder")
    if args.logs:
        make_folder(args.logs, "logs folder")
    return spec


def describe_game(report: GameReport, names: list[str], options: RuleOptions) -> str:
    r = report.result
    seats = ", ".join(f"P{s} {names[b]}" for s, b in enumerate(report.seat_bots))
    scores = "-".join(str(v) for v in r.scores)
    if r.winner_side >= 0:
        sides = [s for s in range(options.players) if options.side_of(s) == r.winner_side]
        who = " + ".join(names[report.seat_bots[s]] for s in sides) + " wins"
    else:
        who = "draw"
    line = f"game {report.game_number} [{seats}]: {who} ({r.reason}) {scores}"
    for f in r.failures:
        action = "forfeit" if f.forfeit else "random move"
        line += f"\n    P{f.seat} {names[report.seat_bots[f.seat]]}: {F.Name(f.kind).removeprefix('FAILURE_KIND_').lower()} at deal {f.deal + 1} play {f.play_number}: {f.reason} -> {action}"
    return line


def move_times_ms(report: MatchReport, bot: int, cpu: bool = False) -> list[float]:
    """The bot's move times in the match, in ms: wall-clock response times, or (``cpu``) the CPU
    times of the moves whose CPU time was measured."""
    times = []
    for game in report.games:
        for seat, moves in seat_move_times(game.record).items():
            if game.seat_bots[seat] == bot:
                times += [us / 1000 for us in (moves.cpu_us if cpu else moves.wall_us)]
    return times


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def summary_lines(report: MatchReport) -> list[str]:
    tally = report.tally()
    lines = [(f"{'bot':24s} {'games':>5s} {'W':>4s} {'D':>4s} {'L':>4s} {'forfeits':>8s} {'move ms p50':>11s} {'p99':>7s}"
              f" {'cpu ms p50':>10s} {'p99':>7s}")]
    for i, name in enumerate(report.bot_names):
        times = sorted(move_times_ms(report, i))
        cpu = sorted(move_times_ms(report, i, cpu=True))
        games = sum(1 for g in report.games if i in g.seat_bots)
        cpu_cells = f" {percentile(cpu, 0.5):10.2f} {percentile(cpu, 0.99):7.2f}" if cpu else f" {'-':>10s} {'-':>7s}"
        lines.append(
            f"{name[:24]:24s} {games:5d} {tally.wins[i]:4d} {tally.draws[i]:4d} {tally.losses[i]:4d} {tally.forfeits[i]:8d}"
            f" {percentile(times, 0.5):11.2f} {percentile(times, 0.99):7.2f}" + cpu_cells
        )
    return lines


def package_bots(args: argparse.Namespace, specs: list[str], out: TextIO = sys.stdout) -> list[str | BotEndpoint]:
    """``specs`` with each bot package (referee/packages/load.py) built and made an endpoint, as a
    server would (its runtimes: ``--sandbox-from``'s); a line on ``out`` per package. BuildFailed
    (with its log's end) when a build fails."""
    from ..packages.load import Packages, is_package

    if not any(is_package(spec) for spec in specs):
        return list(specs)
    packages = Packages(settings_from_args(args), runtimes_from_args(args))
    made: dict[str, BotEndpoint] = {}

    async def make(spec: str) -> BotEndpoint:
        if spec not in made:
            bot = await packages.bot_from_path(spec)
            how = ("no build step" if bot.built is None else "found built" if bot.built.cached
                   else f"built in {bot.built.seconds:.1f} s")
            out.write(f"package {spec}: runtime {bot.runtime.name}, {how}; runs {shlex.join(bot.manifest.run)} "
                      f"in {bot.endpoint.cwd}\n")
            made[spec] = bot.endpoint
        return made[spec]

    async def make_all() -> list[str | BotEndpoint]:
        return [await make(spec) if is_package(spec) else spec for spec in specs]

    return run_main(make_all())


def cmd_match(args: argparse.Namespace) -> int:
    from ..match.run import run_match  # gRPC: for the commands that play, not for `referee --help`

    spec = spec_from_args(args, package_bots(args, args.bot))
    launcher = launcher_from_args(args)
    _logging(args.verbose, args.log_format)
    report = run_main(run_match(spec, launcher=launcher))
    for game in report.games:
        print(describe_game(game, report.bot_names, spec.options))
    print()
    print("\n".join(summary_lines(report)))
    print(f"bot logs: {report.logs_dir}" + (f"; records: {spec.records_dir}" if spec.records_dir else ""))
    return 0


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> list[str]:
    """The last ``lines`` lines of a bot's log, made safe to print: control characters escaped
    (a bot's output must not drive the terminal), long lines cut, only the file's end read."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - LOG_TAIL_BYTES))
            text = f.read().decode("utf-8", errors="replace")
    except OSError as exc:
        return [f"(cannot read {path.name}: {exc.strerror})"]
    return safe_lines(text.splitlines()[-lines:])


def safe_lines(lines: list[str]) -> list[str]:
    """Lines of a bot's (or a build's) output made safe to print: control characters escaped (it
    must not drive the terminal), long lines cut."""
    safe = ["".join(c if c.isprintable() else repr(c)[1:-1] for c in line) for line in lines]
    return [line if len(line) <= LOG_LINE_CHARS else line[:LOG_LINE_CHARS] + " ..." for line in safe]


def cmd_check(args: argparse.Namespace) -> int:
    """Conformance check: games against itself and against the built-in random bot (``--players``
    3 or 4: in every seat, then in one seat beside random bots). The bot logs
    go to ``--logs DIR`` when given, else to a temporary folder removed at the end; the output
    says which (a failing check prints the last lines of the failing bot's logs first). The match
    ids follow the seed (MatchSpec.seeded_match_id): a bot seeded from its game id replays its games."""
    from ..packages.build import BuildFailed

    random_bot = f"{sys.executable} -m referee.bots.builtin --seed {args.seed}"
    given = [*([args.package] if args.package else []), *(args.bot or [])]
    if len(given) != 1:
        raise UsageError("check takes exactly one bot: a PACKAGE, or one --bot")
    name, players = given[0], args.players or 2
    if args.individuals and players != 4:
        raise UsageError("--individuals is for 4 players (--players 4)")
    try:
        (candidate,) = package_bots(args, [name])
    except BuildFailed as failed:  # the check's verdict: the package cannot be played
        print(f"checking {name}")
        print("\nthe end of the build's log:")
        print("\n".join(f"  | {line}" for line in safe_lines(failed.log_tail.splitlines()[-LOG_TAIL_LINES:]))
              or "  (empty)")
        print(f"\nNOT CLEAN: {failed}")
        write_verdict(args.verdict, [str(failed)])
        return 1
    opponents = "bot" if players == 2 else "bots"
    # both matches' options are checked before anything is printed or started; with 3 or 4
    # players, the bot fills every seat, then one seat beside built-in random bots
    matches = [(title, checked, spec_from_args(args, bots)) for title, checked, bots in (
        ("against itself", list(range(players)), [candidate] * players),
        (f"against the built-in random {opponents}", [0], [candidate, *[random_bot] * (players - 1)]))]
    launcher = launcher_from_args(args)  # the sandbox the arena would use with the same settings
    _logging(args.verbose, args.log_format)
    with contextlib.ExitStack() as cleanup:
        try:
            if args.logs:
                return _check(args, candidate, matches, Path(args.logs), True, launcher)
            logs = cleanup.enter_context(tempfile.TemporaryDirectory(prefix="casino-check-"))
            return _check(args, candidate, matches, Path(logs), False, launcher)
        except CheckCannotRun as cannot:
            write_verdict(args.verdict, [], str(cannot))
            raise


def _check(args: argparse.Namespace, candidate: str | BotEndpoint, matches: list[tuple[str, list[int], MatchSpec]], logs: Path,
           kept: bool, launcher: Launcher) -> int:
    """Play each (title, the checked bot's indices, spec) match and report on the checked bot's seats."""
    from ..match.run import run_match  # gRPC: for the commands that play, not for `referee --help`

    problems: list[str] = []
    failing_logs: list[tuple[str, Path]] = []  # (which match, log) of the checked bot's failing processes
    print(f"checking {candidate.spec if isinstance(candidate, BotEndpoint) else candidate}")
    print("\n".join(sandbox_lines(launcher, matches[0][2].bots[0])))
    limited: list[str] = []  # what the sandbox limited of the checked bot
    for title, checked, spec in matches:
        spec = dataclasses.replace(spec, logs_dir=logs)
        report = run_main(run_match(spec, launcher=launcher))
        print(f"\n{len(report.games)} game(s) {title}:")
        failing: set[int] = set()
        for game in report.games:
            print("  " + describe_game(game, report.bot_names, spec.options).replace("\n", "\n  "))
            for f in game.result.failures:
                if game.seat_bots[f.seat] in checked:
                    problems.append(f"{F.Name(f.kind).removeprefix('FAILURE_KIND_').lower()}: {f.reason}")
                    failing.add(game.seat_bots[f.seat])
                elif f.kind == F.FAILURE_KIND_STARTUP:  # the referee's own bot: no verdict on the checked one
                    raise CheckCannotRun(f"the check could not run: its built-in opponent could not be started: "
                                         f"{f.reason}")
            errors = [e for e in game.record.get("bot_reports", [])
                      if game.seat_bots[e["seat"]] in checked and e.get("error")]
            if errors:  # the bot's own errors, which it answered around (its SDK's fallback)
                more = f" (and {len(errors) - 1} more in this game)" if len(errors) > 1 else ""
                print(f"    P{errors[0]['seat']}: bot error at play {errors[0]['play'] + 1}: {errors[0]['error']}{more}")
                problems += [f"bot error: {e['error']}" for e in errors]
                failing.update(game.seat_bots[e["seat"]] for e in errors)
        failing_logs += [(title, report.logs_dir / f"bot{b}.log") for b in sorted(failing)]
        limited += [f"{title}: {line}" for name, line in getattr(launcher, "notes", [])
                    if name in {f"bot{b}.log" for b in checked}]
        if isinstance(launcher, SandboxLauncher):
            launcher.notes.clear()
        times = sorted(t for b in checked for t in move_times_ms(report, b))
        if times:
            print(f"  move time ms: p50 {percentile(times, 0.5):.2f}, p90 {percentile(times, 0.9):.2f}, "
                  f"p99 {percentile(times, 0.99):.2f}, max {times[-1]:.2f} over {len(times)} moves (limit {args.move_time})")
        cpu = sorted(t for b in checked for t in move_times_ms(report, b, cpu=True))
        if cpu:
            limit = f"limit {args.cpu_time}" if args.cpu_time else "no limit"
            print(f"  CPU time ms:  p50 {percentile(cpu, 0.5):.2f}, p90 {percentile(cpu, 0.9):.2f}, "
                  f"p99 {percentile(cpu, 0.99):.2f}, max {cpu[-1]:.2f} over {len(cpu)} moves ({limit})")
        if kept:
            print(f"  bot logs: {report.logs_dir}")
    if not kept:  # where they were, so a reader never looks for them in vain
        print(f"\nbot logs: in {logs} while the check ran, deleted at its end (--logs DIR keeps them)" + (
            "; the last lines of each failing process's log:" if failing_logs else ""))
        for title, path in failing_logs:
            print(f"  {path.name}, {title}:")
            print("\n".join(f"    | {line}" for line in log_tail(path)) or "    (empty)")
    if isinstance(launcher, SandboxLauncher):
        print("\nlimits reached: " + ("none" if not limited else f"{len(limited)} time(s)"))
        for line, count in Counter(limited).most_common():
            print(f"  {count} x {line}")
    write_verdict(args.verdict, problems)
    if problems:
        print(f"\nNOT CLEAN: {len(problems)} failure(s):")
        for kind, count in Counter(problems).most_common():
            print(f"  {count} x {kind}")
        return 1
    print("\nclean: every answer was a legal move in time")
    return 0


class CheckCannotRun(UsageError):
    """A check that could not judge the bot (the referee's own opponent did not start): one line,
    exit 2, never "clean"."""


def write_verdict(path: str | None, problems: list[str], cannot_run: str | None = None) -> None:
    """The check's verdict as data (``--verdict FILE``; the web's submission check reads it):
    ``{"format": "royal-casino-check", "version": 1, "clean", "problems": [{"problem", "count"}],
    "could_not_run"}``."""
    if path is None:
        return
    import json

    verdict = {"format": "royal-casino-check", "version": 1, "clean": not problems and cannot_run is None,
               "problems": [{"problem": p, "count": n} for p, n in Counter(problems).most_common()],
               "could_not_run": cannot_run}
    Path(path).write_text(json.dumps(verdict, indent=1) + "\n", encoding="utf-8")


def sandbox_lines(launcher: Launcher, endpoint: BotEndpoint) -> list[str]:
    """How the checked bot is confined, as ``referee check`` prints it."""
    if isinstance(launcher, SandboxLauncher):
        lines = launcher.describe(endpoint)
    elif endpoint.is_process:
        lines = [("sandbox: none: the bot runs as this user with the referee's environment, files and network, "
                  "no limits but its log's")]
    else:
        lines = []
    if not endpoint.is_process:
        lines = ["sandbox: none for this bot: it is reached at an address, not started by the referee"]
    return [lines[0], *(f"  {line}" for line in lines[1:])] if lines else []


def _logging(verbose: bool, log_format: str = "text") -> None:
    configure_logging(log_format, logging.INFO if verbose else logging.ERROR, "%(asctime)s %(name)s %(message)s")
