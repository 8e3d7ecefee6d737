"""The action encoding shared by the research environments: a move spelled as a few tokens.

A flat enumeration of every play (card x kind x value x builds x any subset of the loose cards) has
more than 2**52 entries, so no fixed list of whole moves fits a network's output layer. Instead
each of the 170 actions is a *token* with one meaning in every state, and a play is the sequence
``spell(move)``:

========  ==============  ==================================================================
actions   token           meaning
========  ==============  ==================================================================
0-51      ``PLAY + c``    play card ``c`` (engine card number: (rank - 1) * 4 + suit, C D H S)
52        ``TRAIL``       ... as a trail
53        ``CAPTURE``     ... as a capture
54-66     ``BUILD + v``   ... as a new build of value ``v`` (2..14), token ``52 + v``
67        ``ADD``         ... added to a build (the build's value)
68        ``RAISE``       ... raising a single build
69-116    ``BUILD_REF+b`` build ``b<b>`` (ids 1..48: a deal has 48 plays, so at most 48 builds):
                          captured, or added to / raised (in increasing id)
117-168   ``TAKE + c``    the loose card ``c`` (in increasing card order)
169       ``END``         the move is complete
========  ==============  ==================================================================

``spell(Move(KS, CAPTURE, 0, (2,), (5S, 8C)))`` is ``[PLAY+KS, CAPTURE, BUILD_REF+2, TAKE+5S,
TAKE+8C, END]``: the canonical notation ``KS capture b2 5S 8C``, token by token. In a state the
legal tokens are the next tokens of the legal moves' spellings that match what was chosen so far
(``TurnBuilder``), and the play is made as soon as exactly one legal move fits, so most plays take
two or three tokens and ``END`` is only offered where a move is a prefix of another.
"""

from __future__ import annotations

from collections.abc import Sequence

from referee.rules import CODE, GameState, Move, MoveKind, legal_moves

PLAY = 0
TRAIL = 52
CAPTURE = 53
BUILD = 52  # BUILD + v for v = 2..14: 54..66
ADD = 67
RAISE = 68
BUILD_REF = 68  # BUILD_REF + id for id = 1..48: 69..116
MAX_BUILD_ID = 48
TAKE = 117  # TAKE + card: 117..168
END = 169
NUM_ACTIONS = 170


def spell(move: Move) -> tuple[int, ...]:
    """The tokens of ``move``, ``END`` last: the same tokens for the same play in every state."""
    kind = move.kind
    if kind == MoveKind.TRAIL:
        head = TRAIL
    elif kind == MoveKind.CAPTURE:
        head = CAPTURE
    elif kind == MoveKind.BUILD:
        head = BUILD + move.value
    elif kind == MoveKind.ADD:
        head = ADD
    else:
        head = RAISE
    return (PLAY + move.card, head, *(BUILD_REF + b for b in move.builds), *(TAKE + c for c in move.loose), END)


def token_name(token: int) -> str:
    """A token in words, e.g. ``play KS``, ``capture``, ``build 9``, ``b2``, ``take 5S``, ``end``."""
    if not 0 <= token < NUM_ACTIONS:
        raise ValueError(f"action {token} is outside 0..{NUM_ACTIONS - 1}")
    if token < TRAIL:
        return f"play {CODE[token - PLAY]}"
    if token == TRAIL:
        return "trail"
    if token == CAPTURE:
        return "capture"
    if token < ADD:
        return f"build {token - BUILD}"
    if token == ADD:
        return "add"
    if token == RAISE:
        return "raise"
    if token < TAKE:
        return f"b{token - BUILD_REF}"
    if token < END:
        return f"take {CODE[token - TAKE]}"
    return "end"


class TurnBuilder:
    """The tokens chosen so far in one turn and the legal moves they still fit.

    Immutable: ``choose`` returns a new builder, or the finished ``Move`` once one move fits.
    """

    __slots__ = ("prefix", "candidates")

    def __init__(self, moves: Sequence[Move], prefix: tuple[int, ...] = (),
                 candidates: tuple[tuple[Move, tuple[int, ...]], ...] | None = None) -> None:
        self.prefix = prefix
        self.candidates = candidates if candidates is not None else tuple((m, spell(m)) for m in moves)

    @classmethod
    def for_state(cls, state: GameState) -> TurnBuilder:
        """A fresh turn for the player to move in ``state`` (its legal moves, nothing chosen)."""
        return cls(legal_moves(state))

    def legal_actions(self) -> list[int]:
        """The tokens that continue at least one legal move, ascending."""
        n = len(self.prefix)
        return sorted({tokens[n] for _, tokens in self.candidates})

    def choose(self, token: int) -> TurnBuilder | Move:
        """Add ``token``; the finished move when exactly one legal move fits, else the new builder.
        A token that continues no legal move raises ValueError."""
        n = len(self.prefix)
        fit = tuple((m, tokens) for m, tokens in self.candidates if tokens[n] == token)
        if not fit:
            raise ValueError(f"action {token} ({token_name(int(token))}) continues no legal move here")
        if len(fit) == 1:
            return fit[0][0]
        return TurnBuilder((), self.prefix + (int(token),), fit)


def tokens_in_state(state: GameState, move: Move) -> list[int]:
    """The tokens that play ``move`` in ``state`` (its spelling, cut where only it fits)."""
    builder: TurnBuilder | Move = TurnBuilder.for_state(state)
    out: list[int] = []
    for token in spell(move):
        assert isinstance(builder, TurnBuilder)
        out.append(token)
        builder = builder.choose(token)
        if isinstance(builder, Move):
            return out
    raise ValueError(f"{move} is not legal here")
