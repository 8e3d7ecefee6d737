"""A stored game's failures and winners in words: the kind of a failure, the play it happened at,
which failures forfeited the game. Pure functions over a game's stored result (casino.v1.GameResult
as JSON), shared by the `arena` command and the web app."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def kind_name(kind: Any) -> str:
    """``FAILURE_KIND_ILLEGAL_MOVE`` (as stored) -> ``illegal_move``."""
    return str(kind).removeprefix("FAILURE_KIND_").lower()


def failure_where(failure: Mapping[str, Any]) -> str:
    """Where a failure happened: ``deal 2 play 7``, or ``before the first play`` (e.g. at startup)."""
    play = int(failure.get("playNumber", 0))
    return f"deal {int(failure.get('deal', 0)) + 1} play {play}" if play else "before the first play"


def failure_place(failure: Mapping[str, Any]) -> str:
    """``at deal 2 play 7`` or ``before the first play``, to follow a failure's kind in a sentence."""
    where = failure_where(failure)
    return f"at {where}" if int(failure.get("playNumber", 0)) else where


def failures_of(result: Mapping[str, Any] | None, forfeits: bool) -> list[dict[str, Any]]:
    """The result's failures that forfeited the game (``forfeits``) or that a random move answered."""
    return [f for f in (result or {}).get("failures", []) if bool(f.get("forfeit")) == forfeits]


def winners(result: Mapping[str, Any] | None, seat_names: Sequence[str]) -> list[str]:
    """The bots of the winning side in seat order; none for a draw (or no result)."""
    if not result or int(result.get("winnerSide", -1)) < 0:
        return []
    ranks = result.get("ranks", [])
    return [name for name, rank in zip(seat_names, ranks) if int(rank) == 1]
