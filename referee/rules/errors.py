"""Typed errors of the rules engine: every bad input raises one of these, never a bare KeyError."""

from __future__ import annotations


class RulesError(Exception):
    """Base of every error the rules engine raises on bad input."""


class InvalidCardError(RulesError, ValueError):
    """A card code that is not one of the 52 cards (e.g. ``1X``)."""


class InvalidDeckError(RulesError, ValueError):
    """An explicit deck that is not 52 distinct valid cards."""


class InvalidOptionError(RulesError, ValueError):
    """A rule option (players, partnerships, maximum deals, ...) with a wrong value."""


class InvalidSeatError(RulesError, ValueError):
    """A seat number outside the table."""


class InvalidMoveError(RulesError, ValueError):
    """A move that is malformed: bad notation, unknown build, card codes that do not parse."""


class IllegalMoveError(RulesError, ValueError):
    """A well-formed move that the rules do not allow in this position; the message says why."""

    def __init__(self, move: str, reason: str) -> None:
        super().__init__(f"illegal move {move!r}: {reason}")
        self.move = move
        self.reason = reason


class GameOverError(RulesError):
    """A move was offered after the game ended."""


class DecksExhaustedError(RulesError):
    """A game from explicit decks needs another deal but no deck (and no seed) is left."""


class InvalidRecordError(RulesError, ValueError):
    """A game record that is malformed or does not replay to what it claims."""


class InvalidObservationError(RulesError, ValueError):
    """An observation that no state of the game can produce: cards that do not add up, plays that do not replay."""
