"""Evaluate two sample bots against each other in-process, without gRPC.

Usage: python bench/eval_bots.py A B [--games N] [--seed S] [--players 2|4] [--samples K] [--jobs J]

A and B are ``random``, ``greedy`` or ``lookahead``. Games come in pairs on the same seed (so the
same decks, deal by deal) with the seats swapped, and A's seat in the first game of a pair
alternating: ``--games`` is rounded up to an even number. Each bot's ``choose`` gets exactly what it
would get over gRPC: a ``casino.v1.Turn`` built with ``referee.wire.convert.turn_to_pb`` from the engine
state, and its hooks get GameStart / PlayMade / GameEnd. The lookahead bot runs on a fixed sample
budget (``--samples`` determinisations per move, no clock) so results do not depend on the
machine. With 4 players each bot plays both seats of its partnership.

Prints A's wins / draws / losses, the score rate (win 1, draw 1/2) and the mean final-score
margin per game, each with a 95% interval (normal approximation over the seat-swapped pairs of
games, the independent unit here), average points, and the mean time per decision of each bot.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path[:0] = [str(ROOT / "sample_bots" / name) for name in ("random", "greedy", "lookahead")]

from greedy_bot import GreedyBot  # noqa: E402
from lookahead_bot import LookaheadBot  # noqa: E402
from random_bot import RandomBot  # noqa: E402

from casino.v1 import bot_pb2, game_pb2  # noqa: E402
from referee.rules import GameState, Move, RuleOptions, apply, legal_moves, new_game, observation, parse_move  # noqa: E402
from referee.wire.convert import move_from_pb, turn_to_pb  # noqa: E402

BOTS = ("random", "greedy", "lookahead")


def make_bot(name: str, seed: int, samples: int):  # type: ignore[no-untyped-def]
    if name == "random":
        return RandomBot(seed)
    if name == "greedy":
        return GreedyBot()
    return LookaheadBot(seed, samples=samples, time_fraction=None)


def resolve(choice: object, moves: list[Move]) -> Move:
    """The engine move a bot's answer names (index, notation, structured or engine Move)."""
    if isinstance(choice, Move):
        move = choice
    elif isinstance(choice, int):
        move = moves[choice]
    elif isinstance(choice, str):
        move = parse_move(choice)
    elif isinstance(choice, game_pb2.Move):
        move = move_from_pb(choice)
    else:
        raise TypeError(f"bad answer {choice!r}")
    if move not in moves:
        raise ValueError(f"illegal answer {move}")
    return move


def run_game(seat_bot: list, options: RuleOptions, seed: int, game_id: str, names: list[str],  # type: ignore[type-arg]
             tell_options: bool = False) -> tuple[GameState, list[float], list[int]]:
    """One game in-process, each bot getting what it would over gRPC (GameStart, a Turn per move,
    PlayMade after every play, GameEnd; with ``tell_options`` the handshake's rule options too).
    Returns the final state and each seat's thinking time and number of decisions."""
    players = options.players
    for seat, bot in enumerate(seat_bot):
        if tell_options:
            bot.options = options
        bot.on_game_start(bot_pb2.GameStart(game_id=game_id, game_number=1, seat=seat,
                                            side=options.side_of(seat), player_names=names))
    state = new_game(options, seed=seed)
    spent, decisions = [0.0] * players, [0] * players
    turn_id = 0
    while not state.is_over:
        seat, deal, number = state.to_move, state.deal, state.plays + 1
        moves = legal_moves(state)
        turn_id += 1
        turn = turn_to_pb(game_id, turn_id, observation(state, seat), moves, 1000, 0)
        bot = seat_bot[seat]
        start = time.perf_counter()
        bot.turn_started = time.monotonic()
        move = resolve(bot.choose(turn), moves)
        spent[seat] += time.perf_counter() - start
        decisions[seat] += 1
        state = apply(state, move)
        made = bot_pb2.PlayMade(game_id=game_id, seat=seat, move=str(move), deal=deal, play_number=number)
        for b in seat_bot:
            b.on_play(made)
    result = state.result
    assert result is not None
    end = bot_pb2.GameEnd(result=game_pb2.GameResult(
        game_id=game_id, termination=game_pb2.TERMINATION_NORMAL, reason=result.reason.value,
        winner_side=-1 if result.winner is None else result.winner, scores=result.scores, deals=result.deals))
    for b in seat_bot:
        b.on_game_end(end)
    return state, spent, decisions


