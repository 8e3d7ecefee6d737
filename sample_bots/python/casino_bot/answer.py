"""How the SDK answers the referee's events, apart from any transport: the Hello for a handshake,
the MoveChoice for a Turn (with the first legal move and the error as fallback when ``choose``
raises), and the hooks. ``serve.py`` calls these over gRPC; the referee's in-process bots
(``inprocess:PATH.py``, referee/bots/inprocess.py) call the very same functions, so fallbacks,
notes and errors are the same on both roads."""

from __future__ import annotations

import logging
import os
import time
import traceback
from typing import Any

from casino.v1 import bot_pb2, game_pb2
from referee.rules import Move
from referee.wire.convert import PROTOCOL_VERSION, options_from_pb

from .bot import MAX_NOTE_CHARS, CasinoBot, Choice, Noted

log = logging.getLogger("casino_bot")
MAX_ERROR_CHARS = 500  # of an error the referee keeps


def to_choice(turn: bot_pb2.Turn, value: Choice) -> bot_pb2.MoveChoice:
    """What ``choose`` returned, as the answer to ``turn``; ValueError/TypeError when it is none."""
    if isinstance(value, Noted):
        choice = to_choice(turn, value.choice)
        choice.note = value.note[:MAX_NOTE_CHARS]
        return choice
    if isinstance(value, Move):
        return bot_pb2.MoveChoice(turn_id=turn.turn_id, notation=str(value))
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < len(turn.legal_moves):
            raise ValueError(f"index {value} out of range (0..{len(turn.legal_moves) - 1})")
        return bot_pb2.MoveChoice(turn_id=turn.turn_id, index=value)
    if isinstance(value, str):
        return bot_pb2.MoveChoice(turn_id=turn.turn_id, notation=value)
    if isinstance(value, game_pb2.Move):
        return bot_pb2.MoveChoice(turn_id=turn.turn_id, move=value)
    raise TypeError(f"choose returned {type(value).__name__}; expected int, str or Move")


def error_text(exc: BaseException) -> str:
    """An exception as the referee records it: type, message and the line it was raised at
    (``AttributeError: 'Move' object has no attribute 'x' (choose, my_bot.py:12)``)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({frames[-1].name}, {os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}"[: MAX_ERROR_CHARS - len(where)] + where


def hello(bot: CasinoBot, hs: bot_pb2.Handshake) -> bot_pb2.Hello:
    """Take the match's handshake (options, time control) and say who the bot is; PlayMade events
    are asked for only when the bot overrides ``on_play``."""
    try:
        bot.options = options_from_pb(hs.options)
    except Exception:  # noqa: BLE001 (options the engine cannot use: the bot plays without them)
        bot.options = None
    bot.time_control = hs.time_control
    return bot_pb2.Hello(name=bot.name, version=bot.version, protocol_version=PROTOCOL_VERSION,
                         play_events=type(bot).on_play is not CasinoBot.on_play)


def start_turn(bot: CasinoBot) -> None:
    """Note when the turn arrived (``turn_started``, ``turn_started_cpu``) before ``decide``."""
    bot.turn_started = time.monotonic()
    bot.turn_started_cpu = time.process_time()


def decide(bot: CasinoBot, turn: bot_pb2.Turn) -> bot_pb2.MoveChoice:
    """The bot's answer to ``turn``: its choice, or, when ``choose`` raises or returns something
    that is no move, the first legal move with the error (the referee records it)."""
    try:
        return to_choice(turn, bot.choose(turn))
    except Exception as exc:  # a bug in the bot: play the first legal move, and say so to the referee
        log.exception("choose failed; answering index 0 (reported to the referee as this bot's error)")
        return bot_pb2.MoveChoice(turn_id=turn.turn_id, index=0, error=error_text(exc))


def call_hook(fn: Any, arg: Any) -> None:
    """An ``on_*`` hook; what it raises is logged and goes no further."""
    try:
        fn(arg)
    except Exception:
        log.exception("%s failed", getattr(fn, "__name__", "hook"))
