"""What one seat may see (OpenSpiel's observer idea): its own hand and public information only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .cards import CODE, Card
from .errors import InvalidSeatError
from .moves import Move
from .options import Condition, RuleOptions
from .state import Build, GameState


@dataclass(frozen=True, slots=True)
class Observation:
    """A seat's view. Never holds another seat's hand or the order of the undealt cards."""

    seat: int
    side: int
    options: RuleOptions
    deal: int
    round: int
    dealer: int
    to_move: int
    hand: tuple[Card, ...]
    hand_sizes: tuple[int, ...]  # per seat
    loose: tuple[Card, ...]
    builds: tuple[Build, ...]
    pile_sizes: tuple[int, ...]  # per side
    sweeps: tuple[int, ...]  # per side, this deal
    last_capturer: int | None
    stock_size: int  # cards not yet dealt in this deal
    table_dealt: tuple[Card, ...]  # the 4 cards dealt face up at the start of this deal
    plays: tuple[tuple[int, Move], ...]  # this deal's plays so far: (seat, move)
    scores: tuple[int, ...]  # per side, before this deal
    restricted: tuple[Condition | None, ...]
    continuation: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form with card codes and move notation."""
        return {
            "seat": self.seat,
            "side": self.side,
            "options": self.options.to_dict(),
            "deal": self.deal,
            "round": self.round,
            "dealer": self.dealer,
            "to_move": self.to_move,
            "hand": [CODE[c] for c in self.hand],
            "hand_sizes": list(self.hand_sizes),
            "loose": [CODE[c] for c in self.loose],
            "builds": [
                {"id": b.id, "value": b.value, "cards": [CODE[c] for c in b.cards], "owner": b.owner, "multiple": b.multiple}
                for b in self.builds
            ],
            "pile_sizes": list(self.pile_sizes),
            "sweeps": list(self.sweeps),
            "last_capturer": self.last_capturer,
            "stock_size": self.stock_size,
            "table_dealt": [CODE[c] for c in self.table_dealt],
            "plays": [{"seat": s, "move": str(m)} for s, m in self.plays],
            "scores": list(self.scores),
            "restricted": [c.value if c else None for c in self.restricted],
            "continuation": self.continuation,
        }


def observation(state: GameState, seat: int, *, with_plays: bool = True) -> Observation:
    """The view of ``seat`` in ``state``. ``with_plays=False`` leaves ``plays`` empty, for callers
    that keep the deal's public plays themselves (the referee, once per turn)."""
    n = state.options.players
    if not isinstance(seat, int) or isinstance(seat, bool) or not 0 <= seat < n:
        raise InvalidSeatError(f"seat {seat!r} is not at a {n}-player table (seats 0..{n - 1})")
    plays = tuple((e.seat, e.move) for e in state.deal_history()) if with_plays else ()
    return Observation(
        seat=seat,
        side=state.options.side_of(seat),
        options=state.options,
        deal=state.deal,
        round=state.round,
        dealer=state.dealer,
        to_move=state.to_move,
        hand=state.hands[seat],
        hand_sizes=tuple(len(h) for h in state.hands),
        loose=state.loose,
        builds=state.builds,
        pile_sizes=tuple(len(p) for p in state.piles),
        sweeps=state.sweeps,
        last_capturer=state.last_capturer,
        stock_size=len(state.stock),
        table_dealt=state.table_dealt,
        plays=plays,
        scores=state.scores,
        restricted=state.restricted,
        continuation=state.continuation,
    )
