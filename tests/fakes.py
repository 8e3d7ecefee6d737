"""Fakes that make tests of the arena's own logic (the runner's order, retries and ratings) fast
without hiding what they test: the game is still played by the rules engine and reported exactly
as the referee reports one (result and record); only the bots' processes and gRPC are left out."""

from __future__ import annotations

import random
from collections.abc import Sequence

from arena.play.executor import SeatBot
from referee.match.game import Observer
from referee.match.outcome import normal_result
from referee.match.record import SeatRecord, referee_record
from referee.match.report import GameReport
from referee.match.spec import GameSetup
from referee.rules import apply, legal_moves, new_game


class FakeExecutor:
    """A GameExecutor that plays each game in-process: every seat plays a random legal move drawn
    from the game's seed (so a game is the same whenever, wherever and however often it is
    played). ``fail_first``: game numbers whose first play raises, as a referee failure would."""

    def __init__(self, fail_first: Sequence[int] = ()) -> None:
        self.fail_first = set(fail_first)
        self.played: list[int] = []  # game numbers, in the order their play started

    async def play(self, setup: GameSetup, seats: Sequence[SeatBot], observe: Observer | None = None) -> GameReport:
        self.played.append(setup.game_number)
        if setup.game_number in self.fail_first:
            self.fail_first.discard(setup.game_number)
            raise RuntimeError(f"the referee could not play game {setup.game_number} (a fake failure)")
        state = new_game(setup.options, seed=setup.seed, decks=setup.decks)
        rng = random.Random(setup.seed)
        timings = []
        while not state.is_over:
            timings.append([state.to_move, 0])
            state = apply(state, rng.choice(legal_moves(state)))
        assert state.result is not None
        result = normal_result(setup.game_id, setup.options, state.result, [])
        record = referee_record(
            game_id=setup.game_id, match_id=setup.match_id, game_number=setup.game_number,
            seats=[SeatRecord(s, b, seats[s].name, "", "", seats[s].endpoint.spec)
                   for s, b in enumerate(setup.seat_bots)],
            time_control=setup.time_control, policy=setup.policy.value, max_strikes=setup.max_strikes, state=state,
            timings_us=timings, failures=[], result=result)
        return GameReport(setup.game_id, setup.game_number, list(setup.seat_bots), result, record)

    async def close(self) -> None:
        pass
