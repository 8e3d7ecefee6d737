"""The game state: an immutable value; every play makes a new one (see ``play.apply``)."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from .cards import ALL_CARDS, RANK, Card, check_deck, parse_card, parse_cards
from .errors import DecksExhaustedError, InvalidDeckError, InvalidOptionError, InvalidSeatError
from .moves import Move
from .options import Condition, RuleOptions

if TYPE_CHECKING:
    from .scoring import DealSheet, GameResult

CARDS_PER_HAND = 4
TABLE_CARDS = 4


class Build(NamedTuple):
    """A build on the table (rule 8). ``id`` is stable within a deal; ``owner`` is a seat (rule 9)."""

    id: int
    value: int
    cards: tuple[Card, ...]
    owner: int
    multiple: bool


def is_multiple(cards: Sequence[Card], value: int) -> bool:
    """A build is single exactly when its cards (Aces 1) add up to its value (rule 8)."""
    return sum(RANK[c] for c in cards) != value


class LogEntry(NamedTuple):
    """One play in the game's history: public information."""

    deal: int
    seat: int
    move: Move


class DeckSource:
    """The deck of each deal: the caller's explicit decks first, then shuffles from the seed.

    Deal k uses explicit deck k while there is one; after that, the j-th next deal uses the j-th
    ``shuffle`` of a fresh canonically ordered deck by one ``random.Random(seed)`` per game.
    Decks are produced in order and memoised, so every state of a game sees the same decks.
    """

    __slots__ = ("seed", "explicit", "_rng", "_shuffled")

    def __init__(self, seed: int | None = None, decks: Iterable[Iterable[Card]] = ()) -> None:
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise InvalidOptionError(f"seed must be a whole number, not {seed!r}")
        self.seed = seed
        self.explicit: tuple[tuple[Card, ...], ...] = tuple(check_deck(d) for d in decks)
        if seed is None and not self.explicit:
            raise InvalidOptionError("a game needs a seed or at least one explicit deck")
        self._rng = random.Random(seed) if seed is not None else None
        self._shuffled: list[tuple[Card, ...]] = []

    def deck(self, deal: int) -> tuple[Card, ...]:
        """The deck for deal number ``deal`` (0-based), front card first."""
        if deal < len(self.explicit):
            return self.explicit[deal]
        if self._rng is None:
            raise DecksExhaustedError(
                f"deal {deal + 1} needs a deck but only {len(self.explicit)} explicit deck(s) and no seed were given"
            )
        while len(self._shuffled) <= deal - len(self.explicit):
            deck = list(ALL_CARDS)
            self._rng.shuffle(deck)
            self._shuffled.append(tuple(deck))
        return self._shuffled[deal - len(self.explicit)]


