"""Conversions between the rules engine's values and the casino.v1 protocol messages."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

from casino.v1 import bot_pb2, game_pb2

from ..rules import (
    Build,
    Condition,
    InvalidObservationError,
    Move,
    MoveKind,
    Observation,
    RuleOptions,
    parse_card,
    parse_move,
)
from ..rules.cards import CODE
from ..rules.state import GameState
from ..rules.errors import InvalidCardError, InvalidMoveError, InvalidOptionError

PROTOCOL_VERSION = "1.2"  # what the referee says it speaks (1.1: forced plays; 1.2: MoveChoice.error and note)
PROTOCOL_MAJOR = PROTOCOL_VERSION.split(".")[0]  # what a bot's Hello must match (docs/protocol.md, "Versioning")

_KIND_TO_PB = {
    MoveKind.TRAIL: game_pb2.MOVE_KIND_TRAIL,
    MoveKind.CAPTURE: game_pb2.MOVE_KIND_CAPTURE,
    MoveKind.BUILD: game_pb2.MOVE_KIND_BUILD,
    MoveKind.ADD: game_pb2.MOVE_KIND_ADD,
    MoveKind.RAISE: game_pb2.MOVE_KIND_RAISE,
}
_PB_TO_KIND = {v: k for k, v in _KIND_TO_PB.items()}


def options_to_pb(options: RuleOptions) -> game_pb2.RuleOptions:
    return game_pb2.RuleOptions(
        players=options.players,
        individuals=not options.partnerships,
        on_twenty=options.on_twenty.value,
        max_deals=options.max_deals,
    )


def options_from_pb(pb: game_pb2.RuleOptions) -> RuleOptions:
    """Unset fields take the rules' defaults; bad values raise InvalidOptionError."""
    default = RuleOptions()
    try:
        on_twenty = Condition(pb.on_twenty) if pb.on_twenty else default.on_twenty
    except ValueError:
        raise InvalidOptionError(f"on_twenty must be 'little_casino' or 'most_spades', not {pb.on_twenty!r}") from None
    return RuleOptions(
        players=pb.players or default.players,
        partnerships=not pb.individuals,
        on_twenty=on_twenty,
        max_deals=pb.max_deals or default.max_deals,
    )


def move_to_pb(move: Move) -> game_pb2.Move:
    """The protocol form of a move. Not memoised: the referee's hot path keeps the encoded bytes
    instead (``_legal_move_field``), and a cached message costs about 1 KiB of memory."""
    return game_pb2.Move(
        card=CODE[move.card],
        kind=_KIND_TO_PB[move.kind],
        value=move.value,
        builds=move.builds,
        loose=[CODE[c] for c in move.loose],
        notation=str(move),
    )


def moves_to_pb(moves: Iterable[Move]) -> list[game_pb2.Move]:
    return [move_to_pb(m) for m in moves]


def move_from_pb(pb: game_pb2.Move) -> Move:
    """The engine Move a structured answer names; InvalidMoveError when it is not well formed."""
    kind = _PB_TO_KIND.get(pb.kind)
    if kind is None:
        raise InvalidMoveError(f"unknown move kind {pb.kind}")
    try:
        card = parse_card(pb.card)
        loose = tuple(sorted(parse_card(c) for c in pb.loose))
    except InvalidCardError as exc:
        raise InvalidMoveError(str(exc)) from None
    builds = tuple(sorted(pb.builds))
    if len(set(loose)) != len(loose) or len(set(builds)) != len(builds) or card in loose:
        raise InvalidMoveError("a card or build is named twice")
    value = pb.value if kind in (MoveKind.BUILD, MoveKind.ADD, MoveKind.RAISE) else 0
    return Move(card, kind, value, builds, loose)


