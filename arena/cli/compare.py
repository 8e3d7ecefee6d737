"""``arena compare`` and ``arena gauntlet``: the command-line side of arena/compare.py.

Exit status of ``compare``: 0 when H1 is accepted (the candidate is better by at least the upper
bound), 1 when H0 is accepted, 3 when it stopped without a decision, 2 on usage errors (and with
``--queue`` when the workers could not play the games: none alive, the database lost); a
fixed-length run (``--units``) and ``--sprt-estimate`` exit 0.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError, shown
from .console import PROG, make_console

# The games' machinery (the referee's: gRPC, protobuf, prometheus_client), rich and the
# statistics are imported by the commands, not here: `arena --help` and `arena compare --help`
# only build the parsers.
if TYPE_CHECKING:
    from rich.console import Console

    from ..play.compare import CompareSpec, Comparison, PairResult
    from ..rating.stats import SprtBounds

DEFAULT_BOUNDS = {"deals": (0.0, 0.5), "games": (0.0, 20.0)}  # points per deal; Elo
DEFAULT_MAX_UNITS = {"deals": 20_000, "games": 4_000}
EXIT = {"H1": 0, "H0": 1, "inconclusive": 3, "done": 0}


def add_compare_parser(sub: Any) -> None:
    p = sub.add_parser("compare", help="is the candidate better than the baseline? a sequential test on duplicate pairs")
    p.add_argument("--candidate", required=True, help="command line or address of the new bot, or inprocess:PATH.py[:CLASS] (trusted Python SDK code, "
                   "played in worker processes: docs/protocol.md, \"In-process bots\")")
    p.add_argument("--baseline", required=True, help="command line, address or inprocess:PATH.py[:CLASS] of the bot to beat")
    _shared(p)
    p.add_argument("--margin0", type=float, help="deals: H0 bound, points per deal (default 0)")
    p.add_argument("--margin1", type=float, help="deals: H1 bound, points per deal (default 0.5)")
    p.add_argument("--elo0", type=float, help="games: H0 bound in Elo (default 0)")
    p.add_argument("--elo1", type=float, help="games: H1 bound in Elo (default 20)")
    p.add_argument("--alpha", type=float, default=0.05, help="false acceptance of H1 (default 0.05)")
    p.add_argument("--beta", type=float, default=0.05, help="false acceptance of H0 (default 0.05)")
    p.add_argument("--max-units", type=int, help="stop inconclusive after this many games (default 20000 deals / 4000 games)")
    p.add_argument("--units", type=int, help="fixed length: play exactly this many games (no early stop) and report intervals")
    p.add_argument("--pairing", choices=["duplicate", "independent"], default="duplicate",
                   help="independent: the pair's two games get different decks (for measurements)")
    p.add_argument("--sprt-estimate", action="store_true",
                   help="print the expected number of units for the bounds and --true-effect, play nothing")
    p.add_argument("--true-effect", type=float, help="with --sprt-estimate: the assumed true margin (deals) or Elo (games)")
    p.add_argument("--variance", type=float, help="with --sprt-estimate: the pair statistic's variance (needed for deals)")
    p.set_defaults(func=cmd_compare)


def add_gauntlet_parser(sub: Any) -> None:
    p = sub.add_parser("gauntlet", help="the candidate against several reference bots, in duplicate pairs")
    p.add_argument("--candidate", required=True)
    p.add_argument("--opponent", action="append", required=True, metavar="NAME=CMD_OR_ADDR",
                   help="a reference bot (repeat for each)")
    _shared(p)
    p.add_argument("--units", type=int, default=200, help="games against each opponent (default 200)")
    p.set_defaults(func=cmd_gauntlet)


def _shared(p: argparse.ArgumentParser) -> None:
    p.add_argument("--unit", choices=["deals", "games"], default="deals",
                   help="deals: one-deal games, point margin (default); games: full games, pentanomial")
    p.add_argument("--players", type=int, choices=[2, 4], default=2, help="4: two copies of each bot as a team")
    p.add_argument("--concurrency", type=int, help="games at once (default: the CPU cores this process may use; "
                   "more than that makes the bots share cores, and the clock then measures the other games too; "
                   "with --queue it is each worker's own)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--move-time", type=int, default=1000, help="ms per move (default 1000)")
    p.add_argument("--json", metavar="FILE", help="write the report as JSON")
    p.add_argument("--logs", metavar="DIR", help="keep the bots' logs here (default: a temporary folder, removed "
                   "at the end)")
    p.add_argument("--queue", action="store_true", help="have `arena worker` processes play the games, through the "
                   "job queue of --db (PostgreSQL; docs/scale-out.md)")
    p.add_argument("--db", "--database", dest="db", metavar="URL",
                   help="with --queue: the workers' database, postgresql://user@host/name")
    p.add_argument("--window", type=int, metavar="N", help="with --queue: games in the queue at once (default: 4 per live "
                   "worker; at least the workers' total --concurrency keeps them all busy)")


def _bounds(args: argparse.Namespace) -> SprtBounds:
    from ..rating.stats import SprtBounds

    lower_name, upper_name = ("margin0", "margin1") if args.unit == "deals" else ("elo0", "elo1")
    wrong = ("elo0", "elo1") if args.unit == "deals" else ("margin0", "margin1")
    for name in wrong:
        if getattr(args, name) is not None:
            raise UsageError(f"--{name} is for --unit {'games' if args.unit == 'deals' else 'deals'}; "
                             f"with --unit {args.unit} use --{lower_name} and --{upper_name}")
    lower = getattr(args, lower_name)
    upper = getattr(args, upper_name)
    lower = DEFAULT_BOUNDS[args.unit][0] if lower is None else lower
    upper = DEFAULT_BOUNDS[args.unit][1] if upper is None else upper
    try:
        return SprtBounds(lower, upper, args.alpha, args.beta)
    except ValueError as exc:
        raise UsageError(f"bad bounds: {exc}") from None


def _check_common(args: argparse.Namespace) -> None:
    from referee.clock import MAX_TIME_MS

    from ..cores import available_cores, oversubscription_warning

    if not 1 <= args.move_time <= MAX_TIME_MS:
        raise UsageError(f"--move-time must be 1 to {MAX_TIME_MS} ms, not {args.move_time}")
    if args.queue:
        _check_queue(args)
        return
    if args.db is not None or args.window is not None:
        raise UsageError(f"{'--db' if args.db is not None else '--window'} is for --queue (games played by "
                         "arena worker processes)")
    if args.concurrency is None:
        args.concurrency = available_cores()
    if args.concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1, not {args.concurrency}")
    warning = oversubscription_warning(args.concurrency, available_cores())
    if warning:  # one line on stderr, as arena run says it
        sys.stderr.write(f"{PROG}: warning: {warning}\n")


def _check_queue(args: argparse.Namespace) -> None:
    """--queue: a PostgreSQL --db, and none of what the workers decide (games at once, bot logs)."""
    from ..play.queue import require_postgresql

    if args.concurrency is not None:
        raise UsageError("--concurrency is the workers' with --queue (arena worker --concurrency N); "
                         "--window sets the games queued at once")
    if args.logs is not None:
        raise UsageError("--logs is the workers' with --queue (arena worker --logs DIR)")
    if args.db is None:
        raise UsageError("--queue needs --db postgresql://user@host/name (the database the workers play from)")
    if args.window is not None and args.window < 1:
        raise UsageError(f"--window must be at least 1, not {args.window}")
    require_postgresql(args.db, f"arena {args.command} --queue", hint="--db postgresql://user@host/name")


def live_line(comparison: Comparison) -> str:
    """One line of the state of a comparison: pairs, statistic, LLR against its bounds, estimate."""
    spec = comparison.spec
    n = len(comparison.pairs)
    parts = [f"pairs {n}"]
    if spec.unit == "deals":
        mean = sum(p.value for p in comparison.pairs) / n if n else 0.0
        parts.append(f"margin {mean:+.2f}/deal")
    else:
        scores = [s for p in comparison.pairs for s in p.game_scores]
        w, d = scores.count(1.0), scores.count(0.5)
        penta = [0] * 5
        for p in comparison.pairs:
            penta[round(sum(p.game_scores) * 2)] += 1
        parts.append(f"W-D-L {w}-{d}-{len(scores) - w - d}")
        parts.append("penta " + "-".join(map(str, penta)))
    test = comparison.test
    if test is not None:
        parts.append(f"LLR {test.llr():+.2f} ({spec.bounds.llr_lower:+.2f}, {spec.bounds.llr_upper:+.2f})")  # type: ignore[union-attr]
        if n >= 2:
            est, low, high = test.estimate()
            unit = "pts/deal" if spec.unit == "deals" else "Elo"
            parts.append(f"{est:+.2f} {unit} [{low:+.2f}, {high:+.2f}]" if spec.unit == "deals"
                         else f"{est:+.0f} {unit} [{low:+.0f}, {high:+.0f}]")
    return " | ".join(parts)


async def _run(spec: CompareSpec, console: Console, logs: Path, every: int = 0,
               args: argparse.Namespace | None = None) -> Comparison:
    """Play the comparison in this process, or with ``args.queue`` through the job queue of
    ``args.db`` (arena/play/queue_executor.py), ``args.window`` games at once."""
    from ..play.compare import Comparison
    from ..play.executor import GameExecutor, InProcessExecutor

    executor: GameExecutor
    if args is not None and args.queue:
        from ..play.compare import compare_settings
        from ..play.queue_executor import QueueExecutor, default_window, run_name

        queued = QueueExecutor(args.db, run_name(spec.label), [spec.candidate, spec.baseline],
                               compare_settings(spec), what=f"arena {args.command} --queue")
        executor = queued
        try:
            live = await queued.open()
        except BaseException:
            await queued.close()
            raise
        spec = dataclasses.replace(spec, concurrency=args.window or default_window(live))
        console.print(f"queued on {queued.store.url_for_people if queued.store else args.db} as {queued.name}: "
                      f"{spec.concurrency} games at once, {live} live worker(s)", soft_wrap=True, highlight=False)
    elif spec.candidate.endpoint.inprocess and spec.baseline.endpoint.inprocess:
        from ..play.pool import WorkerPoolExecutor  # whole games on one worker process per game at once

        executor = WorkerPoolExecutor(InProcessExecutor(logs), spec.concurrency, logs)
    else:
        executor = InProcessExecutor(logs)
    shown = {"at": 0.0}

    def on_pair(comparison: Comparison, pair: PairResult) -> None:
        now = time.monotonic()
        n = len(comparison.pairs)
        if console.is_terminal:
            if now - shown["at"] > 0.25 or comparison.decision:
                shown["at"] = now
                console.print(live_line(comparison), end="\r", soft_wrap=True, highlight=False)
        elif every and n % every == 0:
            console.print(live_line(comparison), soft_wrap=True, highlight=False)

    comparison = Comparison(spec, executor, on_pair)
    try:
        await comparison.run()
    finally:
        await executor.close()
    if console.is_terminal:
        console.print()
    return comparison


def _write_json(path: str | None, report: dict[str, Any]) -> None:
    if path:
        try:
            Path(path).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {shown(path)}: {exc.strerror}") from None


def cmd_compare(args: argparse.Namespace) -> int:
    from referee.clock import TimeControl
    from referee.loop import run_main

    from ..play.compare import CompareSpec, endpoint_bot
    from ..rating.stats import expected_units

    _check_common(args)
    bounds = _bounds(args)
    console = make_console()
    if args.sprt_estimate:
        if args.true_effect is None:
            raise UsageError("--sprt-estimate needs --true-effect (margin per deal, or Elo)")
        if args.unit == "deals" and args.variance is None:
            raise UsageError("--sprt-estimate with --unit deals needs --variance (the pair margin's variance; "
                             "docs/benchmarks.md has measured values)")
        est = expected_units(args.unit, bounds, args.true_effect, args.variance)
        console.print(f"bounds [{bounds.lower:g}, {bounds.upper:g}] ({'points per deal' if args.unit == 'deals' else 'Elo'}), "
                      f"alpha {bounds.alpha:g}, beta {bounds.beta:g}; true effect {args.true_effect:g}, "
                      f"pair variance {est['variance']:.4g}", soft_wrap=True)
        console.print(f"P(accept H1) = {est['p_h1']:.3f}; expected pairs {est['pairs']:.0f} = "
                      f"{est['games']:.0f} {'one-deal games' if args.unit == 'deals' else 'games'}", soft_wrap=True)
        _write_json(args.json, {"format": "royal-casino-sprt-estimate", "version": 1, "bounds": {
            "lower": bounds.lower, "upper": bounds.upper, "alpha": bounds.alpha, "beta": bounds.beta}, **est})
        return 0
    if args.units is not None and args.units < 1:
        raise UsageError(f"--units must be at least 1, not {args.units}")
    if args.max_units is not None and args.max_units < 2:
        raise UsageError(f"--max-units must be at least 2, not {args.max_units}")
    spec = CompareSpec(
        candidate=endpoint_bot("candidate", args.candidate), baseline=endpoint_bot("baseline", args.baseline),
        unit=args.unit, players=args.players, bounds=None if args.units else bounds, units=args.units or 0,
        max_units=args.max_units or DEFAULT_MAX_UNITS[args.unit], seed=args.seed,
        concurrency=args.concurrency or 1,  # --queue: the window, set once the workers are known (_run)
        pairing=args.pairing, time_control=TimeControl(move_time_ms=args.move_time),
    )
    mode = f"fixed length, {args.units} games" if args.units else (
        f"SPRT [{bounds.lower:g}, {bounds.upper:g}] {'points per deal' if args.unit == 'deals' else 'Elo'}, "
        f"alpha {bounds.alpha:g}, beta {bounds.beta:g}, at most {spec.max_units} games")
    console.print(f"compare: {args.candidate!r} against {args.baseline!r}; unit {args.unit} ({args.pairing} pairs), "
                  f"{args.players} players; {mode}", soft_wrap=True, highlight=False)
    with _logs_folder(args.logs, "arena-compare-") as logs:
        comparison = run_main(_run(spec, console, logs, every=10, args=args))
    report = comparison.report()
    console.print(live_line(comparison), soft_wrap=True, highlight=False)
    _print_verdict(console, comparison, report)
    _print_logs(console, args.logs, bool(report["failures"]))
    _write_json(args.json, report)
    return EXIT[comparison.status()]


@contextlib.contextmanager
def _logs_folder(kept: str | None, prefix: str) -> Iterator[Path]:
    """``--logs DIR`` when given (made if missing), else a temporary folder removed afterwards."""
    if kept:
        try:
            Path(kept).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create --logs folder {kept}: {exc.strerror}") from None
        yield Path(kept)
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as logs:
        yield Path(logs)


def _print_logs(console: Console, kept: str | None, failures: bool) -> None:
    """Where the bots' logs are, or, when bots failed, how to keep them next time."""
    if kept:
        console.print(f"bot logs: {kept}", soft_wrap=True, highlight=False)
    elif failures:
        console.print("bot logs were not kept: run again with --logs DIR to read them", highlight=False)


