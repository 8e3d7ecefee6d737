"""Plain-text views of states and score sheets for the CLI, logs and golden transcripts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..match.record import forced_plays
from ..names import clean_name, clean_text
from ..rules import DealSheet, GameResult, GameState, cards_code, replay_record
from ..rules.errors import InvalidRecordError

MAX_ID_CHARS = 80  # of a game id or seat number shown from a record
MAX_LINE_CHARS = 2000  # of the "ended early" line of a record's failures
SHEET_COLUMNS = ("cards", "spades", "most_cards", "most_spades", "big_casino", "little_casino", "aces", "sweeps", "net_sweeps", "raw_points", "points")


def side_name(state_or_players: GameState | int, side: int, teams: bool | None = None,
              names: Sequence[str] | None = None) -> str:
    """``P0`` for a seat-side, ``P0+P2`` for a partnership; with ``names`` (by seat) who they
    are too: ``P0 greedy``, ``P0+P2 greedy+random``."""
    if isinstance(state_or_players, GameState):
        teams = state_or_players.options.teams
    seats = [side, side + 2] if teams else [side]
    label = "+".join(f"P{s}" for s in seats)
    if names is not None and all(s < len(names) and names[s] for s in seats):
        label += " " + "+".join(names[s] for s in seats)
    return label


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


def describe_result(result: GameResult, teams: bool, names: Sequence[str] | None = None) -> str:
    """One line: who won (``names``: who sits at each seat), the scores and why."""
    scores = " ".join(f"{side_name(0, s, teams)}={v}" for s, v in enumerate(result.scores))
    who = "draw" if result.winner is None else f"{side_name(0, result.winner, teams, names)} wins"
    return f"{who} ({result.reason.value}) after {result.deals} deal(s): {scores}"


def play_line(state: GameState, move_text: str) -> str:
    """One transcript line: where we are, what the mover sees and holds, how many plays, the play."""
    from ..rules import legal_moves

    hand = cards_code(state.hands[state.to_move])
    return (
        f"d{state.deal + 1} r{state.round} P{state.to_move} hand {hand} | {describe_table(state)}"
        f" | {len(legal_moves(state))} legal | {move_text}"
    )


def deal_header(state: GameState) -> str:
    """The line that opens a deal."""
    hands = " / ".join(f"P{s}: {cards_code(h)}" for s, h in enumerate(state.hands))
    return f"== deal {state.deal + 1}, dealer P{state.dealer}, table {cards_code(state.table_dealt)}; {hands}"


def seat_label(seat: int, names: Sequence[str] | None = None) -> str:
    """``P1 greedy``: a seat and who sits there (just ``P1`` when nobody is named)."""
    name = names[seat] if names is not None and seat < len(names) else ""
    return f"P{seat} {name}" if name else f"P{seat}"


def record_failures(wrapper: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The referee record's failures with the fields a viewer reads; malformed entries skipped
    (the record comes from a file or a database: it is not trusted)."""
    out = []
    for f in (wrapper or {}).get("failures") or []:
        try:
            out.append({"seat": int(f.get("seat", 0)), "deal": int(f.get("deal", 0)),
                        "play": int(f.get("playNumber", 0)),
                        "kind": str(f.get("kind", "")).removeprefix("FAILURE_KIND_").lower(),
                        "reason": str(f.get("reason", "")), "received": str(f.get("received", "")),
                        "forfeit": bool(f.get("forfeit"))})
        except (AttributeError, TypeError, ValueError):
            continue
    return out


def failure_line(f: dict[str, Any], names: Sequence[str] | None = None) -> str:
    """One failure: who, what kind, where, why, and what it cost."""
    where = f"at deal {f['deal'] + 1} play {f['play']}" if f["play"] else "before the first play"
    received = f"; received {f['received']}" if f["received"] and f["received"] not in f["reason"] else ""
    cost = "forfeit" if f["forfeit"] else "random move played"
    return f"{seat_label(f['seat'], names)}: {f['kind']} {where}: {f['reason']}{received} -> {cost}"


