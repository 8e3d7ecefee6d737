"""The ``referee`` command line: play a demo game, perft, replay records."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

# Light at module level: the arena's commands import this module (add_metrics_argument), and its
# --help must not pay for the engine, gRPC, protobuf or prometheus_client. The parser's modules
# are imported by build_parser, each command's by the command (docs/benchmarks.md, "Commands
# that answer at once").
from ..bots.faults import as_platform_fault
from ..errors import EXIT_USAGE, PlatformFault, RefereeError, one_line
from ..logs import add_log_format_arg
from ..logs import configure as configure_logging

if TYPE_CHECKING:
    from ..rules import RuleOptions


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exits 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _usage_error(message: str, status: int = EXIT_USAGE) -> NoReturn:
    sys.stderr.write(f"referee: error: {message}\n")
    raise SystemExit(status)


def _platform_fault(fault: PlatformFault | None) -> NoReturn:
    """A run the platform stopped: one line naming what it lacked, exit 4 (no bot is to blame)."""
    assert fault is not None
    _usage_error(one_line(f"platform fault ({fault.condition}): {fault}; no bot is to blame (the game it "
                          "stopped is not recorded)"), fault.exit_status)


def _options(args: argparse.Namespace) -> RuleOptions:
    from ..rules import RuleOptions

    return RuleOptions(players=args.players, partnerships=not args.individuals)


def _read_deck(path: str) -> tuple[int, ...]:
    from ..rules import parse_deck
    from .files import read_text_file
    from .match import MAX_DECK_BYTES

    return parse_deck(read_text_file(path, "deck file", MAX_DECK_BYTES))


def cmd_play(args: argparse.Namespace) -> int:
    """Play one seeded game between two built-in random players and print it move by move."""
    from ..players import RandomPlayer
    from ..rules import apply, game_record, new_game
    from .render import deal_header, describe_result, describe_sheet, play_line

    options = _options(args)
    record_file = None
    if args.record:  # opened first: an unwritable path is a usage error before any output
        try:
            record_file = open(args.record, "w", encoding="utf-8")
        except OSError as exc:
            _usage_error(f"cannot write record {args.record}: {exc.strerror or exc}")
    state = new_game(options, seed=args.seed)
    players = [RandomPlayer(args.seed * 31 + seat) for seat in range(options.players)]
    out = sys.stdout
    deal = -1
    while not state.is_over:
        if state.deal != deal:
            deal = state.deal
            out.write(deal_header(state) + "\n")
        move = players[state.to_move].choose(state)
        out.write(play_line(state, str(move)) + "\n")
        before = state
        state = apply(state, move)
        if state.deal != before.deal or state.is_over:
            out.write("\n".join(describe_sheet(state.sheets[before.deal], options.teams)) + "\n\n")
    assert state.result is not None
    out.write(describe_result(state.result, options.teams) + "\n")
    if record_file is not None:
        with record_file:
            record_file.write(json.dumps(game_record(state), indent=1) + "\n")
        out.write(f"record written to {args.record}\n")
    return 0


def cmd_perft(args: argparse.Namespace) -> int:
    """Count play sequences from the first deal of a deck file."""
    from ..perft import perft, perft_divide
    from ..rules import GameState, new_game

    if args.depth < 0:
        _usage_error("--depth must be 0 or more")
    state: GameState = new_game(_options(args), decks=[_read_deck(args.deck)])
    if args.divide:
        total = 0
        for move, count in perft_divide(state, args.depth) if args.depth else []:
            print(f"{move}: {count}")
            total += count
        print(f"total: {total if args.depth else 1}")
    else:
        print(perft(state, args.depth))
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    """Re-check a game record against the engine and print it."""
    from .files import read_text_file
    from .match import MAX_RECORD_BYTES
    from .render import record_lines

    text = read_text_file(args.file, "record", MAX_RECORD_BYTES)
    try:
        record = json.loads(text)
    except ValueError as exc:  # JSONDecodeError, or an integer of more than 4300 digits
        _usage_error(f"record {args.file} is not JSON: {exc}")
    except RecursionError:  # e.g. "[" * 100000: no record nests that deep
        _usage_error(f"record {args.file} is not a record: its JSON nests too deeply")
    print("\n".join(record_lines(record)))
    print("record checked: every play legal, every sheet and the result match")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the Referee service until interrupted."""
    import logging

    from ..loop import run_main
    from ..metrics import serve_metrics, with_loop_watch
    from ..service.server import serve
    from ..service.settings import ServiceSettings
    from .files import make_folder
    from .sandbox_args import launcher_from_args

    configure_logging(args.log_format, logging.INFO if args.verbose else logging.WARNING, "%(asctime)s %(name)s %(message)s")
    settings = ServiceSettings.load(
        token_file=args.token_file, token_env=args.token_env, tls_cert=args.tls_cert, tls_key=args.tls_key,
        tls_client_ca=args.tls_client_ca, bots=args.bot or (), allow_addresses=args.allow_address or (),
        listen=args.listen, allow_commands=args.allow_commands, reflection=True if args.reflection else None,
        max_matches=args.max_matches, max_games=args.max_games, max_record_bytes=args.max_record_bytes,
    )
    records = make_folder(args.records, "records folder") if args.records else None
    launcher = launcher_from_args(args)  # bots a client names by command run in this sandbox
    if args.metrics_listen:
        serve_metrics(args.metrics_listen, "referee")
    # a ListenError reaches main(): one line, exit 2
    run_main(with_loop_watch(serve(settings, records_dir=records, launcher=launcher,
                                      health_listen=args.health_listen)))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """A short match between each pair of sample bots."""
    from ..clock import MAX_TIME_MS
    from ..match.spec import MAX_GAMES
    from .demo import run_demo

    if not 1 <= args.games <= MAX_GAMES or not 1 <= args.move_time <= MAX_TIME_MS:
        _usage_error(f"--games must be 1 to {MAX_GAMES} and --move-time 1 to {MAX_TIME_MS}")
    return run_demo(args.games, args.move_time, args.seed)


