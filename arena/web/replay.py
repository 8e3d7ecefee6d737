"""The replay viewer's data: a game record rebuilt through the engine into one JSON view per step,
so a page can step through a game play by play (pure: no web framework, no database).

Steps: view 0 is the first deal before its first play; view k (k >= 1) is the position right
after the game's k-th play, as the engine leaves it (after a deal's last play the next deal is
already dealt, so the view shows it; the deal just ended is in ``deal_end``). So views[k]'s
position is the one ``arena show --full`` (``record_lines(full=True)``) prints before the game's
(k+1)-th play line, for every k below the number of plays; the last view of a forfeited game is
the position it prints before the ``forfeits`` line. In that mapping:

- ``table_text`` is exactly the text after ``table `` (``describe_table``: ``loose: 5S KH |
  b1[9 single P1: 4D 5C]``); the page draws it in ``#table`` as ``.loose .card[data-card]`` in
  that order and one ``.build[data-build=b1][data-value][data-owner][data-kind]`` per build
  holding its ``.card``s, and keeps the same text in ``#table[data-text]``.
- ``hands[s]`` are the codes after ``P<s>: `` in the ``hands`` line (``-`` there for an empty
  hand), drawn in ``#hand-<s>``.

Score sheets: the play that ends a deal carries that deal's full sheet in ``deal_end`` (with the
residue the last capturer took); every view lists the finished deals so far in ``sheets`` as
``{"deal", "points", "scores_after"}`` (the full sheet in every view would be most of the data).

Only what the record holds is needed: a record of a game still running (fewer plays, no sheet
for its current deal, no result) gives the views so far, which are a prefix of the views of the
finished game; ``final`` is set on the last view only once the record has a result (a game
that ends without a further play, by a forfeit, changes its last view: a live feed sends it again,
and the page's ``viewer.append`` replaces a step it already holds).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from referee.cli.render import describe_table, record_failures
from referee.match.outcome import ranks_by_side, seat_ranks
from referee.names import clean_name
from referee.rules import (
    CODE,
    RANK,
    SPADE,
    SUIT,
    DecksExhaustedError,
    GameState,
    IllegalMoveError,
    InvalidRecordError,
    Move,
    MoveKind,
    RuleOptions,
    RulesError,
    explain_illegal,
    legal_moves,
    new_game,
    next_deal_if_over,
    parse_deck,
    parse_move,
    play,
)

from ..rating.reasons import reason_words

ENGINE_FORMAT = "royal-casino-record"
SUIT_SYMBOLS = "♣♦♥♠"  # by suit index: C D H S
RANK_WORDS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")


def card_words(card: int) -> str:
    """A card as people read it: ``10♦``."""
    return RANK_WORDS[RANK[card] - 1] + SUIT_SYMBOLS[SUIT[card]]


def _codes(cards: Sequence[int]) -> list[str]:
    return [CODE[c] for c in cards]


def _words(cards: Sequence[int]) -> str:
    return " ".join(card_words(c) for c in cards)


def move_words(move: Move, who: str, state: GameState) -> str:
    """A play in words, e.g. ``P0 greedy captures 5♠ 8♣ and build b1 with K♠`` (``state``: before it)."""
    played = card_words(move.card)
    loose = _words(move.loose)
    if move.kind == MoveKind.TRAIL:
        return f"{who} trails {played}"
    if move.kind == MoveKind.CAPTURE:
        taken = [f"build b{b} ({_build_value(state, b)})" for b in move.builds] + ([loose] if loose else [])
        return f"{who} captures {' and '.join(taken)} with {played}"
    if move.kind == MoveKind.BUILD:
        return f"{who} builds {move.value} with {played} on {loose}"
    target = f"build b{move.builds[0]}"
    also = f" and {loose}" if loose else ""
    if move.kind == MoveKind.ADD:
        return f"{who} adds {played}{also} to {target} ({move.value})"
    return f"{who} raises {target} from {_build_value(state, move.builds[0])} to {move.value} with {played}{also}"


def _build_value(state: GameState, build_id: int) -> int | str:
    return next((b.value for b in state.builds if b.id == build_id), "?")


def seat_names(record: dict[str, Any]) -> list[str]:
    """The names a referee record gives its seats (cleaned: a record is not trusted), by seat."""
    seats = record.get("seats") if isinstance(record, dict) else None
    if not isinstance(seats, list) or not all(isinstance(s, dict) for s in seats):
        return []
    try:
        ordered = sorted(seats, key=lambda s: int(s.get("seat", 0)))
    except (TypeError, ValueError):
        return []
    return [clean_name(str(s.get("name", ""))) for s in ordered]


def _who(seat: int, names: Sequence[str]) -> str:
    name = names[seat] if seat < len(names) else ""
    return f"P{seat} {name}" if name else f"P{seat}"


def _table(state: GameState) -> dict[str, Any]:
    return {"loose": _codes(state.loose),
            "builds": [{"id": f"b{b.id}", "value": b.value, "owner": b.owner,
                        "kind": "multiple" if b.multiple else "single", "cards": _codes(b.cards)}
                       for b in state.builds]}


def _piles(state: GameState) -> list[dict[str, Any]]:
    teams = state.options.teams
    return [{"side": side, "seats": [side, side + 2] if teams else [side], "count": len(pile),
             "spades": sum(1 for c in pile if SUIT[c] == SPADE), "sweeps": state.sweeps[side], "cards": _codes(pile)}
            for side, pile in enumerate(state.piles)]


def _position(state: GameState, sheets: list[dict[str, Any]]) -> dict[str, Any]:
    """What a view shows of one position (every hand: the referee sees them all)."""
    return {"deal": state.deal + 1, "round": state.round, "dealer": state.dealer,
            "to_move": None if state.result is not None else state.to_move,
            "stock": len(state.stock), "table": _table(state), "table_text": describe_table(state),
            "hands": [_codes(h) for h in state.hands], "piles": _piles(state),
            "scores": list(state.scores), "sheets": list(sheets)}


def _start(engine: dict[str, Any]) -> tuple[GameState, list[dict[str, Any]]]:
    """The game's first deal, from the record's decks (a seeded record's later decks checked)."""
    options = RuleOptions.from_dict(engine["options"])
    deals = engine["deals"]
    if not isinstance(deals, list) or not deals:
        raise InvalidRecordError("malformed record: no deals")
    decks = [parse_deck(d["deck"]) for d in deals]
    seed = engine.get("seed")
    explicit = engine.get("explicit_decks", len(decks))
    state = new_game(options, seed=seed, decks=decks if seed is None else decks[:explicit])
    for k in range(explicit, len(decks)):  # the seed's later decks: the record's must be the same
        if state.decks.deck(k) != decks[k]:
            raise InvalidRecordError(f"deal {k + 1}: the deck is not the one seed {seed} deals")
    return state, deals


def _final(wrapper: dict[str, Any] | None, engine: dict[str, Any], state: GameState, names: Sequence[str],
           failures: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The game's result (scores by side, ranks and winner, forfeits, why it ended in words:
    arena/rating/reasons.py), or None while it runs."""
    options = state.options
    forfeits = [dict(f, who=_who(f["seat"], names)) for f in failures if f["forfeit"]]
    stored = (wrapper or {}).get("result")
    if isinstance(stored, dict) and stored.get("reason"):
        try:
            scores = [int(v) for v in stored.get("scores", [])]
            ranks = [int(v) for v in stored.get("ranks", [])]
            winner = int(stored.get("winnerSide", -1))
            deals = int(stored.get("deals", 0))
        except (TypeError, ValueError):
            raise InvalidRecordError("malformed record: its result is not numbers") from None
        termination = str(stored.get("termination", "")).removeprefix("TERMINATION_").lower()
        reason = str(stored["reason"])
        words = reason_words(stored, [_who(s, names) for s in range(options.players)], engine)
    elif state.result is not None:
        scores, deals, reason = list(state.result.scores), state.result.deals, state.result.reason.value
        winner = -1 if state.result.winner is None else state.result.winner
        ranks = seat_ranks(options, ranks_by_side(scores, state.result.winner))
        termination = "normal"
        words = reason_words({"reason": reason, "deals": deals}, (), engine)
    else:
        return None
    sides = [[s, s + 2] if options.teams else [s] for s in range(options.sides)]
    winner_text = "draw" if winner < 0 else " + ".join(_who(s, names) for s in sides[winner]) + " wins"
    return {"termination": termination, "reason": reason, "scores": scores, "ranks": ranks,
            "winner_side": None if winner < 0 else winner, "deals": deals, "forfeits": forfeits,
            "reason_words": words,
            "text": f"{winner_text}: {words} after {deals} deal(s) ("
                    + ", ".join(f"{'+'.join(f'P{s}' for s in seats)} {v}" for seats, v in zip(sides, scores)) + ")"}


def replay_views(record: dict[str, Any], names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One JSON-able view per step of the game in ``record`` (the referee's record, or the
    engine's alone), replayed through the engine; ``names`` by seat (default: the record's own).
    Raises InvalidRecordError naming the first play or deal the engine disagrees with."""
    wrapper = record if isinstance(record, dict) and "engine" in record else None
    engine = wrapper["engine"] if wrapper is not None else record
    if not isinstance(engine, dict) or engine.get("format") != ENGINE_FORMAT:
        raise InvalidRecordError(f"not a {ENGINE_FORMAT} record")
    names = list(names) if names is not None else seat_names(record)
    try:
        return _views(engine, wrapper, names)
    except (KeyError, TypeError, IndexError, AttributeError) as exc:
        raise InvalidRecordError(f"malformed record: {type(exc).__name__}: {exc}") from None
    except RulesError as exc:
        if isinstance(exc, InvalidRecordError):
            raise
        raise InvalidRecordError(f"bad record: {exc}") from None


def _views(engine: dict[str, Any], wrapper: dict[str, Any] | None, names: list[str]) -> list[dict[str, Any]]:
    state, deals = _start(engine)
    failures = record_failures(wrapper)
    substituted = {(f["deal"], f["play"]): f for f in failures if not f["forfeit"]}
    forced = (wrapper or {}).get("forced", [])  # indices over the game of the referee's own plays
    if not isinstance(forced, list) or not all(type(i) is int for i in forced):
        raise InvalidRecordError("malformed record: forced must be a list of play indices")
    forced_set = set(forced)
    # the bots' own words on their plays (protocol 1.2), as much of them as the reader may see
    reports = {r["play"]: r for r in (wrapper or {}).get("bot_reports", []) if isinstance(r, dict)
               and isinstance(r.get("play"), int)}
    sheets: list[dict[str, Any]] = []
    views = [{"step": 0, "play": None, "deal_end": None, **_position(state, sheets)}]
    number = 0
    for k, deal in enumerate(deals):
        moves = deal["moves"]
        if moves and state.deal != k:
            raise InvalidRecordError(f"deal {k + 1}: the game is in deal {state.deal + 1} here")
        for i, text in enumerate(moves):
            if state.deal != k or state.result is not None:
                raise InvalidRecordError(f"deal {k + 1}, play {i + 1}: the deal is already over")
            try:
                move = parse_move(text)
                if move not in legal_moves(state):
                    raise IllegalMoveError(str(move), explain_illegal(state, move))
            except RulesError as exc:
                raise InvalidRecordError(f"deal {k + 1}, play {i + 1} ({text!r}): {exc}") from None
            is_forced = number in forced_set  # number is the index of this play, before counting it
            if is_forced and len(legal_moves(state)) != 1:
                raise InvalidRecordError(f"deal {k + 1}, play {i + 1} is marked forced, but its mover had "
                                         f"{len(legal_moves(state))} legal moves")
            number += 1
            seat = state.to_move
            after = play(state, move)
            entry: dict[str, Any] = {"number": number, "deal": k + 1, "in_deal": i + 1, "seat": seat,
                                     "move": str(move), "card": CODE[move.card], "kind": move.kind.name.lower(),
                                     "words": move_words(move, _who(seat, names), state),
                                     "sweep": after.sweeps != state.sweeps, "random": None, "forced": is_forced}
            if (f := substituted.get((k, i + 1))) is not None:
                entry["random"] = {"kind": f["kind"], "reason": f["reason"]}
            if (said := reports.get(number - 1)) is not None:
                entry["report"] = {key: str(said[key]) for key in ("note", "error") if key in said}
            deal_end = None
            if after.deal_over:
                sheet = after.sheets[-1].to_dict()
                stored = deal.get("sheet")
                if stored is not None and stored != sheet:
                    raise InvalidRecordError(f"deal {k + 1}: the score sheet does not match the replay")
                sheets.append({"deal": k + 1, "points": [side["points"] for side in sheet["sides"]],
                               "scores_after": sheet["scores_after"]})
                deal_end = {"deal": k + 1, "sheet": sheet, **_residue(state, move, after)}
                try:
                    after = next_deal_if_over(after)
                except DecksExhaustedError:
                    pass  # a partial record of explicit decks ends here: show the settled deal
            state = after
            views.append({"step": number, "play": entry, "deal_end": deal_end, **_position(state, sheets)})
    if state.result is not None and (stored_result := engine.get("result")) is not None \
            and stored_result != state.result.to_dict():
        raise InvalidRecordError(f"the result does not match the replay: replay gives {state.result.to_dict()}")
    views[-1]["final"] = _final(wrapper, engine, state, names, failures)
    for view in views[:-1]:
        view["final"] = None
    return views


def _residue(before: GameState, move: Move, settled: GameState) -> dict[str, Any]:
    """The cards left on the table at a deal's end and the seat whose side took them (rule 12)."""
    held = {c for pile in before.piles for c in pile}
    taken = set()
    if move.kind == MoveKind.CAPTURE:
        taken = {move.card, *move.loose, *(c for b in before.builds if b.id in move.builds for c in b.cards)}
    residue = sorted(c for pile in settled.piles for c in pile if c not in held and c not in taken)
    return {"residue": _codes(residue), "residue_to": settled.last_capturer if residue else None}
