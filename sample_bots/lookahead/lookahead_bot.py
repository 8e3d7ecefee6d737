"""Lookahead bot: Monte Carlo over the cards it cannot see, with the rules engine.

For each sample it draws the hidden cards (the others' hands and the stock) consistently with the
public history (``casino_bot.state_from_turn``), then plays every candidate move on that same
deal and finishes the deal with the greedy policy for every seat. A move's value is its average
raw point margin for the bot's side on the deal's score sheet (own raw points minus the best other
side's), with a large bonus or penalty when the deal ends the game by an 18/19/20 condition.
Candidates are the best ``max_candidates`` moves by the greedy value; ties go to the greedy order.

It keeps its own time: it samples until ``time_fraction`` of the turn's move time has passed
(default 40%), and never closer than a safety margin to what the Turn allows (move time + bank),
checking the clock between rollouts and inside each one. Under a CPU-time limit (the
handshake's ``time_control.cpu_time_ms``) it also stops at ``time_fraction`` of that limit in
CPU time (``time.process_time``: what the referee counts), the move time being then a wall-clock
backstop. Or it does a fixed amount of work
(``--samples N``: the same moves on any machine, for tests and reproducible evaluation).
Seed: $CASINO_BOT_SEED. Run: ``python sample_bots/lookahead/lookahead_bot.py [--samples N]
[--time-fraction F]``.
"""

from __future__ import annotations

import argparse
import os
import random
import time

from casino_bot import CasinoBot, legal_moves, run, state_from_turn, table_from_turn
from casino_bot.greedy import greedy_index, move_value

from referee.rules import DealSheet, GameState, RuleOptions, RulesError, play
from referee.rules import legal_moves as engine_legal_moves

CONDITION_WIN = 30.0  # more than any deal's margin: meeting an 18/19/20 condition ends the game
# The answer must reach the referee within move time + bank (+ its small grace, which is for
# transport). Stop thinking this long before that: the answer still has to be encoded and sent, and
# on a busy machine the bot's process may wait for a CPU. A share of the limit, at least a floor.
SAFETY_SHARE = 0.3
SAFETY_MIN_MS = 25.0


class OutOfTime(Exception):
    """The thinking deadline passed in the middle of a rollout."""


def think_deadline(turn_started: float, move_time_ms: int, bank_ms: int, time_fraction: float) -> float:
    """When to stop sampling (``time.monotonic()`` seconds): ``time_fraction`` of the move time,
    but never later than the safety margin before move time + bank runs out."""
    allowed_ms = move_time_ms + bank_ms
    latest_ms = allowed_ms - max(SAFETY_MIN_MS, SAFETY_SHARE * allowed_ms)
    return turn_started + max(0.0, min(time_fraction * move_time_ms, latest_ms)) / 1000


def deal_margin(sheet: DealSheet, side: int) -> float:
    """The side's raw points minus the best other side's, +/- CONDITION_WIN for a condition win."""
    raws = [s.raw_points for s in sheet.sides]
    margin = raws[side] - max(r for i, r in enumerate(raws) if i != side)
    if sheet.condition_winner is not None:
        margin += CONDITION_WIN if sheet.condition_winner == side else -CONDITION_WIN
    return float(margin)


def out_of_time(deadline: float | None, cpu_deadline: float | None) -> bool:
    """Whether the wall-clock ``deadline`` (``time.monotonic()``) or the CPU one
    (``time.process_time()``) has passed; None is no deadline."""
    return ((deadline is not None and time.monotonic() >= deadline)
            or (cpu_deadline is not None and time.process_time() >= cpu_deadline))


def rollout(state: GameState, side: int, deadline: float | None = None, cpu_deadline: float | None = None) -> float:
    """Finish the deal with the greedy policy for every seat; the side's margin on the sheet.
    Raises OutOfTime when ``deadline`` or ``cpu_deadline`` passes on the way."""
    while not state.deal_over:
        if out_of_time(deadline, cpu_deadline):
            raise OutOfTime
        moves = engine_legal_moves(state)
        state = play(state, moves[greedy_index(moves, state.loose, state.builds)])
    return deal_margin(state.sheets[-1], side)


