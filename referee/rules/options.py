"""Named rule options (rules file: items marked *option*) with the rules file's defaults."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass
from typing import Any

from .cards import ALL_CARDS
from .errors import InvalidOptionError

TARGET_SCORE = 21  # rule 14
RESTRICTED_SCORES = (18, 19, 20)  # rule 15


class Condition(enum.Enum):
    """What a restricted side must take in a deal to win (rule 15)."""

    MOST_CARDS = "most_cards"
    BIG_CASINO = "big_casino"
    LITTLE_CASINO = "little_casino"
    MOST_SPADES = "most_spades"


@dataclass(frozen=True, slots=True)
class RuleOptions:
    """The variant being played. Defaults are the rules file's rules."""

    players: int = 2
    partnerships: bool = True  # only for 4 players: seats 0+2 against 1+3 (rule 2)
    on_twenty: Condition = Condition.LITTLE_CASINO  # rule 15; option: MOST_SPADES (pagat)
    max_deals: int = 30  # rule 18

    def __post_init__(self) -> None:
        if not isinstance(self.players, int) or isinstance(self.players, bool) or self.players not in (2, 3, 4):
            raise InvalidOptionError(f"players must be 2, 3 or 4, not {self.players!r}")
        if not isinstance(self.partnerships, bool):
            raise InvalidOptionError(f"partnerships must be true or false, not {self.partnerships!r}")
        if self.on_twenty not in (Condition.LITTLE_CASINO, Condition.MOST_SPADES):
            raise InvalidOptionError(
                f"on_twenty must be 'little_casino' or 'most_spades', not {self.on_twenty!r}"
            )
        if not isinstance(self.max_deals, int) or isinstance(self.max_deals, bool) or self.max_deals < 1:
            raise InvalidOptionError(f"max_deals must be a whole number of at least 1, not {self.max_deals!r}")

    @property
    def max_plays(self) -> int:
        """The longest a game can be, in plays (as OpenSpiel's ``max_game_length``): every card of
        the deck played in each of ``max_deals`` deals, the most the rules allow."""
        return self.max_deals * len(ALL_CARDS)

    @property
    def teams(self) -> bool:
        """True when seats play in two partnerships."""
        return self.players == 4 and self.partnerships

    @property
    def sides(self) -> int:
        """How many sides score separately."""
        return 2 if self.teams else self.players

    def side_of(self, seat: int) -> int:
        """The side a seat scores for."""
        return seat % 2 if self.teams else seat

    def condition_for(self, score: int) -> Condition | None:
        """What a side starting a deal on ``score`` must take to win, if it is restricted."""
        if score == 18:
            return Condition.MOST_CARDS
        if score == 19:
            return Condition.BIG_CASINO
        if score == 20:
            return self.on_twenty
        return None

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form, as stored in game records."""
        d = asdict(self)
        d["on_twenty"] = self.on_twenty.value
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RuleOptions":
        """Inverse of :meth:`to_dict`; unknown keys and bad values raise InvalidOptionError."""
        if not isinstance(data, dict):
            raise InvalidOptionError(f"rule options must be a mapping, not {type(data).__name__}")
        known = {"players", "partnerships", "on_twenty", "max_deals"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InvalidOptionError(f"unknown rule option {unknown[0]!r}; known: {', '.join(sorted(known))}")
        kwargs = dict(data)
        if "on_twenty" in kwargs:
            try:
                kwargs["on_twenty"] = Condition(kwargs["on_twenty"])
            except ValueError:
                raise InvalidOptionError(
                    f"on_twenty must be 'little_casino' or 'most_spades', not {kwargs['on_twenty']!r}"
                ) from None
        return cls(**kwargs)