def observation_to_pb(obs: Observation, plays: Iterable[game_pb2.PublicPlay] | None = None) -> game_pb2.Observation:
    """The protocol form of an observation; ``plays``, when given, replaces ``obs.plays``
    (already converted, so a caller that keeps them need not convert the deal's plays again)."""
    return game_pb2.Observation(
        seat=obs.seat,
        side=obs.side,
        deal=obs.deal,
        round=obs.round,
        dealer=obs.dealer,
        to_move=obs.to_move,
        hand=[CODE[c] for c in obs.hand],
        hand_sizes=obs.hand_sizes,
        loose=[CODE[c] for c in obs.loose],
        builds=[
            game_pb2.Build(id=b.id, value=b.value, cards=[CODE[c] for c in b.cards], owner=b.owner, multiple=b.multiple)
            for b in obs.builds
        ],
        pile_sizes=obs.pile_sizes,
        sweeps=obs.sweeps,
        last_capturer=-1 if obs.last_capturer is None else obs.last_capturer,
        stock_size=obs.stock_size,
        table_dealt=[CODE[c] for c in obs.table_dealt],
        plays=plays if plays is not None else [game_pb2.PublicPlay(seat=s, move=str(m)) for s, m in obs.plays],
        scores=obs.scores,
        restricted=[c.value if c else "" for c in obs.restricted],
        continuation=obs.continuation,
    )


def observation_from_pb(pb: game_pb2.Observation, options: RuleOptions) -> Observation:
    """The engine form of a protocol observation, under ``options`` (the handshake's: a Turn does not
    carry them); bad cards, plays or conditions raise InvalidCardError, InvalidMoveError or InvalidObservationError."""
    try:
        restricted = tuple(Condition(c) if c else None for c in pb.restricted)
    except ValueError:
        raise InvalidObservationError(f"unknown restricted condition in {list(pb.restricted)}") from None
    return Observation(
        seat=pb.seat,
        side=pb.side,
        options=options,
        deal=pb.deal,
        round=pb.round,
        dealer=pb.dealer,
        to_move=pb.to_move,
        hand=tuple(parse_card(c) for c in pb.hand),
        hand_sizes=tuple(pb.hand_sizes),
        loose=tuple(parse_card(c) for c in pb.loose),
        builds=tuple(
            Build(b.id, b.value, tuple(parse_card(c) for c in b.cards), b.owner, b.multiple) for b in pb.builds
        ),
        pile_sizes=tuple(pb.pile_sizes),
        sweeps=tuple(pb.sweeps),
        last_capturer=None if pb.last_capturer < 0 else pb.last_capturer,
        stock_size=pb.stock_size,
        table_dealt=tuple(parse_card(c) for c in pb.table_dealt),
        plays=tuple((p.seat, parse_move(p.move)) for p in pb.plays),
        scores=tuple(pb.scores),
        restricted=restricted,
        continuation=pb.continuation,
    )


def turn_to_pb(
    game_id: str, turn_id: int, obs: Observation, moves: Iterable[Move], move_time_ms: int, bank_ms: int,
    plays: Iterable[game_pb2.PublicPlay] | None = None,
) -> bot_pb2.Turn:
    return bot_pb2.Turn(
        game_id=game_id,
        turn_id=turn_id,
        observation=observation_to_pb(obs, plays),
        legal_moves=moves_to_pb(moves),
        move_time_ms=move_time_ms,
        bank_ms=bank_ms,
    )


# --- Turn requests as wire bytes -------------------------------------------------------------
# A Turn carries the seat's view, the deal's plays and every legal move; building them as Python
# protobuf objects (an Observation from the state, then its message) for every turn cost the
# referee more than the rest of its work per play. Protobuf's wire format is a concatenation of
# fields (repeated fields may be split and fields may come in any order), so the referee writes
# the Turn's bytes straight from the game state: each card's field is encoded once, each play of
# the deal and each legal move is kept encoded, and the Turn is their concatenation. The bytes
# parse to exactly the message `turn_to_pb` builds from `observation(state, seat)` (a test
# checks every turn of many games). Field numbers come from the descriptors.


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


_SMALL = tuple(_varint(i) for i in range(1 << 10))  # the varints of the numbers a Turn mostly holds


def _uvarint(value: int) -> bytes:
    return _SMALL[value] if value < 1024 else _varint(value)


def _svarint(value: int) -> bytes:
    """An int32's varint: a negative one is its 64-bit two's complement, as protobuf has it."""
    return _uvarint(value) if value >= 0 else _varint(value & 0xFFFF_FFFF_FFFF_FFFF)