def _print_verdict(console: Console, comparison: Comparison, report: dict[str, Any]) -> None:
    spec = comparison.spec
    stats = report["statistics"]
    what = "points per deal" if spec.unit == "deals" else "Elo"
    if spec.unit == "deals" and stats:
        estimate = f"mean margin {stats.get('mean', 0):+.3f} {what}"
    elif stats:
        estimate = f"Elo {stats.get('elo', 0):+.1f}"
    else:
        estimate = "no pairs"
    ci = (stats.get("ci") if spec.unit == "deals" else stats.get("elo_ci")) if stats else None
    if ci and ci[0] is not None:
        estimate += f", 95% interval [{ci[0]:+.3f}, {ci[1]:+.3f}]" if spec.unit == "deals" else f", 95% interval [{ci[0]:+.1f}, {ci[1]:+.1f}]"
    status = comparison.status()
    verdict = {
        "H1": f"H1 accepted: the candidate is better by at least {spec.bounds.upper:g} {what}" if spec.bounds else "",
        "H0": f"H0 accepted: the candidate is not better than {spec.bounds.lower:g} {what}" if spec.bounds else "",
        "inconclusive": "stopped without a decision (limit reached)",
        "done": "fixed length: no test, estimate only",
    }[status]
    console.print(f"{verdict}; {report['pairs']} pairs, {report['games']} games, {report['cards_dealt']} cards dealt; "
                  f"{estimate}; {report['games_per_s']} games/s", soft_wrap=True, highlight=False)
    for failure in report["failures"][:10]:
        console.print(f"  failure: {failure}", soft_wrap=True, highlight=False)


