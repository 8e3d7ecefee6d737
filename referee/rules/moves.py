"""Plays and their canonical one-line notation.

A :class:`Move` describes a play by its effect (rules file, rule 5-8), so two plays with the same
effect are the same ``Move``:

======================================  =============================================================
notation                                meaning
======================================  =============================================================
``9C trail``                            9C goes to the table as a loose card
``KS capture 5S 8C KH``                 KS takes the loose cards 5S, 8C, KH
``QS capture b1 QH``                    QS takes build b1 and the loose QH
``4H build 13 AH 8C``                   4H and loose AH, 8C form a new build of 13 (single)
``4H build 13 AH 8C KH``                the same plus KH: a multiple build of 13
``3C add b1 9 6D``                      3C+6D joins build b1 (value 9) as a new group
``2S raise b1 9 9H``                    2S raises single build b1 to 9 and absorbs the loose 9H
======================================  =============================================================

Canonical form: lower-case verb; captured builds as ``b<id>`` in increasing id before loose cards;
cards in canonical card order (rank, then suit C D H S); single spaces. ``parse_move`` also accepts
any case, ``T`` for 10, extra spaces, and cards and captured builds in any order, and returns
the canonical ``Move``.
"""

from __future__ import annotations

import enum
from functools import lru_cache
from typing import NamedTuple

from .cards import CODE, Card, parse_card
from .errors import InvalidCardError, InvalidMoveError


class MoveKind(enum.IntEnum):
    """The five kinds of play, in the order legal moves are listed."""

    TRAIL = 0
    CAPTURE = 1
    BUILD = 2
    ADD = 3
    RAISE = 4


VERBS = {kind: kind.name.lower() for kind in MoveKind}
_KIND_BY_VERB = {verb: kind for kind, verb in VERBS.items()}


class Move(NamedTuple):
    """One play, identified by its effect. Tuple order is the documented legal-move order.

    ``value``: the resulting build value for build/add/raise, 0 for trail and capture.
    ``builds``: build ids captured (capture) or the one build added to / raised (add, raise).
    ``loose``: loose cards taken from the table, sorted.
    """

    card: Card
    kind: MoveKind
    value: int = 0
    builds: tuple[int, ...] = ()
    loose: tuple[Card, ...] = ()

    def __str__(self) -> str:
        return format_move(self)


@lru_cache(maxsize=1 << 16)
def format_move(move: Move) -> str:
    """The canonical notation of a move (memoised: records and observations repeat moves)."""
    parts = [CODE[move.card], VERBS[move.kind]]
    kind = move.kind
    if kind == MoveKind.CAPTURE:
        parts.extend(f"b{b}" for b in move.builds)
    elif kind == MoveKind.BUILD:
        parts.append(str(move.value))
    elif kind != MoveKind.TRAIL:
        parts.append(f"b{move.builds[0]}")
        parts.append(str(move.value))
    parts.extend(CODE[c] for c in move.loose)
    return " ".join(parts)


def parse_move(text: str) -> Move:
    """Parse notation into a canonical Move; bad syntax raises InvalidMoveError.

    This checks form only (known verb, card codes, values 2..14, no repeats); whether the play is
    legal in a position is the engine's question (``apply`` / ``legal_moves``).
    """
    if not isinstance(text, str):
        raise InvalidMoveError(f"a move must be a string, not {type(text).__name__}")
    tokens = text.split()
    if len(tokens) < 2:
        raise InvalidMoveError(f"bad move {text!r}: expected '<card> <verb> ...'")
    try:
        played = parse_card(tokens[0])
    except InvalidCardError as exc:
        raise InvalidMoveError(f"bad move {text!r}: {exc}") from None
    kind = _KIND_BY_VERB.get(tokens[1].lower())
    if kind is None:
        raise InvalidMoveError(
            f"bad move {text!r}: unknown verb {tokens[1]!r}; expected one of {', '.join(VERBS.values())}"
        )
    rest = tokens[2:]
    builds: list[int] = []
    value = 0
    if kind == MoveKind.TRAIL:
        if rest:
            raise InvalidMoveError(f"bad move {text!r}: a trail takes nothing after 'trail'")
        return Move(played, kind)
    if kind == MoveKind.CAPTURE:
        builds = [_build_id(tok, text) for tok in rest if _is_build_ref(tok)]
        rest = [tok for tok in rest if not _is_build_ref(tok)]
    elif kind in (MoveKind.ADD, MoveKind.RAISE):
        if not rest or not _is_build_ref(rest[0]):
            raise InvalidMoveError(f"bad move {text!r}: {VERBS[kind]} needs a build such as 'b1'")
        builds.append(_build_id(rest.pop(0), text))
    if kind != MoveKind.CAPTURE:
        if not rest:
            raise InvalidMoveError(f"bad move {text!r}: {VERBS[kind]} needs the build value (2..14)")
        value = _build_value(rest.pop(0), text)
    try:
        loose = [parse_card(tok) for tok in rest]
    except InvalidCardError as exc:
        raise InvalidMoveError(f"bad move {text!r}: {exc}") from None
    if played in loose:
        raise InvalidMoveError(f"bad move {text!r}: the played card cannot also be a table card")
    if len(set(loose)) != len(loose):
        raise InvalidMoveError(f"bad move {text!r}: a card is named twice")
    if len(set(builds)) != len(builds):
        raise InvalidMoveError(f"bad move {text!r}: a build is named twice")
    if kind == MoveKind.CAPTURE and not builds and not loose:
        raise InvalidMoveError(f"bad move {text!r}: a capture must take at least one card or build")
    if kind == MoveKind.BUILD and not loose:
        raise InvalidMoveError(f"bad move {text!r}: a new build needs at least one table card")
    return Move(played, kind, value, tuple(sorted(builds)), tuple(sorted(loose)))


def _is_build_ref(token: str) -> bool:
    return token[:1] in ("b", "B") and token[1:].isdigit()


def _build_id(token: str, text: str) -> int:
    number = int(token[1:])
    if number < 1:
        raise InvalidMoveError(f"bad move {text!r}: build ids start at b1")
    return number


def _build_value(token: str, text: str) -> int:
    if not token.isdigit() or not 2 <= int(token) <= 14:
        raise InvalidMoveError(f"bad move {text!r}: build value must be a number 2..14, not {token!r}")
    return int(token)
