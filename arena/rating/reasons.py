"""Why a game ended, in words: the one place a stored result's machine ``reason``
(``target_reached``, ``condition_met``, ``max_deals``, ``forfeit``) becomes a phrase people read,
so every page (the game lists, the replay viewer, the game page) says it the same way. The JSON
keeps the machine value; the words are added beside it.

The numbers come from the game's own data where it has them: the target is rule 14's
(``TARGET_SCORE``: 21 for every table size and variant this engine plays), the deal limit is the
result's own count of deals, and a condition win names the condition and the score its side was
on, read from the last deal's score sheet in the game's record (rules 15-16). A result without its
record (a list that did not load it, a record that is not readable) still gets a true sentence,
only a vaguer one. Pure functions over stored JSON, which is not trusted: a malformed value gives
the vaguer words, never an error."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from referee.rules import Condition
from referee.rules.options import RESTRICTED_SCORES, TARGET_SCORE

from .failures import kind_name

CONDITION_WORDS = {  # what a restricted side must take (rule 15), as a player says it
    Condition.MOST_CARDS.value: "most cards",
    Condition.BIG_CASINO.value: "Big Casino (10♦)",
    Condition.LITTLE_CASINO.value: "Little Casino (2♠)",
    Condition.MOST_SPADES.value: "most spades",
}
REASONS = ("target_reached", "condition_met", "max_deals", "forfeit")  # every reason a referee reports


def kind_words(kind: Any) -> str:
    """A failure's kind as words: ``FAILURE_KIND_ILLEGAL_MOVE`` -> ``illegal move`` (kind_name's
    machine form, read aloud)."""
    return kind_name(kind).replace("_", " ")


def condition_win(record: Mapping[str, Any] | None) -> tuple[str, int | None] | None:
    """The condition that won the game in ``record`` (a referee record, or the engine's alone) and
    the score its side started the deal on; None when the record does not say (no sheet, no
    condition winner). The score is None when the sheet's numbers do not add up to one."""
    engine = record.get("engine", record) if isinstance(record, Mapping) else None
    deals = engine.get("deals") if isinstance(engine, Mapping) else None
    sheet = deals[-1].get("sheet") if isinstance(deals, list) and deals and isinstance(deals[-1], Mapping) else None
    if not isinstance(sheet, Mapping):
        return None
    side, sides, after = sheet.get("condition_winner"), sheet.get("sides"), sheet.get("scores_after")
    if type(side) is not int or not isinstance(sides, list) or not 0 <= side < len(sides) \
            or not isinstance(sides[side], Mapping):
        return None
    condition = sides[side].get("restricted")
    if condition not in CONDITION_WORDS:
        return None
    points = sides[side].get("points")
    on = after[side] - points if isinstance(after, list) and side < len(after) and type(after[side]) is int \
        and type(points) is int else None
    return str(condition), on if on in RESTRICTED_SCORES else None


def reason_words(result: Mapping[str, Any] | None, names: Sequence[str] = (),
                 record: Mapping[str, Any] | None = None) -> str:
    """Why the game of ``result`` (a stored casino.v1.GameResult as JSON) ended, as a phrase that
    can follow "won by X:" or stand alone: ``reached 21 points``, ``on 20 points, took Little Casino
    (2♠)``, ``the deal limit (30 deals)``, ``greedy forfeited (crash)``. ``names``: the seats' bots,
    by seat (for a forfeit); ``record``: the game's record, for which condition won. Empty for no
    result; an unknown reason is given as it is, its underscores spaces."""
    if not isinstance(result, Mapping):
        return ""
    reason = str(result.get("reason") or "")
    if reason == "target_reached":
        return f"reached {TARGET_SCORE} points"
    if reason == "condition_met":
        won = condition_win(record)
        if won is None:
            return f"met its condition on {RESTRICTED_SCORES[0]}-{RESTRICTED_SCORES[-1]} points"
        condition, on = won
        return f"on {on} points, took {CONDITION_WORDS[condition]}" if on is not None \
            else f"met its condition: took {CONDITION_WORDS[condition]}"
    if reason == "max_deals":
        deals = result.get("deals")
        return f"the deal limit ({deals} deals)" if type(deals) is int and deals > 0 else "the deal limit"
    if reason == "forfeit":
        failures = result.get("failures")
        who = []
        for f in failures if isinstance(failures, list) else []:
            if isinstance(f, Mapping) and f.get("forfeit"):
                seat = f.get("seat", 0)
                name = names[seat] if type(seat) is int and 0 <= seat < len(names) else f"seat {seat}"
                who.append(f"{name} forfeited ({kind_words(f.get('kind', ''))})")
        return "; ".join(who) or "a forfeit"
    return reason.replace("_", " ")