def lookahead_index(
    turn,  # type: ignore[no-untyped-def]
    rng: random.Random,
    *,
    samples: int | None = None,
    deadline: float | None = None,
    options: RuleOptions | None = None,
    max_candidates: int = 10,
    cpu_deadline: float | None = None,
) -> int:
    """Index into ``turn.legal_moves`` of the best move by Monte Carlo: at most ``samples``
    determinisations, stopping at ``deadline`` (``time.monotonic()``) or ``cpu_deadline``
    (``time.process_time()``); samples or a deadline is needed."""
    if samples is None and deadline is None and cpu_deadline is None:
        raise ValueError("give samples or a deadline")
    moves = legal_moves(turn)
    loose, builds = table_from_turn(turn)
    greedy = [move_value(m, loose, builds) for m in moves]
    if len(moves) == 1:
        return 0
    candidates = sorted(range(len(moves)), key=lambda i: -greedy[i])[:max_candidates]
    side = turn.observation.side
    totals = [0.0] * len(moves)
    counts = [0] * len(moves)
    done = 0
    while (samples is None or done < samples) and not out_of_time(deadline, cpu_deadline):
        try:
            state = state_from_turn(turn, rng, options)
        except (ValueError, RulesError):
            break  # an inconsistent turn: fall back on what we have, or greedy
        try:
            for i in candidates:
                totals[i] += rollout(play(state, moves[i]), side, deadline, cpu_deadline)  # a cut-off one counts for nothing
                counts[i] += 1
        except OutOfTime:
            break
        done += 1
    sampled = [i for i in candidates if counts[i]]
    if not sampled:
        return candidates[0]
    return max(sampled, key=lambda i: (totals[i] / counts[i], greedy[i]))


class LookaheadBot(CasinoBot):
    name = "lookahead-bot"
    version = "0.1.0"

    def __init__(self, seed: int = 0, *, samples: int | None = None, time_fraction: float | None = 0.4) -> None:
        if samples is None and time_fraction is None:
            raise ValueError("give samples or a time_fraction")
        super().__init__()
        self.rng = random.Random(seed)
        self.samples = samples
        self.time_fraction = time_fraction

    def choose(self, turn):  # type: ignore[no-untyped-def]
        deadline = cpu_deadline = None
        if self.samples is None:  # with a fixed number of samples the work, not the clock, decides
            fraction = self.time_fraction or 0.4
            deadline = think_deadline(self.turn_started, turn.move_time_ms or 1000, turn.bank_ms, fraction)
            cpu_ms = self.time_control.cpu_time_ms if self.time_control is not None else 0
            if cpu_ms:  # the same budget in CPU time, which is what the referee then judges
                cpu_deadline = think_deadline(self.turn_started_cpu, cpu_ms, 0, fraction)
        return lookahead_index(turn, self.rng, samples=self.samples, deadline=deadline, options=self.options,
                               cpu_deadline=cpu_deadline)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The sample lookahead bot (Monte Carlo over hidden cards).")
    parser.add_argument("--samples", type=int, help="a fixed number of samples per move, whatever the clock says")
    parser.add_argument("--time-fraction", type=float, default=0.4,
                        help="share of the move time to think (default 0.4; capped by a safety margin)")
    args = parser.parse_args(argv)
    seed = os.environ.get("CASINO_BOT_SEED", "0")
    if not seed.lstrip("-").isdigit():
        parser.error(f"CASINO_BOT_SEED must be a whole number, not {seed!r}")
    if args.samples is not None and args.samples < 1:
        parser.error(f"--samples must be at least 1, not {args.samples}")
    if not 0 < args.time_fraction <= 1:
        parser.error(f"--time-fraction must be in (0, 1], not {args.time_fraction}")
    run(LookaheadBot(int(seed), samples=args.samples, time_fraction=None if args.samples else args.time_fraction))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
