"""The base class of a bot: ``choose`` a move for each turn, optional hooks for the other events."""

from __future__ import annotations

import time
from dataclasses import dataclass

from casino.v1 import bot_pb2, game_pb2
from referee.rules import Move, RuleOptions

MAX_NOTE_CHARS = 1000  # of a note the referee keeps (docs/protocol.md); the SDK sends no more


@dataclass(frozen=True)
class Noted:
    """A choice with a note on it (``with_note``)."""

    choice: int | str | game_pb2.Move | Move
    note: str


def with_note(choice: int | str | game_pb2.Move | Move, note: str) -> Noted:
    """``choice``, with ``note`` (your reasoning, an evaluation) on the play: its owner sees it in
    the replay, no other bot does. ``return with_note(best, f"value {v:.2f}")`` from ``choose``."""
    return Noted(choice, str(note)[:MAX_NOTE_CHARS])


Choice = int | str | game_pb2.Move | Move | Noted


class CasinoBot:
    """Base class of a bot. Override ``choose``; the ``on_*`` hooks are optional.

    The SDK sets ``self.options`` (engine RuleOptions) and ``self.time_control`` (the match's
    ``casino.v1.TimeControl``) at each handshake, and before each ``choose`` ``self.turn_started``
    (``time.monotonic()`` when the turn arrived) and ``self.turn_started_cpu``
    (``time.process_time()`` then: this process's CPU time, all threads). The move limit
    ``turn.move_time_ms`` counts from the referee's sending, so answer well within it; under a
    CPU-time limit (``time_control.cpu_time_ms`` > 0) the referee counts the CPU time of the
    bot's processes instead, with ``move_time_ms`` as a wall-clock backstop.
    """

    name = "python-bot"
    version = "0.1.0"
    # choose() runs in a worker thread so a slow bot never stalls the connection; a bot whose
    # choose() takes microseconds sets this False and saves the hand-off on every turn
    threaded = True

    def __init__(self) -> None:
        self.options: RuleOptions | None = None
        self.time_control: game_pb2.TimeControl | None = None
        self.turn_started = time.monotonic()
        self.turn_started_cpu = time.process_time()

    def choose(self, turn: bot_pb2.Turn) -> Choice:
        """The move for ``turn``: an index into ``turn.legal_moves``, a notation string, a
        ``game_pb2.Move`` or an engine ``Move`` (any of them ``with_note``). Runs in a worker thread
        unless ``threaded`` is False. If it raises, the SDK answers the first legal move and tells
        the referee it is a fallback after this error (its type, message and line): the play is
        recorded as the bot's error, and `referee check` is not clean."""
        raise NotImplementedError

    def on_game_start(self, start: bot_pb2.GameStart) -> None:
        """A game begins: ``start.seat`` / ``start.side`` are this bot's."""

    def on_play(self, play_made: bot_pb2.PlayMade) -> None:
        """Someone (this bot included) made a play; ``play_made.move`` is its notation. The SDK
        asks the referee for these events only when a subclass overrides this method."""

    def on_game_end(self, game_end: bot_pb2.GameEnd) -> None:
        """A game is over; ``game_end.result`` has the winner, scores and any failures."""
