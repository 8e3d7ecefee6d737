"""Plain-text views of states and score sheets for the CLI, logs and golden transcripts."""

from __future__ import annotations

from typing import Any

from .names import clean_name, clean_text
from .rules import DealSheet, GameResult, GameState, cards_code, replay_record
from .rules.errors import InvalidRecordError

MAX_ID_CHARS = 80  # of a game id or seat number shown from a record
MAX_LINE_CHARS = 2000  # of the "ended early" line of a record's failures
SHEET_COLUMNS = ("cards", "spades", "most_cards", "most_spades", "big_casino", "little_casino", "aces", "sweeps", "net_sweeps", "raw_points", "points")


def side_name(state_or_players: GameState | int, side: int, teams: bool | None = None) -> str:
    """``P0`` for a seat-side, ``P0+P2`` for a partnership."""
    if isinstance(state_or_players, GameState):
        teams = state_or_players.options.teams
    return f"P{side}+P{side + 2}" if teams else f"P{side}"


def describe_table(state: GameState) -> str:
    """One line: loose cards and builds, e.g. ``loose: 5S KH | b1[9 single P1: 4D 5C]``."""
    parts = [f"loose: {cards_code(state.loose) or '-'}"]
    for b in state.builds:
        kind = "multiple" if b.multiple else "single"
        parts.append(f"b{b.id}[{b.value} {kind} P{b.owner}: {cards_code(b.cards)}]")
    return " | ".join(parts)


def describe_sheet(sheet: DealSheet, teams: bool) -> list[str]:
    """The score sheet of one deal as aligned text lines."""
    names = [side_name(0, s.side, teams) for s in sheet.sides]
    width = max(12, *(len(n) + 2 for n in names))
    lines = ["item".ljust(14) + "".join(n.rjust(width) for n in names)]
    for col in SHEET_COLUMNS:
        cells = []
        for s in sheet.sides:
            v = getattr(s, col)
            cells.append(("yes" if v else "-") if isinstance(v, bool) else str(v))
        lines.append(col.ljust(14) + "".join(c.rjust(width) for c in cells))
    restricted = ["-" if s.restricted is None else f"{s.restricted.value}:{'met' if s.condition_met else 'missed'}" for s in sheet.sides]
    lines.append("restricted".ljust(14) + "".join(c.rjust(width) for c in restricted))
    lines.append("score".ljust(14) + "".join(str(v).rjust(width) for v in sheet.scores_after))
    if sheet.tied:
        lines.append(f"tied, scored by nobody: {', '.join(sheet.tied)}")
    return lines


def describe_result(result: GameResult, teams: bool) -> str:
    """One line: who won, the scores and why."""
    scores = " ".join(f"{side_name(0, s, teams)}={v}" for s, v in enumerate(result.scores))
    who = "draw" if result.winner is None else f"{side_name(0, result.winner, teams)} wins"
    return f"{who} ({result.reason.value}) after {result.deals} deal(s): {scores}"


def play_line(state: GameState, move_text: str) -> str:
    """One transcript line: where we are, what the mover sees and holds, how many plays, the play."""
    from .rules import legal_moves

    hand = cards_code(state.hands[state.to_move])
    return (
        f"d{state.deal + 1} r{state.round} P{state.to_move} hand {hand} | {describe_table(state)}"
        f" | {len(legal_moves(state))} legal | {move_text}"
    )


def deal_header(state: GameState) -> str:
    """The line that opens a deal."""
    hands = " / ".join(f"P{s}: {cards_code(h)}" for s, h in enumerate(state.hands))
    return f"== deal {state.deal + 1}, dealer P{state.dealer}, table {cards_code(state.table_dealt)}; {hands}"


def record_lines(record: dict[str, Any]) -> list[str]:
    """A game record (the engine's, or the referee's wrapping it) re-checked against the engine
    and rendered play by play; replay errors propagate (the record is not trusted)."""
    wrapper = record if isinstance(record, dict) and "engine" in record else None
    engine_record = wrapper["engine"] if wrapper is not None else record
    final = replay_record(engine_record)
    teams = final.options.teams
    lines = []
    if wrapper is not None:
        lines.append(f"game {clean_text(str(wrapper.get('game_id')), MAX_ID_CHARS)} [{_seats_text(wrapper)}]")
    for k, deal in enumerate(engine_record["deals"]):
        lines.append(f"== deal {k + 1}, dealer P{deal['dealer']}")
        lines += [f"  {i + 1:2d}. {text}" for i, text in enumerate(deal["moves"])]
        if k < len(final.sheets):
            lines += ["  " + line for line in describe_sheet(final.sheets[k], teams)]
    if final.result:
        lines.append(describe_result(final.result, teams))
    elif wrapper is not None:
        result = wrapper.get("result")
        failures = wrapper.get("failures")
        failures = failures if isinstance(failures, list) else []
        reasons = [str(f.get("reason", "")) for f in failures if isinstance(f, dict)]
        reason = str(result.get("reason")) if isinstance(result, dict) else "?"
        lines.append(clean_text(f"ended early: {reason}; " + "; ".join(reasons), MAX_LINE_CHARS))
    else:
        lines.append("unfinished game")
    return lines


def _seats_text(wrapper: dict[str, Any]) -> str:
    """``P0 name, P1 name`` from a game record's seats; names cleaned, since a record file can
    come from anywhere (referee/names.py)."""
    seats = wrapper.get("seats", [])
    if not isinstance(seats, list) or not all(isinstance(s, dict) for s in seats):
        raise InvalidRecordError("malformed record: seats must be a list of objects")
    return ", ".join(f"P{clean_text(str(s.get('seat', '?')), MAX_ID_CHARS)} {clean_name(str(s.get('name', '')))}"
                     for s in seats)
