"""The Royal Casino rules engine: pure functions over immutable states, no I/O, no clock.

>>> from referee.rules import new_game, legal_moves, apply
>>> state = new_game(seed=7)
>>> state = apply(state, legal_moves(state)[0])

The public surface is ``__all__``: the names bots and tools outside the engine may use, imported
from here (``from referee.rules import resample``), never from a submodule; the submodules' other
names may change without notice. The Python SDK keeps to it (tests/docs/test_layers.py).
"""

from .cards import (
    ACE,
    ACE_HIGH,
    ALL_CARDS,
    BIG_CASINO,
    CODE,
    KING,
    LITTLE_CASINO,
    RANK,
    SPADE,
    SUIT,
    SUITS,
    Card,
    card_code,
    cards_code,
    parse_card,
    parse_cards,
    parse_deck,
)
from .errors import (
    DecksExhaustedError,
    GameOverError,
    IllegalMoveError,
    InvalidCardError,
    InvalidDeckError,
    InvalidMoveError,
    InvalidObservationError,
    InvalidOptionError,
    InvalidRecordError,
    InvalidSeatError,
    RulesError,
)
from .legal import explain_illegal, legal_moves
from .moves import Move, MoveKind, format_move, parse_move
from .observation import Observation, observation
from .options import Condition, RuleOptions
from .play import apply, next_deal_if_over, play
from .record import RECORD_VERSION, game_record, replay_record
from .resample import resample
from .scoring import DealSheet, EndReason, GameResult, SideSheet
from .state import Build, DeckSource, GameState, LogEntry, make_position, new_game

__all__ = [  # noqa: RUF022 (grouped by subject, sorted within a group)
    # cards: ints 0..51 ((rank - 1) * 4 + suit), their codes, and per-card tables indexed by card
    "ACE", "ACE_HIGH", "ALL_CARDS", "BIG_CASINO", "CODE", "KING", "LITTLE_CASINO", "RANK", "SPADE", "SUIT",
    "SUITS", "Card", "card_code", "cards_code", "parse_card", "parse_cards", "parse_deck",
    # options, moves and their notation
    "Condition", "RuleOptions", "Move", "MoveKind", "format_move", "parse_move",
    # states and play
    "Build", "DeckSource", "GameState", "LogEntry", "make_position", "new_game",
    "apply", "explain_illegal", "legal_moves", "next_deal_if_over", "play",
    # scoring and results
    "DealSheet", "EndReason", "GameResult", "SideSheet",
    # what one seat sees, and a state drawn consistently with it
    "Observation", "observation", "resample",
    # game records
    "RECORD_VERSION", "game_record", "replay_record",
    # errors: every bad input raises a RulesError
    "DecksExhaustedError", "GameOverError", "IllegalMoveError", "InvalidCardError", "InvalidDeckError",
    "InvalidMoveError", "InvalidObservationError", "InvalidOptionError", "InvalidRecordError",
    "InvalidSeatError", "RulesError",
]
