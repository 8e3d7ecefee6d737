"""Game records: a JSON-serialisable account of a game that replays to the identical result.

Format (version 1)::

    {"format": "royal-casino-record", "version": 1,
     "options": {"players": 2, "partnerships": true, "on_twenty": "little_casino", "max_deals": 30},
     "seed": 7,                      # or null when every deck was explicit
     "explicit_decks": 0,            # how many leading decks were given by the caller
     "deals": [{"deck": "7H 2C ...", # 52 codes in dealing order
                "dealer": 1,
                "moves": ["KS capture KH", "9C trail", ...],
                "sheet": {...}}],    # null for an unfinished deal
     "result": {"winner": 0, "scores": [23, 12], "reason": "target_reached", "deals": 4}}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .cards import cards_code, parse_deck
from .errors import InvalidRecordError, RulesError
from .moves import parse_move
from .options import RuleOptions
from .play import apply
from .state import DeckSource, GameState, new_game

RECORD_FORMAT = "royal-casino-record"
RECORD_VERSION = 1


def game_record(state: GameState) -> dict[str, Any]:
    """The record of the game that led to ``state`` (finished or not)."""
    history = state.history()
    deals = []
    for d in range(state.deal + 1):
        sheet = state.sheets[d].to_dict() if d < len(state.sheets) else None
        deals.append(
            {
                "deck": cards_code(state.decks.deck(d)),
                "dealer": (state.options.players - 1 + d) % state.options.players,
                "moves": [str(e.move) for e in history if e.deal == d],
                "sheet": sheet,
            }
        )
    return {
        "format": RECORD_FORMAT,
        "version": RECORD_VERSION,
        "options": state.options.to_dict(),
        "seed": state.decks.seed,
        "explicit_decks": len(state.decks.explicit),
        "deals": deals,
        "result": state.result.to_dict() if state.result else None,
    }


def replay_record(record: dict[str, Any], on_play: Callable[[GameState, str], None] | None = None) -> GameState:
    """Replay a record move by move and check every deck, sheet and the result against it.

    ``on_play(state, move_text)``, when given, sees the state before each play (a viewer uses it
    to show who played and what they held). Returns the final state; raises InvalidRecordError
    naming the first disagreement.
    """
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        raise InvalidRecordError(f"not a {RECORD_FORMAT} record")
    if record.get("version") != RECORD_VERSION:
        raise InvalidRecordError(f"unsupported record version {record.get('version')!r}; this engine reads {RECORD_VERSION}")
    try:
        options = RuleOptions.from_dict(record["options"])
        deals = record["deals"]
        decks = [parse_deck(d["deck"]) for d in deals]
        seed = record.get("seed")
        explicit = record.get("explicit_decks", len(decks))
        if seed is not None:
            source = DeckSource(seed, decks[:explicit])
            for k in range(explicit, len(decks)):
                if source.deck(k) != decks[k]:
                    raise InvalidRecordError(f"deal {k + 1}: the deck is not the one seed {seed} deals")
        state = new_game(options, seed=seed, decks=decks if seed is None else decks[:explicit])
        for k, deal in enumerate(deals):
            if state.deal != k:
                raise InvalidRecordError(f"deal {k + 1}: the game is in deal {state.deal + 1} here")
            for i, text in enumerate(deal["moves"]):
                if state.deal != k or state.result is not None:
                    raise InvalidRecordError(f"deal {k + 1}, play {i + 1}: the deal is already over")
                if on_play is not None:
                    on_play(state, text)
                try:
                    state = apply(state, parse_move(text))
                except RulesError as exc:
                    raise InvalidRecordError(f"deal {k + 1}, play {i + 1} ({text!r}): {exc}") from None
            if deal.get("sheet") is not None:
                if len(state.sheets) <= k or state.sheets[k].to_dict() != deal["sheet"]:
                    raise InvalidRecordError(f"deal {k + 1}: the score sheet does not match the replay")
        result = state.result.to_dict() if state.result else None
        if result != record.get("result"):
            raise InvalidRecordError(f"the result does not match the replay: replay gives {result}")
        return state
    except (KeyError, TypeError, IndexError) as exc:
        raise InvalidRecordError(f"malformed record: {type(exc).__name__}: {exc}") from None
    except RulesError as exc:
        if isinstance(exc, InvalidRecordError):
            raise
        raise InvalidRecordError(f"bad record: {exc}") from None
