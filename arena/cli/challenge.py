"""`arena challenge`: the operator's and scripts' side of a ladder's challenges (docs/challenges.md):
start one (any two bots of the ladder, no user quota), list them, show one; with ``--wait``, wait
for the verdict `arena serve` reaches and exit as `arena compare` does: 0 better, 1 not better or
undecided, 3 failed (a game the referee could not play)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from ..errors import UsageError, quoted
from .database import DB_HELP

POLL_S = 1.0  # how often --wait reads the challenge
DEFAULT_WAIT_S = 3600.0
EXIT_BETTER, EXIT_NOT_BETTER, EXIT_FAILED = 0, 1, 3


def add_challenge_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("challenge", help="a ladder's unrated challenges: start one, list them, show one")
    actions = p.add_subparsers(dest="challenge_action", required=True, metavar="{start,list,show}")
    start = actions.add_parser("start", help="challenge OPPONENT with BOT: duplicate pairs, played by `arena serve` "
                               "after its rounds")
    start.add_argument("bot", help="the challenger: a bot of the ladder")
    start.add_argument("opponent", help="the bot it plays against")
    start.add_argument("--pairs", type=int, help="this many duplicate pairs (default: until the sequential test "
                       "decides, at most [challenges] max_pairs)")
    start.add_argument("--seed", type=int, help="the decks' seed (default: the challenge's id)")
    listing = actions.add_parser("list", help="the ladder's challenges, newest first")
    show = actions.add_parser("show", help="one challenge: its progress or verdict")
    show.add_argument("id", type=int, help="the challenge's id")
    for q in (start, listing, show):
        q.add_argument("file", nargs="?", help="the ladder's tournament file (its database); or give --db and --ladder")
        q.add_argument("--db", metavar="URL", help=DB_HELP)
        q.add_argument("--ladder", metavar="NAME", help="with --db: the ladder's name")
        q.add_argument("--json", action="store_true", help="print the challenge's JSON (docs/challenges.md)")
    for q in (start, show):
        q.add_argument("--wait", action="store_true", help="wait for the verdict: exit 0 better, 1 not better or "
                       "undecided, 3 failed")
        q.add_argument("--timeout", type=float, default=DEFAULT_WAIT_S, metavar="S",
                       help=f"with --wait: give up after S seconds, exit 2 (default {DEFAULT_WAIT_S:g})")
    p.set_defaults(func=cmd_challenge)


def _where(args: argparse.Namespace) -> tuple[str, str, Any]:
    """(database URL, ladder name, its tournament file's config or None: given --db)."""
    from ..config import load_config

    if (args.file is None) == (args.db is None):
        raise UsageError(f"arena challenge {args.challenge_action} needs the ladder's tournament file or --db URL "
                         "(one of them)")
    if args.db is not None:
        if not args.ladder:
            raise UsageError("--db needs --ladder NAME: the ladder whose challenges these are")
        return args.db, args.ladder, None
    if args.ladder:
        raise UsageError("--ladder goes with --db: a tournament file names its ladder")
    config = load_config(args.file, check_programs=args.challenge_action == "start")
    if config.ladder is None:
        raise UsageError(f"{config.path.name}: no [ladder] section: challenges are played by a ladder's `arena serve`")
    return config.database, config.name, config


def cmd_challenge(args: argparse.Namespace) -> int:
    from ..config import ChallengeSettings
    from ..store.challenges import challenge, challenges, new_challenge
    from ..store.store import Store

    if getattr(args, "timeout", 1.0) <= 0:
        raise UsageError(f"--timeout must be a number of seconds above 0, not {args.timeout:g}")
    if args.challenge_action == "start" and args.pairs is not None and args.pairs < 1:
        raise UsageError(f"--pairs must be 1 or more, not {args.pairs}")
    url, ladder, config = _where(args)
    store = Store(url)
    try:
        tid = store.tournament_id(ladder)
        if tid is None and config is not None and args.challenge_action == "start":
            from ..play.runner import open_tournament

            tid = open_tournament(store, config, schedule_games=False)  # the pool, as `arena bots` makes it
        if tid is None:
            raise UsageError(f"no ladder named {quoted(ladder)} in {store.url_for_people}")
        settings = config.challenges if config is not None else ChallengeSettings.from_stored(
            store.tournament(tid).settings)
        if args.challenge_action == "list":
            rows = challenges(store, tid)
            if args.json:
                sys.stdout.write(json.dumps({"version": 1, "challenges": [r.to_dict() for r in rows]}, indent=2) + "\n")
            else:
                for r in rows:
                    sys.stdout.write(_line(r) + "\n")
            return 0
        if args.challenge_action == "start":
            row = new_challenge(store, tid, None, args.bot, args.opponent, args.pairs, settings, seed=args.seed)
            if not args.wait and not args.json:
                sys.stdout.write(f"challenge {row.id}: {row.bot} v {row.opponent}, "
                                 f"{_asked(row)}; played by `arena serve` after its rounds\n")
        else:
            found = challenge(store, args.id)
            if found is None or found.tournament_id != tid:
                raise UsageError(f"no challenge {args.id} in ladder {quoted(ladder)}")
            row = found
        if args.wait:
            row = _wait(store, row.id, args.timeout)
        if args.json:
            sys.stdout.write(json.dumps(row.to_dict(), indent=2) + "\n")
        elif args.challenge_action == "show" or args.wait:
            sys.stdout.write(_line(row) + "\n")
        if not args.wait:
            return 0
        if row.status == "failed":
            return EXIT_FAILED
        return EXIT_BETTER if row.verdict == "better" else EXIT_NOT_BETTER
    finally:
        store.close()


def _wait(store: Any, cid: int, timeout: float) -> Any:
    from ..store.challenges import challenge

    deadline = time.monotonic() + timeout
    while True:
        row = challenge(store, cid)
        assert row is not None
        if not row.open:
            return row
        if time.monotonic() >= deadline:
            raise UsageError(f"challenge {cid} has no verdict after {timeout:g} s ({row.games_played} game(s) played): "
                             "is `arena serve` running for its ladder?")
        time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))


def _asked(row: Any) -> str:
    return f"{row.pairs_asked} pair(s)" if row.pairs_asked is not None else f"until decided (at most {row.max_pairs} pairs)"


def _line(row: Any) -> str:
    """One challenge for people: id, bots, what was asked, where it is, its verdict."""
    head = f"challenge {row.id}: {row.bot} v {row.opponent}, {_asked(row)}, {row.games_played} game(s) played"
    if row.games_failed:
        head += f" ({row.games_failed} with a failure)"
    if row.status == "failed":
        return f"{head}; failed: {row.error}"
    if row.verdict is None:
        return f"{head}; {row.status}"
    unit = "points per deal" if row.unit == "deals" else "Elo"
    estimate = f"margin {row.margin:+.2f} {unit}" if row.margin is not None else "no estimate"
    if row.interval is not None:
        estimate += f", 95% interval [{row.interval[0]:+.2f}, {row.interval[1]:+.2f}]"
    return f"{head}; {row.verdict.replace('_', ' ')} ({estimate})"