def _key(message: type, name: str, wire_type: int) -> bytes:
    return _varint(message.DESCRIPTOR.fields_by_name[name].number << 3 | wire_type)  # type: ignore[attr-defined]


def _field_key(message: type, name: str) -> bytes:
    """The key of a length-delimited field (wire type 2), looked up from the descriptor."""
    return _key(message, name, 2)


def _length_delimited(key: bytes, payload: bytes) -> bytes:
    return key + _uvarint(len(payload)) + payload


def _packed(key: bytes, values: Sequence[int]) -> bytes:
    """A packed repeated uint32 or int32 field; nothing for no values (as protobuf writes it)."""
    if not values:
        return b""
    if min(values) >= 0 and max(values) < 0x80:  # one byte each (counts of cards: always)
        return key + _SMALL[len(values)] + bytes(values)
    payload = b"".join([_svarint(v) for v in values])
    return key + _uvarint(len(payload)) + payload


def _uint_fields(key: bytes) -> tuple[bytes, ...]:
    """A uint32 field with each value below 1024, by value: nothing for 0 (proto3 leaves
    defaults out)."""
    return (b"", *(key + _SMALL[v] for v in range(1, len(_SMALL))))


def _card_fields(key: bytes) -> tuple[bytes, ...]:
    """Each card's entry of a repeated string field, by card."""
    return tuple(_length_delimited(key, code.encode()) for code in CODE)


_REQUEST_TURN = _field_key(bot_pb2.PlayRequest, "turn")
_TURN_GAME_ID = _field_key(bot_pb2.Turn, "game_id")
_TURN_TURN_ID = _key(bot_pb2.Turn, "turn_id", 0)
_TURN_OBSERVATION = _field_key(bot_pb2.Turn, "observation")
_TURN_LEGAL_MOVES = _field_key(bot_pb2.Turn, "legal_moves")
_TURN_MOVE_TIME = _key(bot_pb2.Turn, "move_time_ms", 0)
_TURN_BANK = _key(bot_pb2.Turn, "bank_ms", 0)
_OBS = game_pb2.Observation
_OBSERVATION_PLAYS = _field_key(_OBS, "plays")
_OBS_DEAL, _OBS_LAST_CAPTURER = _key(_OBS, "deal", 0), _key(_OBS, "last_capturer", 0)
_OBS_SEAT, _OBS_SIDE, _OBS_ROUND, _OBS_DEALER, _OBS_TO_MOVE, _OBS_STOCK = (  # each a table by value
    _uint_fields(_key(_OBS, name, 0)) for name in ("seat", "side", "round", "dealer", "to_move", "stock_size"))
_OBS_LAST_CAPTURED_BY = (_OBS_LAST_CAPTURER + _svarint(-1), *_uint_fields(_OBS_LAST_CAPTURER)[:4])  # None, 0..3
_OBS_HAND_SIZES, _OBS_BUILDS, _OBS_PILE_SIZES, _OBS_SWEEPS, _OBS_SCORES = (
    _field_key(_OBS, name) for name in ("hand_sizes", "builds", "pile_sizes", "sweeps", "scores"))
_OBS_HAND, _OBS_LOOSE, _OBS_TABLE_DEALT = (_card_fields(_field_key(_OBS, name)) for name in ("hand", "loose", "table_dealt"))
_OBS_CONTINUATION = _key(_OBS, "continuation", 0) + _uvarint(1)
_RESTRICTED_KEY = _field_key(_OBS, "restricted")
_OBS_RESTRICTED = {c: _length_delimited(_RESTRICTED_KEY, (c.value if c else "").encode()) for c in (None, *Condition)}
_BUILD_ID, _BUILD_VALUE, _BUILD_OWNER = (_key(game_pb2.Build, name, 0) for name in ("id", "value", "owner"))
_BUILD_CARDS = _card_fields(_field_key(game_pb2.Build, "cards"))
_BUILD_MULTIPLE = _key(game_pb2.Build, "multiple", 0) + _uvarint(1)


