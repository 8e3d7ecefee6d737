"""What the arena keeps of one finished game: plain values, independent of storage and gRPC."""

from __future__ import annotations

from dataclasses import dataclass

from casino.v1 import game_pb2

# Forfeit columns of the standings: each failure kind counts under one of them.
FORFEIT_KINDS = ("timeout", "illegal", "crash", "startup")
_KIND_COLUMN = {
    game_pb2.FAILURE_KIND_TIMEOUT: "timeout",
    game_pb2.FAILURE_KIND_ILLEGAL_MOVE: "illegal",
    game_pb2.FAILURE_KIND_MALFORMED: "illegal",
    game_pb2.FAILURE_KIND_PROTOCOL: "illegal",
    game_pb2.FAILURE_KIND_DISCONNECT: "crash",
    game_pb2.FAILURE_KIND_CRASH: "crash",
    game_pb2.FAILURE_KIND_STARTUP: "startup",
}


def forfeit_column(kind: int) -> str:
    """The standings column a failure kind (casino.v1.FailureKind) counts under."""
    return _KIND_COLUMN.get(kind, "illegal")


@dataclass(frozen=True, slots=True)
class GameOutcome:
    """One finished game as ratings and standings see it.

    ``seat_bots`` names the bot at each seat; ``sides`` the side each seat scores for (seats
    0+2 and 1+3 in partnerships); ``ranks`` is per seat, 1 = best, equal for a draw, a
    forfeiting side last; ``scores`` is per side; ``forfeits`` lists (seat, column) for every
    seat that forfeited, column one of FORFEIT_KINDS.
    """

    number: int
    seat_bots: tuple[str, ...]
    sides: tuple[int, ...]
    ranks: tuple[int, ...]
    scores: tuple[int, ...]
    winner_side: int
    forfeits: tuple[tuple[int, str], ...] = ()

    @classmethod
    def from_result(cls, number: int, seat_bots: tuple[str, ...], sides: tuple[int, ...],
                    result: game_pb2.GameResult) -> "GameOutcome":
        return cls(
            number=number,
            seat_bots=tuple(seat_bots),
            sides=tuple(sides),
            ranks=tuple(result.ranks),
            scores=tuple(result.scores),
            winner_side=result.winner_side,
            forfeits=tuple((f.seat, forfeit_column(f.kind)) for f in result.failures if f.forfeit),
        )
