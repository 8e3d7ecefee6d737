"""The base class of a bot: ``choose`` a move for each turn, optional hooks for the other events."""

from __future__ import annotations

import time

from casino.v1 import bot_pb2, game_pb2
from referee.rules import Move, RuleOptions

Choice = int | str | game_pb2.Move | Move


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
        ``game_pb2.Move`` or an engine ``Move``. Runs in a worker thread unless ``threaded`` is False."""
        raise NotImplementedError

    def on_game_start(self, start: bot_pb2.GameStart) -> None:
        """A game begins: ``start.seat`` / ``start.side`` are this bot's."""

    def on_play(self, play_made: bot_pb2.PlayMade) -> None:
        """Someone (this bot included) made a play; ``play_made.move`` is its notation. The SDK
        asks the referee for these events only when a subclass overrides this method."""

    def on_game_end(self, game_end: bot_pb2.GameEnd) -> None:
        """A game is over; ``game_end.result`` has the winner, scores and any failures."""
