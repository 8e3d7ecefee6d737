"""A small SDK for Royal Casino Arena bots in Python (distribution ``casino-bot``).

Write a bot by subclassing :class:`CasinoBot` and implementing one method::

    from casino_bot import CasinoBot, run

    class FirstMoveBot(CasinoBot):
        name = "first-move"

        def choose(self, turn):
            return 0            # an index into turn.legal_moves, a notation string or a game_pb2.Move

    if __name__ == "__main__":
        run(FirstMoveBot())

``run`` serves the bot over gRPC (casino.v1.BotService) on the address in ``CASINO_BOT_ADDRESS``
(``unix:/path/bot.sock`` or ``host:port``), with the standard health service (SERVING) and server
reflection, until SIGTERM or SIGINT (``serve.py``). The referee opens one stream per match; the SDK
answers the handshake, calls ``choose`` for every turn and the optional hooks for the other events,
and sends nothing else. ``legal_moves(turn)`` and ``state_from_turn(turn, rng)`` give the engine's
view of a turn for bots that want to search (``view.py``; see lookahead_bot.py). The SDK uses the
rules engine only through its public names (``referee.rules``, ``referee.wire.convert``).
"""

from __future__ import annotations

import os

os.environ.setdefault("GRPC_VERBOSITY", "NONE")  # gRPC's own log lines; set it to "debug" to see them

from .bot import CasinoBot, Choice, with_note
from .serve import run
from .view import legal_moves, options_from_turn, state_from_turn, table_from_turn

__all__ = ["CasinoBot", "Choice", "legal_moves", "options_from_turn", "run", "state_from_turn", "table_from_turn",
           "with_note"]