def play_game(task: tuple[str, str, int, int, int, int]) -> dict[str, object]:
    """One game; A plays side ``a_side``. Returns the outcome from A's point of view."""
    a_name, b_name, seed, a_side, players, samples = task
    options = RuleOptions(players=players)
    bots = {a_side: make_bot(a_name, seed * 2 + 1, samples), 1 - a_side: make_bot(b_name, seed * 2 + 2, samples)}
    seat_bot = [bots[options.side_of(s)] for s in range(players)]
    names = [a_name if options.side_of(s) == a_side else b_name for s in range(players)]
    state, spent_seat, decisions_seat = run_game(seat_bot, options, seed, f"s{seed}-a{a_side}", names)
    result = state.result
    assert result is not None
    spent = {side: sum(t for s, t in enumerate(spent_seat) if options.side_of(s) == side) for side in (0, 1)}
    decisions = {side: sum(d for s, d in enumerate(decisions_seat) if options.side_of(s) == side) for side in (0, 1)}
    outcome = 0.5 if result.winner is None else float(result.winner == a_side)
    return {
        "seed": seed, "a_side": a_side, "outcome": outcome,
        "a_points": result.scores[a_side], "b_points": result.scores[1 - a_side], "deals": result.deals,
        "a_time": spent[a_side], "a_moves": decisions[a_side],
        "b_time": spent[1 - a_side], "b_moves": decisions[1 - a_side],
    }


def interval(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% interval (normal approximation)."""
    mean = statistics.fmean(values)
    half = 1.96 * statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else float("nan")
    return mean, half


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", choices=BOTS)
    parser.add_argument("b", choices=BOTS)
    parser.add_argument("--games", type=int, default=200, help="games, rounded up to even (default 200)")
    parser.add_argument("--seed", type=int, default=1, help="first deck seed (default 1)")
    parser.add_argument("--players", type=int, choices=(2, 4), default=2, help="2, or 4 in partnerships")
    parser.add_argument("--samples", type=int, default=16, help="lookahead determinisations per move (default 16)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    args = parser.parse_args(argv)
    pairs = max(1, (args.games + 1) // 2)
    tasks = []
    for i in range(pairs):
        first = i % 2
        for a_side in (first, 1 - first):
            tasks.append((args.a, args.b, args.seed + i, a_side, args.players, args.samples))
    start = time.perf_counter()
    if args.jobs > 1:
        with multiprocessing.Pool(args.jobs) as pool:
            results = pool.map(play_game, tasks, chunksize=1)
    else:
        results = [play_game(t) for t in tasks]
    elapsed = time.perf_counter() - start
    n = len(results)
    wins = sum(r["outcome"] == 1.0 for r in results)
    draws = sum(r["outcome"] == 0.5 for r in results)
    # The unit of the intervals is a seed pair (two seat-swapped games on the same decks).
    by_seed: dict[object, list[dict[str, object]]] = {}
    for r in results:
        by_seed.setdefault(r["seed"], []).append(r)
    pairs_out = [statistics.fmean(float(r["outcome"]) for r in p) for p in by_seed.values()]  # type: ignore[arg-type]
    pairs_margin = [
        statistics.fmean(float(r["a_points"]) - float(r["b_points"]) for r in p)  # type: ignore[arg-type]
        for p in by_seed.values()
    ]
    rate, rate_half = interval(pairs_out)
    margin, margin_half = interval(pairs_margin)
    a_points = statistics.fmean(float(r["a_points"]) for r in results)  # type: ignore[arg-type]
    b_points = statistics.fmean(float(r["b_points"]) for r in results)  # type: ignore[arg-type]
    a_ms = 1000 * sum(r["a_time"] for r in results) / max(1, sum(r["a_moves"] for r in results))  # type: ignore[misc]
    b_ms = 1000 * sum(r["b_time"] for r in results) / max(1, sum(r["b_moves"] for r in results))  # type: ignore[misc]
    deals = statistics.fmean(float(r["deals"]) for r in results)  # type: ignore[arg-type]
    print(f"{args.a} (A) vs {args.b} (B): {n} games, {args.players} players, seeds {args.seed}..{args.seed + pairs - 1}"
          f" (seats swapped), lookahead samples {args.samples}")
    print(f"A wins {wins}, draws {draws}, losses {n - wins - draws}")
    print(f"A score rate {rate:.3f} ± {rate_half:.3f} (95%)")
    print(f"final-score margin A-B per game {margin:+.2f} ± {margin_half:.2f} (95%)")
    print(f"average points: A {a_points:.2f}, B {b_points:.2f}; {deals:.2f} deals per game")
    print(f"time per decision: A {a_ms:.2f} ms, B {b_ms:.2f} ms; wall {elapsed:.0f} s with {args.jobs} job(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
