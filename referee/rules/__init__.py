"""The Royal Casino rules engine: pure functions over immutable states, no I/O, no clock.

>>> from referee.rules import new_game, legal_moves, apply
>>> state = new_game(seed=7)
>>> state = apply(state, legal_moves(state)[0])
"""

from .cards import Card, card_code, cards_code, parse_card, parse_cards, parse_deck
from .errors import (
    DecksExhaustedError,
    GameOverError,
    IllegalMoveError,
    InvalidCardError,
    InvalidDeckError,
    InvalidMoveError,
    InvalidOptionError,
    InvalidRecordError,
    InvalidSeatError,
    RulesError,
)
from .legal import explain_illegal, legal_moves
from .moves import Move, MoveKind, format_move, parse_move
from .options import Condition, RuleOptions
from .play import apply, next_deal_if_over, play
from .scoring import DealSheet, EndReason, GameResult, SideSheet
from .state import Build, DeckSource, GameState, LogEntry, make_position, new_game

__all__ = [
    "Build", "Card", "Condition", "DealSheet", "DeckSource", "DecksExhaustedError", "EndReason",
    "GameOverError", "GameResult", "GameState", "IllegalMoveError", "InvalidCardError",
    "InvalidDeckError", "InvalidMoveError", "InvalidOptionError", "InvalidRecordError",
    "InvalidSeatError", "LogEntry", "Move", "MoveKind", "RuleOptions", "RulesError", "SideSheet",
    "apply", "card_code", "cards_code", "explain_illegal", "format_move", "legal_moves",
    "make_position", "new_game", "next_deal_if_over", "parse_card", "parse_cards", "parse_deck",
    "parse_move", "play",
]

from .observation import Observation, observation  # noqa: E402
from .record import RECORD_VERSION, game_record, replay_record  # noqa: E402

__all__ += ["Observation", "RECORD_VERSION", "game_record", "observation", "replay_record"]
