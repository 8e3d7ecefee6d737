"""Game results as the referee reports them: engine results, forfeits, ranks per seat."""

from __future__ import annotations

from collections.abc import Sequence

from casino.v1 import game_pb2

from ..rules import GameResult, RuleOptions


def ranks_by_side(scores: Sequence[int], first: int | None, last: Sequence[int] = ()) -> list[int]:
    """Competition ranks (1 = best, equal values share a rank) for each side: ``first`` ranks
    alone at the top (a condition win outranks a higher score), sides in ``last`` (forfeits)
    rank below everyone else, the rest by score."""

    def key(side: int) -> tuple[int, int, int]:
        return (side in last, side != first if first is not None else False, -scores[side])

    order = sorted(range(len(scores)), key=key)
    ranks = [0] * len(scores)
    for position, side in enumerate(order):
        if position and key(side) == key(order[position - 1]):
            ranks[side] = ranks[order[position - 1]]
        else:
            ranks[side] = position + 1
    return ranks


def seat_ranks(options: RuleOptions, side_ranks: Sequence[int]) -> list[int]:
    return [side_ranks[options.side_of(seat)] for seat in range(options.players)]


def normal_result(game_id: str, options: RuleOptions, result: GameResult, failures: Sequence[game_pb2.Failure]) -> game_pb2.GameResult:
    """The protocol result of a game the engine finished."""
    side_ranks = ranks_by_side(result.scores, result.winner)
    return game_pb2.GameResult(
        game_id=game_id,
        termination=game_pb2.TERMINATION_NORMAL,
        reason=result.reason.value,
        winner_side=-1 if result.winner is None else result.winner,
        scores=result.scores,
        ranks=seat_ranks(options, side_ranks),
        failures=failures,
        deals=result.deals,
    )


def forfeit_result(
    game_id: str, options: RuleOptions, scores: Sequence[int], forfeiting_seats: Sequence[int], deals: int,
    failures: Sequence[game_pb2.Failure],
) -> game_pb2.GameResult:
    """The protocol result of a game seats forfeited: their sides rank last, the others by score."""
    losers = {options.side_of(seat) for seat in forfeiting_seats}
    side_ranks = ranks_by_side(scores, None, sorted(losers))
    best = [s for s, r in enumerate(side_ranks) if r == 1]
    return game_pb2.GameResult(
        game_id=game_id,
        termination=game_pb2.TERMINATION_FORFEIT,
        reason="forfeit",
        winner_side=best[0] if len(best) == 1 else -1,
        scores=scores,
        ranks=seat_ranks(options, side_ranks),
        failures=failures,
        deals=deals,
    )