@dataclass(slots=True, eq=False)
class GameState:
    """Everything about a game at one moment. Immutable by contract: the engine never changes a
    state once built (it is not ``frozen`` only because that doubles the cost of making one).

    Sides: per-side tuples (``piles``, ``sweeps``, ``scores``...) are indexed by side, which is the
    seat except in partnerships (side = seat % 2). ``deal_over`` is only ever true on the state that
    ``play`` returns after the last card of a deal, before the next deal is dealt.
    """

    options: RuleOptions
    decks: DeckSource
    deal: int  # 0-based deal number
    dealer: int
    round: int  # 1-based round within the deal (a round = every hand played empty once)
    to_move: int
    hands: tuple[tuple[Card, ...], ...]  # per seat, sorted
    loose: tuple[Card, ...]  # sorted
    builds: tuple[Build, ...]  # by id
    next_build_id: int
    stock: tuple[Card, ...]  # undealt cards of this deal, next card first
    piles: tuple[tuple[Card, ...], ...]  # per side, in capture order
    sweeps: tuple[int, ...]  # per side, this deal
    last_capturer: int | None  # seat
    plays: int  # plays made in this deal
    table_dealt: tuple[Card, ...]  # the 4 cards dealt face up at the start of this deal
    scores: tuple[int, ...]  # per side, before this deal's points
    restricted: tuple[Condition | None, ...]  # per side, for this deal (rule 15)
    certain_at: tuple[int | None, ...]  # per side: play number at which its condition became certain
    continuation: bool  # rule 17: tied at the top at 21+, restrictions are off
    sheets: tuple["DealSheet", ...]  # finished deals
    log: tuple[Any, LogEntry] | None  # persistent list: (previous log, entry)
    deal_over: bool = False
    result: "GameResult | None" = None
    _legal: Any = field(default=None, repr=False)  # memo of legal_moves, filled on first call

    @property
    def is_over(self) -> bool:
        """True when the game has a result."""
        return self.result is not None

    @property
    def leader(self) -> int:
        """The seat after the dealer, who leads every round of this deal (rule 3)."""
        return (self.dealer + 1) % self.options.players

    def side_of(self, seat: int) -> int:
        """The side a seat scores for."""
        return self.options.side_of(seat)

    def deal_history(self) -> list[LogEntry]:
        """The plays of the current deal, oldest first (walks back only through this deal)."""
        entries: list[LogEntry] = []
        node = self.log
        while node is not None:
            node, entry = node
            if entry.deal != self.deal:
                break
            entries.append(entry)
        entries.reverse()
        return entries

    def history(self) -> list[LogEntry]:
        """Every play of the game so far, oldest first."""
        entries: list[LogEntry] = []
        node = self.log
        while node is not None:
            node, entry = node
            entries.append(entry)
        entries.reverse()
        return entries


def successor(
    state: GameState,
    round_: int,
    to_move: int,
    hands: tuple[tuple[Card, ...], ...],
    loose: tuple[Card, ...],
    builds: tuple[Build, ...],
    next_build_id: int,
    stock: tuple[Card, ...],
    piles: tuple[tuple[Card, ...], ...],
    sweeps: tuple[int, ...],
    last_capturer: int | None,
    plays: int,
    certain_at: tuple[int | None, ...],
    log: tuple[Any, LogEntry] | None,
) -> GameState:
    """The state after a play within the same deal. Positional on purpose: keyword construction
    of the 25-field dataclass costs four times as much, and this runs once per play
    (tests/test_state_layout.py pins the field order)."""
    return GameState(
        state.options, state.decks, state.deal, state.dealer, round_, to_move, hands, loose, builds,
        next_build_id, stock, piles, sweeps, last_capturer, plays, state.table_dealt, state.scores,
        state.restricted, certain_at, state.continuation, state.sheets, log,
    )


def new_game(
    options: RuleOptions | None = None,
    *,
    seed: int | None = None,
    decks: Iterable[Iterable[Card]] = (),
) -> GameState:
    """Start a game: deal the first deal from ``decks[0]`` or from the seed's first shuffle."""
    options = options or RuleOptions()
    source = DeckSource(seed, decks)
    sides = options.sides
    return deal_new(
        options=options,
        decks=source,
        deal=0,
        scores=(0,) * sides,
        continuation=False,
        sheets=(),
        log=None,
    )


def deal_new(
    *,
    options: RuleOptions,
    decks: DeckSource,
    deal: int,
    scores: tuple[int, ...],
    continuation: bool,
    sheets: tuple["DealSheet", ...],
    log: tuple[Any, LogEntry] | None,
) -> GameState:
    """The state at the start of deal ``deal``: table and first hands dealt (rule 3, 4)."""
    n = options.players
    deck = decks.deck(deal)
    dealer = (n - 1 + deal) % n
    leader = (dealer + 1) % n
    table = deck[:TABLE_CARDS]
    hands, stock = deal_hands(deck[TABLE_CARDS:], n, leader)
    sides = options.sides
    restricted = tuple(None if continuation else options.condition_for(s) for s in scores)
    return GameState(
        options=options,
        decks=decks,
        deal=deal,
        dealer=dealer,
        round=1,
        to_move=leader,
        hands=hands,
        loose=tuple(sorted(table)),
        builds=(),
        next_build_id=1,
        stock=stock,
        piles=((),) * sides,
        sweeps=(0,) * sides,
        last_capturer=None,
        plays=0,
        table_dealt=tuple(table),
        scores=scores,
        restricted=restricted,
        certain_at=(None,) * sides,
        continuation=continuation,
        sheets=sheets,
        log=log,
    )


