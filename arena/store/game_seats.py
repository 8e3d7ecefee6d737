"""The game_seats rows of a finished game: per seat, the bot, its result (win, draw, loss) and
whether and how it forfeited, worked out once from the stored result, so lists of games can be
filtered by bot, result or forfeit through indexes. Store.finish and Store.fail write them with
the game; ``fill_game_seats`` writes them for games stored before the table existed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from google.protobuf import json_format
from sqlalchemy import Connection, insert, select

from casino.v1 import game_pb2

from ..rating.results import GameOutcome
from ..rating.standings import seat_result
from .models import Game, GameSeat, GameStatus

FILL_BATCH = 500  # games read at a time when filling the table for an existing database


def sides_of(players: int) -> tuple[int, ...]:
    """The side each seat scores for in the arena's games (4 players: partnerships)."""
    return tuple(seat % 2 for seat in range(4)) if players == 4 else tuple(range(players))


def seat_rows(tid: int, number: int, seat_bots: Sequence[int], result: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The game_seats rows of game ``number``: ``result`` is its stored casino.v1.GameResult (JSON),
    None for a game the referee failed to play (no result, so no outcome)."""
    if result is None:
        return [{"tournament_id": tid, "game_number": number, "seat": seat, "bot_position": position,
                 "outcome": None, "forfeited": False, "forfeit": None, "failures": 0, "side": None, "rank": None,
                 "points": None} for seat, position in enumerate(seat_bots)]
    parsed = json_format.ParseDict(result, game_pb2.GameResult(), ignore_unknown_fields=True)
    outcome = GameOutcome.from_result(number, tuple(map(str, seat_bots)), sides_of(len(seat_bots)), parsed)
    forfeits = dict(reversed(outcome.forfeits))  # seat -> its first forfeit's column
    failures = [sum(1 for f in parsed.failures if f.seat == seat) for seat in range(len(seat_bots))]
    return [{"tournament_id": tid, "game_number": number, "seat": seat, "bot_position": position,
             "outcome": seat_result(outcome, seat), "forfeited": seat in forfeits, "forfeit": forfeits.get(seat),
             "failures": failures[seat], "side": outcome.sides[seat], "rank": outcome.ranks[seat],
             "points": outcome.scores[outcome.sides[seat]]}
            for seat, position in enumerate(seat_bots)]


def write_seats(conn: Connection, tid: int, number: int, seat_bots: Sequence[int],
                result: Mapping[str, Any] | None) -> None:
    """Insert game ``number``'s rows on ``conn`` (the transaction that stores the game)."""
    conn.execute(insert(GameSeat), seat_rows(tid, number, seat_bots, result))


def fill_game_seats(conn: Connection) -> int:
    """Write the rows of every done or failed game, in batches by game id (an upgrade of a database
    whose games were stored before game_seats); how many games. Reads only the columns it needs."""
    after, filled = 0, 0
    finished = (GameStatus.DONE.value, GameStatus.FAILED.value)
    while True:
        rows = conn.execute(select(Game.id, Game.tournament_id, Game.number, Game.seat_bots, Game.status, Game.result)
                            .where(Game.id > after, Game.status.in_(finished)).order_by(Game.id).limit(FILL_BATCH)).all()
        if not rows:
            return filled
        seats = []
        for _id, tid, number, seat_bots, status, result in rows:
            seats += seat_rows(tid, number, seat_bots, result if status == GameStatus.DONE.value else None)
        conn.execute(insert(GameSeat), seats)
        filled += len(rows)
        after = rows[-1][0]