def _opponents(values: list[str]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for value in values:
        name, sep, spec = value.partition("=")
        if not sep or not name.strip() or not spec.strip():
            raise UsageError(f"--opponent must be NAME=CMD_OR_ADDR, not {value!r}")
        if name.strip() in {n for n, _ in out} or name.strip() == "candidate":
            raise UsageError(f"opponent name {name.strip()!r} is used twice (or is 'candidate')")
        out.append((name.strip(), spec.strip()))
    return out


def cmd_gauntlet(args: argparse.Namespace) -> int:
    from rich.table import Table

    from referee.clock import TimeControl
    from referee.loop import run_main

    from ..play.compare import CompareSpec, endpoint_bot
    from ..rating.ratings import RatingBook
    from ..rating.stats import fixed_length_summary

    _check_common(args)
    if args.units < 2:
        raise UsageError(f"--units must be at least 2, not {args.units}")
    opponents = _opponents(args.opponent)
    console = make_console()
    candidate = endpoint_bot("candidate", args.candidate)
    rows: list[dict[str, Any]] = []
    all_values: list[float] = []
    book = RatingBook()
    console.print(f"gauntlet: {args.candidate!r} against {', '.join(n for n, _ in opponents)}; "
                  f"{args.units} {args.unit} each in duplicate pairs", soft_wrap=True, highlight=False)
    with _logs_folder(args.logs, "arena-gauntlet-") as logs:
        for k, (name, spec_text) in enumerate(opponents):
            spec = CompareSpec(candidate=candidate, baseline=endpoint_bot(name, spec_text), unit=args.unit,
                               players=args.players, bounds=None, units=args.units, seed=args.seed + 7919 * k,
                               concurrency=args.concurrency or 1, time_control=TimeControl(move_time_ms=args.move_time),
                               label=f"gauntlet-{k + 1}")
            comparison = run_main(_run(spec, console, logs / name, args=args))
            report = comparison.report()
            if args.players == 2:
                for pair in comparison.pairs:
                    for outcome in pair.outcomes:
                        book.update(outcome)
            all_values += [p.value for p in comparison.pairs]
            rows.append({"opponent": name, "command": spec_text, **{key: report[key] for key in (
                "pairs", "games", "wins", "draws", "losses", "pentanomial", "mean_margin", "statistics", "failures")}})
            console.print(f"  {name}: {live_line(comparison)}", soft_wrap=True, highlight=False)
    overall = fixed_length_summary(args.unit, all_values)
    table = Table(title="gauntlet")
    for column in ("opponent", "games", "W", "D", "L", "margin/deal" if args.unit == "deals" else "Elo", "95% interval"):
        table.add_column(column, justify="left" if column == "opponent" else "right")
    for row in rows + [{"opponent": "overall", **_overall_row(rows, overall)}]:
        stats = row["statistics"]
        value = stats.get("mean") if args.unit == "deals" else stats.get("elo")
        ci = (stats.get("ci") if args.unit == "deals" else stats.get("elo_ci")) or [None, None]
        fmt = "{:+.2f}" if args.unit == "deals" else "{:+.0f}"
        table.add_row(row["opponent"], str(row["games"]), str(row["wins"]), str(row["draws"]), str(row["losses"]),
                      fmt.format(value) if value is not None else "-",
                      f"[{fmt.format(ci[0])}, {fmt.format(ci[1])}]" if ci[0] is not None else "-")
    console.print(table)
    _print_logs(console, args.logs, any(row["failures"] for row in rows))
    ratings = book.ratings()
    if ratings:
        console.print("TrueSkill after the run: " + ", ".join(
            f"{name} {r.mu:.1f}±{r.sigma:.1f}" for name, r in sorted(ratings.items(), key=lambda kv: -kv[1].conservative)),
            soft_wrap=True, highlight=False)
    _write_json(args.json, {
        "format": "royal-casino-gauntlet", "version": 1, "candidate": args.candidate, "unit": args.unit,
        "players": args.players, "units_per_opponent": args.units, "opponents": rows, "overall": overall,
        "trueskill": {name: {"mu": r.mu, "sigma": r.sigma} for name, r in ratings.items()} if ratings else None,
    })
    return 0


def _overall_row(rows: list[dict[str, Any]], overall: dict[str, Any]) -> dict[str, Any]:
    return {"games": sum(r["games"] for r in rows), "wins": sum(r["wins"] for r in rows),
            "draws": sum(r["draws"] for r in rows), "losses": sum(r["losses"] for r in rows), "statistics": overall}