def deal_hands(stock: Sequence[Card], players: int, leader: int) -> tuple[tuple[tuple[Card, ...], ...], tuple[Card, ...]]:
    """Deal 4 cards to each player as a block from the front, leader first (rule 4)."""
    hands: list[tuple[Card, ...]] = [()] * players
    for i in range(players):
        seat = (leader + i) % players
        hands[seat] = tuple(sorted(stock[CARDS_PER_HAND * i : CARDS_PER_HAND * (i + 1)]))
    return tuple(hands), tuple(stock[CARDS_PER_HAND * players :])


def make_position(
    options: RuleOptions | None = None,
    *,
    to_move: int = 0,
    hands: Mapping[int, str | Sequence[str]] | None = None,
    loose: str | Sequence[str] = (),
    builds: Sequence[Mapping[str, Any]] = (),
    scores: Sequence[int] | None = None,
    dealer: int | None = None,
    seed: int = 0,
) -> GameState:
    """A mid-deal position for scenario tests and tools, from card codes.

    ``builds`` items: ``{"value": 9, "cards": "5C 4D", "owner": 2}`` (``id`` optional, ``multiple``
    derived from value and cards). Cards not placed anywhere form the stock, in canonical order.
    """
    options = options or RuleOptions()
    n = options.players
    if not isinstance(to_move, int) or not 0 <= to_move < n:
        raise InvalidSeatError(f"seat {to_move!r} is not at a {n}-player table (seats 0..{n - 1})")
    placed: list[Card] = []

    def take(codes: str | Sequence[str]) -> tuple[Card, ...]:
        cards = parse_cards(codes) if isinstance(codes, str) else [parse_card(c) for c in codes]
        placed.extend(cards)
        return tuple(sorted(cards))

    hand_list: list[tuple[Card, ...]] = [()] * n
    for seat, codes in (hands or {}).items():
        if not isinstance(seat, int) or not 0 <= seat < n:
            raise InvalidSeatError(f"seat {seat!r} is not at a {n}-player table")
        hand_list[seat] = take(codes)
    loose_cards = take(loose)
    build_list: list[Build] = []
    for i, spec in enumerate(builds):
        cards = take(spec["cards"])
        owner = spec["owner"]
        if not isinstance(owner, int) or not 0 <= owner < n:
            raise InvalidSeatError(f"build owner {owner!r} is not a seat at a {n}-player table")
        value = spec["value"]
        build_list.append(Build(spec.get("id", i + 1), value, cards, owner, is_multiple(cards, value)))
    if len(set(placed)) != len(placed):
        raise InvalidDeckError("a card is placed twice in the position")
    stock = tuple(c for c in ALL_CARDS if c not in set(placed))
    sides = options.sides
    scores_t = tuple(scores) if scores is not None else (0,) * sides
    state = new_game(options, seed=seed)
    next_id = max((b.id for b in build_list), default=0) + 1
    return GameState(
        options=options,
        decks=state.decks,
        deal=0,
        dealer=(to_move - 1) % n if dealer is None else dealer,
        round=1,
        to_move=to_move,
        hands=tuple(hand_list),
        loose=loose_cards,
        builds=tuple(sorted(build_list)),
        next_build_id=next_id,
        stock=stock,
        piles=((),) * sides,
        sweeps=(0,) * sides,
        last_capturer=None,
        plays=0,
        table_dealt=(),
        scores=scores_t,
        restricted=tuple(options.condition_for(s) for s in scores_t),
        certain_at=(None,) * sides,
        continuation=False,
        sheets=(),
        log=None,
    )
