"""Lookahead bot: Monte Carlo over the cards it cannot see, with the rules engine.

For each sample it draws the hidden cards (the others' hands and the stock) consistently with the
public history (``casino_bot.state_from_turn``), then plays every candidate move on that same
deal and finishes the deal with the greedy policy for every seat. A move's value is its average
raw point margin for the bot's side on the deal's score sheet (own raw points minus the best other
side's), with a large bonus or penalty when the deal ends the game by an 18/19/20 condition.
Candidates are the best ``max_candidates`` moves by the greedy value; ties go to the greedy order.

It samples until ``time_fraction`` of the turn's move time has passed (default 40%), or for a
fixed number of samples (``samples=``, for reproducible evaluation). Seed: $CASINO_BOT_SEED.
Run: ``python sample_bots/python/lookahead_bot.py``.
"""

from __future__ import annotations

import os
import random
import sys
import time

from casino_bot import CasinoBot, legal_moves, run, state_from_turn, table_from_turn
from greedy_bot import greedy_index, move_value
from referee.rules import GameState, RuleOptions, RulesError, legal_moves as engine_legal_moves, play
from referee.rules.scoring import DealSheet

CONDITION_WIN = 30.0  # more than any deal's margin: meeting an 18/19/20 condition ends the game


def deal_margin(sheet: DealSheet, side: int) -> float:
    """The side's raw points minus the best other side's, +/- CONDITION_WIN for a condition win."""
    raws = [s.raw_points for s in sheet.sides]
    margin = raws[side] - max(r for i, r in enumerate(raws) if i != side)
    if sheet.condition_winner is not None:
        margin += CONDITION_WIN if sheet.condition_winner == side else -CONDITION_WIN
    return float(margin)


def rollout(state: GameState, side: int) -> float:
    """Finish the deal with the greedy policy for every seat; the side's margin on the sheet."""
    while not state.deal_over:
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
) -> int:
    """Index into ``turn.legal_moves`` of the best move by Monte Carlo: at most ``samples``
    determinisations, stopping at ``deadline`` (``time.monotonic()``); one of the two is needed."""
    if samples is None and deadline is None:
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
    while (samples is None or done < samples) and (deadline is None or time.monotonic() < deadline):
        try:
            state = state_from_turn(turn, rng, options)
        except (ValueError, RulesError):
            break  # an inconsistent turn: fall back on what we have, or greedy
        for i in candidates:
            if deadline is not None and time.monotonic() >= deadline:
                break
            totals[i] += rollout(play(state, moves[i]), side)
            counts[i] += 1
        done += 1
    sampled = [i for i in candidates if counts[i]]
    if not sampled:
        return candidates[0]
    return max(sampled, key=lambda i: (totals[i] / counts[i], greedy[i]))


class LookaheadBot(CasinoBot):
    name = "lookahead-bot"
    version = "0.1.0"

    def __init__(self, seed: int = 0, *, samples: int | None = None, time_fraction: float | None = 0.4) -> None:
        super().__init__()
        self.rng = random.Random(seed)
        self.samples = samples
        self.time_fraction = time_fraction

    def choose(self, turn):  # type: ignore[no-untyped-def]
        deadline = None
        if self.time_fraction is not None:
            deadline = self.turn_started + self.time_fraction * (turn.move_time_ms or 1000) / 1000
        return lookahead_index(turn, self.rng, samples=self.samples, deadline=deadline, options=self.options)


if __name__ == "__main__":
    seed = os.environ.get("CASINO_BOT_SEED", "0")
    if not seed.lstrip("-").isdigit():
        print(f"error: CASINO_BOT_SEED must be a whole number, not {seed!r}", file=sys.stderr)
        raise SystemExit(2)
    run(LookaheadBot(int(seed)))
