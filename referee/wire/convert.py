"""Conversions between the rules engine's values and the casino.v1 protocol messages."""

from __future__ import annotations

from collections.abc import Iterable
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
from ..rules.errors import InvalidCardError, InvalidMoveError, InvalidOptionError

PROTOCOL_VERSION = "1.1"  # what the referee says it speaks (1.1: forced plays, Handshake.auto_forced)
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
# A Turn carries the deal's plays and every legal move; building them as Python protobuf objects
# for every turn cost the referee about 40 us per play, most of it copying messages it already
# had. Protobuf's wire format is a concatenation of fields (repeated fields may be split and
# fields may come in any order), so the referee keeps each play and each legal move as encoded
# bytes and joins them: the bytes parse to exactly the message `turn_to_pb` builds.


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


def _field_key(message: type, name: str) -> bytes:
    """The key of a length-delimited field (wire type 2), looked up from the descriptor."""
    return _varint(message.DESCRIPTOR.fields_by_name[name].number << 3 | 2)  # type: ignore[attr-defined]


def _length_delimited(key: bytes, payload: bytes) -> bytes:
    return key + _varint(len(payload)) + payload


_REQUEST_TURN = _field_key(bot_pb2.PlayRequest, "turn")
_TURN_OBSERVATION = _field_key(bot_pb2.Turn, "observation")
_TURN_LEGAL_MOVES = _field_key(bot_pb2.Turn, "legal_moves")
_OBSERVATION_PLAYS = _field_key(game_pb2.Observation, "plays")


@lru_cache(maxsize=1 << 16)  # about 14 MiB when full; 88% of lookups hit in long runs
def _legal_move_field(move: Move) -> bytes:
    return _length_delimited(_TURN_LEGAL_MOVES, move_to_pb(move).SerializeToString())


def public_play_field(seat: int, notation: str, forced: bool = False) -> bytes:
    """One entry of ``Observation.plays``, encoded, for `turn_request_bytes`; ``forced``: the
    referee played it, the seat's only legal move."""
    return _length_delimited(_OBSERVATION_PLAYS, game_pb2.PublicPlay(seat=seat, move=notation,
                                                                     forced=forced).SerializeToString())


def turn_request_bytes(
    game_id: str, turn_id: int, obs: Observation, moves: Iterable[Move], move_time_ms: int, bank_ms: int,
    plays: bytes,
) -> bytes:
    """A serialized ``PlayRequest(turn=...)``, equal once parsed to one built with `turn_to_pb`
    whose observation has ``plays`` (the concatenated `public_play_field` entries of the deal)."""
    observation = observation_to_pb(obs, ()).SerializeToString() + plays
    turn = (
        bot_pb2.Turn(game_id=game_id, turn_id=turn_id, move_time_ms=move_time_ms, bank_ms=bank_ms).SerializeToString()
        + _length_delimited(_TURN_OBSERVATION, observation)
        + b"".join([_legal_move_field(m) for m in moves])
    )
    return _length_delimited(_REQUEST_TURN, turn)


def serialize_request(request: bot_pb2.PlayRequest | bytes) -> bytes:
    """The Play stream's request serializer: messages are serialized, ready bytes pass through."""
    return request if type(request) is bytes else request.SerializeToString()  # type: ignore[union-attr]