def cmd_runtimes(args: argparse.Namespace) -> int:
    """What ``referee runtimes`` prints: every runtime a package may name here."""
    import json

    from ..packages.runtimes import describe, install_node_packages, offered
    from .sandbox_args import runtimes_from_args

    if args.install and (problem := install_node_packages()) is not None:
        print(f"referee: warning: the node runtime's packages: {problem}", file=sys.stderr)
    runtimes = runtimes_from_args(args)
    if args.format == "json":
        listed = [{**r.to_dict(), "offers": list(offered(r))} for r in runtimes.values()]
        print(json.dumps({"runtimes": listed}, indent=2))
    else:
        print("\n".join(describe(runtimes)))
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .health import add_health_args, cmd_health
    from .match import add_match_args, cmd_check, cmd_match
    from .sandbox_args import add_sandbox_args

    parser = _Parser(prog="referee", description="Royal Casino referee: rules engine tools.")
    add_log_format_arg(parser)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def table_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--players", type=int, choices=(2, 3, 4), default=2, help="2, 3 or 4 players (default 2)")
        p.add_argument("--individuals", action="store_true", help="4 players play for themselves, not in partnerships")

    p = sub.add_parser("play", help="play one seeded game between built-in random players, move by move")
    table_args(p)
    p.add_argument("--seed", type=int, default=1, help="seed for the deal and the players (default 1)")
    p.add_argument("--record", metavar="FILE", help="also write the game record (JSON) to FILE")
    p.set_defaults(func=cmd_play)

    p = sub.add_parser("perft", help="count distinct play sequences from the first deal of a deck")
    table_args(p)
    p.add_argument("--deck", required=True, metavar="FILE", help="52 card codes in dealing order")
    p.add_argument("--depth", required=True, type=int, help="number of plays")
    p.add_argument("--divide", action="store_true", help="print each first play with its count")
    p.set_defaults(func=cmd_perft)

    p = sub.add_parser("match", help="play games between bots over gRPC and print results")
    add_match_args(p)
    add_sandbox_args(p)
    p.set_defaults(func=cmd_match)

    p = sub.add_parser("check", help="conformance check of a bot: games against itself and a random bot")
    p.add_argument("package", nargs="?", metavar="PACKAGE",
                   help="the bot package to check (a folder with bot.toml, or a .tar.gz): built and run as a "
                        "server would (docs/packages.md); or give --bot")
    p.add_argument("--bot", action="append", metavar="CMD_OR_ADDR_OR_PACKAGE", help="the bot to check")
    p.add_argument("--verdict", metavar="FILE", help="also write the verdict as JSON to FILE (clean, the problems "
                   "counted, or why the check could not run): what a program reads instead of the output")
    add_match_args(p, bots=False,
                   logs_help="keep the bot logs here (default: not kept; a failing check prints their end)")
    add_sandbox_args(p)
    p.set_defaults(func=cmd_check)
    for action in p._actions:
        if action.dest == "games":
            action.default, action.help = 2, "games against each opponent (default 2)"

    p = sub.add_parser("serve", help="run the Referee gRPC service (docs/service.md)")
    add_serve_args(p)
    add_sandbox_args(p)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("demo", help="a short match between each pair of sample bots, with standings")
    p.add_argument("--games", type=int, default=2, help="games per pair (default 2)")
    p.add_argument("--move-time", type=int, default=200, metavar="MS", help="per-move limit (default 200)")
    p.add_argument("--seed", type=int, default=1)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("runtimes", help="the runtimes bot packages may name here: versions, packages, what "
                                        "their bots see (docs/packages.md)")
    p.add_argument("--sandbox-from", metavar="TOURNAMENT_FILE",
                   help="with the runtimes of this tournament file's [runtimes] tables")
    p.add_argument("--install", action="store_true",
                   help="install what the default runtimes need first (the node runtime's packages: npm ci)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=cmd_runtimes)

    p = sub.add_parser("health", help="one gRPC health check of a Referee service or a bot: exit 0 when SERVING")
    add_health_args(p)
    p.set_defaults(func=cmd_health)

    p = sub.add_parser("replay", help="re-check a game record against the rules and print it")
    p.add_argument("file", metavar="FILE")
    p.set_defaults(func=cmd_replay)
    return parser


def add_serve_args(p: argparse.ArgumentParser) -> None:
    """The options of ``referee serve``; their defaults are ServiceSettings' (docs/service.md)."""
    from ..service import settings as service

    def size(text: str) -> int:
        try:
            return service.parse_size(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    p.add_argument("--listen", default=service.DEFAULT_LISTEN, metavar="ADDR",
                   help=f"host:port or unix:/path (default {service.DEFAULT_LISTEN}); another than loopback needs "
                        "a token or client certificates")
    p.add_argument("--records", metavar="DIR", help="keep game records here (default: a temporary folder)")
    p.add_argument("--token-file", metavar="FILE",
                   help="clients must send this file's token (authorization: Bearer ...)")
    p.add_argument("--token-env", metavar="VAR", help="... or the token in environment variable VAR")
    p.add_argument("--tls-cert", metavar="FILE", help="serve TLS with this certificate chain (PEM)")
    p.add_argument("--tls-key", metavar="FILE", help="the private key of --tls-cert (PEM)")
    p.add_argument("--tls-client-ca", metavar="FILE",
                   help="mutual TLS: clients must show a certificate signed by this CA (PEM)")
    p.add_argument("--bot", action="append", metavar="NAME=CMD_OR_ADDR",
                   help="one of the server's own bots, which clients name by NAME (repeatable)")
    p.add_argument("--allow-address", action="append", metavar="ADDR",
                   help="a bot address (host:port, unix:/path) clients may name, exactly as written (repeatable)")
    p.add_argument("--allow-commands", action="store_true",
                   help="let clients name bot commands (cmd:...) for the referee to start; needs authentication")
    p.add_argument("--reflection", action="store_true",
                   help="serve reflection even when authentication is required (it then needs it too)")
    p.add_argument("--max-matches", type=int, default=service.DEFAULT_MAX_MATCHES, metavar="N",
                   help=f"RunMatch calls played at once; more are refused (default {service.DEFAULT_MAX_MATCHES})")
    p.add_argument("--max-games", type=int, default=service.DEFAULT_MAX_GAMES, metavar="N",
                   help=f"games one RunMatch call may ask for (default {service.DEFAULT_MAX_GAMES})")
    p.add_argument("--max-record-bytes", type=size, default=service.DEFAULT_MAX_RECORD_BYTES, metavar="SIZE",
                   help="what the records folder (records and bot logs) may hold, e.g. 500M, 2G (default 1G)")
    p.add_argument("--health-listen", metavar="HOST:PORT",
                   help="also answer health checks (grpc.health.v1 only) on this plaintext port: for probes "
                        "that cannot speak TLS, e.g. Kubernetes' gRPC probes")
    add_metrics_argument(p)
    p.add_argument("-v", "--verbose", action="store_true")


def add_metrics_argument(p: argparse.ArgumentParser) -> None:
    """``--metrics-listen HOST:PORT`` of every long-running command (docs/operations.md)."""
    p.add_argument("--metrics-listen", metavar="HOST:PORT",
                   help="serve Prometheus metrics at http://HOST:PORT/metrics (docs/operations.md; default: off)")


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM ends the command like Ctrl-C, so matches stop their bots on the way out."""
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from ..rules import RulesError  # after parsing: --help never needs the engine
    if args.log_format == "json":  # every command's records as JSON (text: as each command sets up, as before)
        configure_logging("json", logging.WARNING, "")
    signal.signal(signal.SIGTERM, _terminate)
    try:
        return int(args.func(args))
    except RulesError as exc:  # a bad move, deck or record
        _usage_error(str(exc))
    except (PlatformFault, MemoryError) as exc:  # the platform's (disk, descriptors, sandbox...): exit 4
        _platform_fault(as_platform_fault(exc, "the referee"))
    except OSError as exc:  # the referee's own descriptors, disk or memory, wherever they ran out
        if (fault := as_platform_fault(exc, "the referee")) is None:
            raise
        _platform_fault(fault)
    except RefereeError as exc:  # a bad option, endpoint or address: its own exit status
        _usage_error(str(exc), exc.exit_status)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