def _forfeit_result_line(wrapper: dict[str, Any], teams: bool, names: Sequence[str] | None) -> str:
    """Who won a game that ended with a forfeit, with the scores it stopped at."""
    result = wrapper.get("result") or {}
    try:
        winner = int(result.get("winnerSide", -1))
        scores = [int(v) for v in result.get("scores", [])]
        deals = int(result.get("deals", 0))
    except (AttributeError, TypeError, ValueError):
        return "ended early (the record's result is malformed)"
    who = f"{side_name(0, winner, teams, names)} wins" if winner >= 0 else "no winner"
    shown = " ".join(f"{side_name(0, s, teams)}={v}" for s, v in enumerate(scores))
    return f"ended early: {result.get('reason', 'forfeit')}; {who} after {deals} deal(s): {shown}"


def _position_lines(state: GameState) -> list[str]:
    """Every seat's hand and the table, as ``record_lines`` shows them before a play."""
    hands = " / ".join(f"P{s}: {cards_code(h) or '-'}" for s, h in enumerate(state.hands))
    return [f"        hands {hands}", f"        table {describe_table(state)}"]


def record_lines(record: dict[str, Any], names: Sequence[str] | None = None, full: bool = False) -> list[str]:
    """A game record (the engine's, or the referee's wrapping it) re-checked against the engine
    and rendered play by play, each play with the seat (and ``names``: who sits there, by seat;
    default the record's own names) that made it; ``full``: every hand and the table before each
    play. A game that ended early shows who failed, why and where, and who won. Replay errors
    propagate (the record is not trusted)."""
    wrapper = record if isinstance(record, dict) and "engine" in record else None
    engine_record = wrapper["engine"] if wrapper is not None else record
    if wrapper is not None:
        seats_text = _seats_text(wrapper)  # refuses malformed seats before anything is shown
    if names is None and wrapper is not None:
        try:
            seats = sorted(wrapper.get("seats") or [], key=lambda s: int(s.get("seat", 0)))
            names = [clean_name(str(s.get("name", ""))) for s in seats]  # a record file can come from anywhere
        except (AttributeError, TypeError, ValueError):
            names = None  # seats without usable numbers: plays are shown by seat alone
    before: list[GameState] = []  # the state before each play, in play order
    final = replay_record(engine_record, on_play=lambda state, text: before.append(state))
    forced = forced_plays(wrapper, before) if wrapper is not None else frozenset()
    teams = final.options.teams
    failures = record_failures(wrapper)
    substituted = {(f["deal"], f["play"]): f for f in failures if not f["forfeit"]}
    # the bots' own errors and notes (protocol 1.2), by play index over the game
    reports = {r["play"]: r for r in (wrapper or {}).get("bot_reports", []) if isinstance(r, dict)
               and isinstance(r.get("play"), int)}
    lines = []
    if wrapper is not None:
        lines.append(f"game {clean_text(str(wrapper.get('game_id')), MAX_ID_CHARS)} [{seats_text}]")
    states = iter(enumerate(before))
    for k, deal in enumerate(engine_record["deals"]):
        lines.append(f"== deal {k + 1}, dealer P{deal.get('dealer')}")
        for i, text in enumerate(deal["moves"]):
            index, state = next(states)
            if full:
                lines += _position_lines(state)
            line = f"  {i + 1:2d}. {seat_label(state.to_move, names)}: {text}"
            if (f := substituted.get((k, i + 1))) is not None:
                line += f"  [random move: {f['kind']}]"
            if index in forced:
                line += "  [forced: the only legal move]"
            lines.append(line)
            said = reports.get(index, {})
            lines += [f"      {label}: {clean_text(str(said[key]), MAX_LINE_CHARS)}"
                      for key, label in (("error", "bot error"), ("note", "note")) if key in said]
        for f in failures:
            if f["forfeit"] and f["deal"] == k:
                play = f"  {f['play']:2d}." if f["play"] else "     "
                if full and f["play"] and k == final.deal:
                    lines += _position_lines(final)  # what the seat held when it failed to play
                lines.append(f"{play} {seat_label(f['seat'], names)}: forfeits ({f['kind']})")
        if k < len(final.sheets):
            lines += ["  " + line for line in describe_sheet(final.sheets[k], teams)]
    lines += [clean_text(failure_line(f, names), MAX_LINE_CHARS) for f in failures]
    if final.result:
        lines.append(describe_result(final.result, teams, names))
    elif wrapper is not None:
        lines.append(clean_text(_forfeit_result_line(wrapper, teams, names), MAX_LINE_CHARS))
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