@lru_cache(maxsize=1 << 16)  # about 14 MiB when full; 88% of lookups hit in long runs
def _legal_move_field(move: Move) -> bytes:
    return _length_delimited(_TURN_LEGAL_MOVES, move_to_pb(move).SerializeToString())


@lru_cache(maxsize=1 << 12)  # a build lasts a few plays of its deal
def _build_field(build: Build) -> bytes:
    payload = b"".join([
        _BUILD_ID + _uvarint(build.id) if build.id else b"",
        _BUILD_VALUE + _uvarint(build.value) if build.value else b"",
        *[_BUILD_CARDS[c] for c in build.cards],
        _BUILD_OWNER + _uvarint(build.owner) if build.owner else b"",
        _BUILD_MULTIPLE if build.multiple else b"",
    ])
    return _length_delimited(_OBS_BUILDS, payload)


def _uint_field(key: bytes, value: int) -> bytes:
    """A uint32 field; nothing for 0 (proto3 leaves defaults out)."""
    return key + _uvarint(value) if value else b""


def public_play_field(seat: int, notation: str, forced: bool = False) -> bytes:
    """One entry of ``Observation.plays``, encoded, for `turn_request_bytes`; ``forced``: the
    referee played it, the seat's only legal move."""
    return _length_delimited(_OBSERVATION_PLAYS, game_pb2.PublicPlay(seat=seat, move=notation,
                                                                     forced=forced).SerializeToString())


def observation_bytes(state: GameState, seat: int) -> bytes:
    """The encoded ``Observation`` of ``seat`` in ``state`` without its plays: parsed, equal to
    ``observation_to_pb(observation(state, seat, with_plays=False))``, written straight from the
    state (``seat`` must be at the table; seats, rounds and stock sizes are below 1024)."""
    last = state.last_capturer
    return b"".join([
        _OBS_SEAT[seat],
        _OBS_SIDE[state.options.side_of(seat)],
        _uint_field(_OBS_DEAL, state.deal),
        _OBS_ROUND[state.round],
        _OBS_DEALER[state.dealer],
        _OBS_TO_MOVE[state.to_move],
        *[_OBS_HAND[c] for c in state.hands[seat]],
        _packed(_OBS_HAND_SIZES, [len(h) for h in state.hands]),
        *[_OBS_LOOSE[c] for c in state.loose],
        *[_build_field(b) for b in state.builds],
        _packed(_OBS_PILE_SIZES, [len(p) for p in state.piles]),
        _packed(_OBS_SWEEPS, state.sweeps),
        _OBS_LAST_CAPTURED_BY[0 if last is None else last + 1],
        _OBS_STOCK[len(state.stock)],
        *[_OBS_TABLE_DEALT[c] for c in state.table_dealt],
        _packed(_OBS_SCORES, state.scores),
        *[_OBS_RESTRICTED[c] for c in state.restricted],
        _OBS_CONTINUATION if state.continuation else b"",
    ])


def turn_request_bytes(
    game_id: str, turn_id: int, state: GameState, seat: int, moves: Iterable[Move], move_time_ms: int, bank_ms: int,
    plays: bytes,
) -> bytes:
    """A serialized ``PlayRequest(turn=...)`` for ``seat`` in ``state``, equal once parsed to the
    one `turn_to_pb` builds from ``observation(state, seat)``, ``moves`` and the times, whose
    observation's plays are ``plays`` (the concatenated `public_play_field` entries of the deal)."""
    turn = b"".join([
        _length_delimited(_TURN_GAME_ID, game_id.encode()) if game_id else b"",
        _uint_field(_TURN_TURN_ID, turn_id),
        _length_delimited(_TURN_OBSERVATION, observation_bytes(state, seat) + plays),
        *[_legal_move_field(m) for m in moves],
        _uint_field(_TURN_MOVE_TIME, move_time_ms),
        _uint_field(_TURN_BANK, bank_ms),
    ])
    return _length_delimited(_REQUEST_TURN, turn)


def serialize_request(request: bot_pb2.PlayRequest | bytes) -> bytes:
    """The Play stream's request serializer: messages are serialized, ready bytes pass through."""
    return request if type(request) is bytes else request.SerializeToString()  # type: ignore[union-attr]
