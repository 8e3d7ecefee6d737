"""End of a deal and of the game (rules 12-18): score sheets, restricted sides, the result."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .cards import ACE, BIG_CASINO, LITTLE_CASINO, RANK, SPADE, SUIT, Card
from .options import TARGET_SCORE, Condition, RuleOptions

MOST_CARDS_POINTS = 3
MOST_SPADES_POINTS = 1
BIG_CASINO_POINTS = 2
LITTLE_CASINO_POINTS = 1


class EndReason(enum.Enum):
    """Why the game ended."""

    TARGET_REACHED = "target_reached"  # rule 17: one side alone on top at 21 or more
    CONDITION_MET = "condition_met"  # rule 15, 16: a restricted side took what it needed
    MAX_DEALS = "max_deals"  # rule 18


@dataclass(frozen=True, slots=True)
class SideSheet:
    """One side's score items for one deal (rule 13) and what it was credited (rule 15)."""

    side: int
    cards: int
    spades: int
    most_cards: bool
    most_spades: bool
    big_casino: bool
    little_casino: bool
    aces: int
    sweeps: int
    net_sweeps: int
    raw_points: int  # sum of the items, before any 18/19/20 restriction
    restricted: Condition | None
    condition_met: bool | None  # None when not restricted
    points: int  # what was added to the side's score

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["restricted"] = self.restricted.value if self.restricted else None
        return d


@dataclass(frozen=True, slots=True)
class DealSheet:
    """The score sheet of one deal."""

    deal: int  # 0-based
    dealer: int
    sides: tuple[SideSheet, ...]
    tied: tuple[str, ...]  # items nobody scored for a tie: "cards", "spades"
    condition_winner: int | None  # the restricted side that won by its condition (rule 15, 16)
    scores_after: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "deal": self.deal,
            "dealer": self.dealer,
            "sides": [s.to_dict() for s in self.sides],
            "tied": list(self.tied),
            "condition_winner": self.condition_winner,
            "scores_after": list(self.scores_after),
        }


@dataclass(frozen=True, slots=True)
class GameResult:
    """How the game ended: ``winner`` is a side, or None for a draw (rule 18 only)."""

    winner: int | None
    scores: tuple[int, ...]
    reason: EndReason
    deals: int

    @property
    def is_draw(self) -> bool:
        return self.winner is None

    def to_dict(self) -> dict[str, Any]:
        return {"winner": self.winner, "scores": list(self.scores), "reason": self.reason.value, "deals": self.deals}


def _strict_leader(counts: Sequence[int]) -> int | None:
    top = max(counts)
    leaders = [i for i, n in enumerate(counts) if n == top]
    return leaders[0] if len(leaders) == 1 else None


def condition_certain(condition: Condition, side: int, piles: Sequence[Sequence[Card]]) -> bool:
    """True once ``side`` has taken what ``condition`` asks, whatever happens to the cards left."""
    if condition is Condition.BIG_CASINO:
        return BIG_CASINO in piles[side]
    if condition is Condition.LITTLE_CASINO:
        return LITTLE_CASINO in piles[side]
    if condition is Condition.MOST_CARDS:
        counts = [len(p) for p in piles]
        total = 52
    else:
        counts = [sum(1 for c in p if SUIT[c] == SPADE) for p in piles]
        total = 13
    left = total - sum(counts)
    return all(counts[side] > n + left for i, n in enumerate(counts) if i != side)


def score_deal(
    options: RuleOptions,
    deal: int,
    dealer: int,
    piles: Sequence[Sequence[Card]],
    sweeps: Sequence[int],
    scores: Sequence[int],
    restricted: Sequence[Condition | None],
    certain_at: Sequence[int | None],
    tie_break: Sequence[int] | None = None,
) -> tuple[DealSheet, GameResult | None]:
    """Score a settled deal and decide whether the game ends (rules 13-18).

    ``certain_at[s]``: the play number at which restricted side s's condition became certain, or
    None; ``tie_break[s]`` orders sides made certain by the same play (default: side order)."""
    sides = len(piles)
    cards = [len(p) for p in piles]
    spades = [sum(1 for c in p if SUIT[c] == SPADE) for p in piles]
    cards_leader = _strict_leader(cards)
    spades_leader = _strict_leader(spades)
    fewest = min(sweeps)
    tied = tuple(name for name, lead in (("cards", cards_leader), ("spades", spades_leader)) if lead is None)
    sheets = []
    for s in range(sides):
        pile = piles[s]
        big = BIG_CASINO in pile
        little = LITTLE_CASINO in pile
        aces = sum(1 for c in pile if RANK[c] == ACE)
        net = sweeps[s] - fewest
        raw = (
            MOST_CARDS_POINTS * (cards_leader == s)
            + MOST_SPADES_POINTS * (spades_leader == s)
            + BIG_CASINO_POINTS * big
            + LITTLE_CASINO_POINTS * little
            + aces
            + net
        )
        cond = restricted[s]
        met = None if cond is None else certain_at[s] is not None
        sheets.append(
            SideSheet(
                side=s,
                cards=cards[s],
                spades=spades[s],
                most_cards=cards_leader == s,
                most_spades=spades_leader == s,
                big_casino=big,
                little_casino=little,
                aces=aces,
                sweeps=sweeps[s],
                net_sweeps=net,
                raw_points=raw,
                restricted=cond,
                condition_met=met,
                points=0 if met is False else raw,
            )
        )
    new_scores = tuple(scores[s] + sheets[s].points for s in range(sides))
    met_sides = [s for s in range(sides) if sheets[s].condition_met]
    order = tie_break or range(sides)
    condition_winner = min(met_sides, key=lambda s: (certain_at[s], order[s])) if met_sides else None  # type: ignore[arg-type, return-value]
    sheet = DealSheet(deal, dealer, tuple(sheets), tied, condition_winner, new_scores)
    result: GameResult | None = None
    if condition_winner is not None:
        result = GameResult(condition_winner, new_scores, EndReason.CONDITION_MET, deal + 1)
    else:
        top = max(new_scores)
        leader = _strict_leader(new_scores)
        if top >= TARGET_SCORE and leader is not None:
            result = GameResult(leader, new_scores, EndReason.TARGET_REACHED, deal + 1)
        elif deal + 1 >= options.max_deals:
            result = GameResult(leader, new_scores, EndReason.MAX_DEALS, deal + 1)
    return sheet, result


def continuation_after(scores: Sequence[int]) -> bool:
    """Rule 17: two or more sides tied at the top at 21 or more play on without restrictions."""
    top = max(scores)
    return top >= TARGET_SCORE and sum(1 for s in scores if s == top) > 1
