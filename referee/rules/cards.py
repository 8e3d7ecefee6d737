"""Cards as small integers, their text codes, and explicit decks.

A card is an ``int`` 0..51: ``(rank - 1) * 4 + suit`` with rank 1 (Ace) .. 13 (King) and
suit 0..3 = C, D, H, S. Integer order is the canonical card order: by rank, then suit C < D < H < S.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .errors import InvalidCardError, InvalidDeckError

Card = int

SUITS = "CDHS"
RANK_CODES = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
ACE = 1
KING = 13
ACE_HIGH = 14  # the value an Ace takes when it counts 14 (rule 1)

ALL_CARDS: tuple[Card, ...] = tuple(range(52))
RANK: tuple[int, ...] = tuple(c // 4 + 1 for c in ALL_CARDS)
SUIT: tuple[int, ...] = tuple(c % 4 for c in ALL_CARDS)
CODE: tuple[str, ...] = tuple(RANK_CODES[c // 4] + SUITS[c % 4] for c in ALL_CARDS)

BIG_CASINO: Card = (10 - 1) * 4 + SUITS.index("D")
LITTLE_CASINO: Card = (2 - 1) * 4 + SUITS.index("S")
SPADE = SUITS.index("S")

_RANK_BY_CODE = {code: i + 1 for i, code in enumerate(RANK_CODES)} | {"T": 10}
_CARD_BY_CODE = {CODE[c]: c for c in ALL_CARDS}


def card(rank: int, suit: str) -> Card:
    """The card of ``rank`` (1..13) and ``suit`` (one of ``CDHS``)."""
    if not 1 <= rank <= 13 or suit not in SUITS or len(suit) != 1:
        raise InvalidCardError(f"no card with rank {rank!r} and suit {suit!r}")
    return (rank - 1) * 4 + SUITS.index(suit)


def parse_card(text: str) -> Card:
    """Parse a code such as ``10D``, ``TD``, ``as`` or ``KH`` (case-insensitive)."""
    if not isinstance(text, str):
        raise InvalidCardError(f"a card code must be a string, not {type(text).__name__}")
    code = text.strip().upper()
    found = _CARD_BY_CODE.get(code)
    if found is not None:
        return found
    rank = _RANK_BY_CODE.get(code[:-1])
    suit = code[-1:]
    if rank is None or suit not in SUITS or not suit:
        raise InvalidCardError(
            f"bad card code {text!r}: expected rank A 2-10 (or T) J Q K followed by suit C D H S"
        )
    return (rank - 1) * 4 + SUITS.index(suit)


def card_code(c: Card) -> str:
    """The canonical code of a card, e.g. ``10D``."""
    return CODE[c]


def cards_code(cards: Iterable[Card]) -> str:
    """Codes separated by single spaces."""
    return " ".join(CODE[c] for c in cards)


def parse_cards(text: str) -> list[Card]:
    """Parse card codes separated by spaces, commas or newlines."""
    return [parse_card(tok) for tok in re.split(r"[\s,]+", text.strip()) if tok]


def parse_deck(codes: str | Iterable[str]) -> tuple[Card, ...]:
    """Parse and check an explicit deck: exactly 52 distinct cards, in dealing order."""
    try:
        deck = parse_cards(codes) if isinstance(codes, str) else [parse_card(c) for c in codes]
    except InvalidCardError as exc:
        raise InvalidDeckError(f"bad deck: {exc}") from None
    return check_deck(deck)


def check_deck(deck: Iterable[Card]) -> tuple[Card, ...]:
    """Check that ``deck`` holds each of the 52 cards exactly once."""
    deck = tuple(deck)
    if len(deck) != 52:
        raise InvalidDeckError(f"a deck must have 52 cards, this one has {len(deck)}")
    if any(not isinstance(c, int) or not 0 <= c < 52 for c in deck):
        raise InvalidDeckError("a deck holds card numbers 0..51")
    if len(set(deck)) != 52:
        seen: set[int] = set()
        dup = next(c for c in deck if c in seen or seen.add(c))  # type: ignore[func-returns-value]
        raise InvalidDeckError(f"card {CODE[dup]} appears more than once in the deck")
    return deck
