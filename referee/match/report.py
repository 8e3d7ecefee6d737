"""What a match reports: each finished game (GameReport) and the tally (MatchReport)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from casino.v1 import game_pb2, referee_pb2


@dataclass
class GameReport:
    """One finished game: its protocol result and its JSON record."""

    game_id: str
    game_number: int
    seat_bots: list[int]
    result: game_pb2.GameResult
    record: dict[str, Any]


@dataclass
class MatchReport:
    match_id: str
    bot_names: list[str]
    games: list[GameReport]
    logs_dir: Path

    def tally(self) -> referee_pb2.MatchResult:
        """Wins, draws, losses and forfeits per bot (request order)."""
        n = len(self.bot_names)
        wins, draws, losses, forfeits = [0] * n, [0] * n, [0] * n, [0] * n
        for game in self.games:
            for seat, bot in enumerate(game.seat_bots):
                rank = game.result.ranks[seat]
                if any(f.seat == seat and f.forfeit for f in game.result.failures):
                    forfeits[bot] += 1
                    losses[bot] += 1  # a forfeit is a loss, even when every side forfeited
                elif rank == 1 and game.result.winner_side >= 0:
                    wins[bot] += 1
                elif rank == 1:  # shares the top with another side: a draw
                    draws[bot] += 1
                else:
                    losses[bot] += 1
        return referee_pb2.MatchResult(
            match_id=self.match_id, wins=wins, draws=draws, losses=losses, forfeits=forfeits,
            game_ids=[g.game_id for g in self.games],
        )

