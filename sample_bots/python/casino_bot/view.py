"""A turn as the rules engine sees it, for bots that search: engine moves, the table, the rule
options, and a full state of the deal with the hidden cards drawn at random (``referee.rules.resample``)."""

from __future__ import annotations

import functools
import random

from casino.v1 import bot_pb2
from referee.wire.convert import observation_from_pb
from referee.rules import Build, Condition, GameState, Move, RuleOptions, parse_card, parse_move, resample


def legal_moves(turn: bot_pb2.Turn) -> list[Move]:
    """The turn's legal moves as engine ``Move`` tuples, in the turn's order (so an index into
    this list is an index into ``turn.legal_moves``)."""
    return [_parse_move(m.notation) for m in turn.legal_moves]


_parse_move = functools.lru_cache(maxsize=1 << 16)(parse_move)  # the same plays recur all game long


def table_from_turn(turn: bot_pb2.Turn) -> tuple[tuple[int, ...], tuple[Build, ...]]:
    """The loose cards (engine card numbers) and the builds (engine ``Build`` tuples) on the table."""
    obs = turn.observation
    loose = tuple(sorted(parse_card(c) for c in obs.loose))
    builds = tuple(
        Build(b.id, b.value, tuple(sorted(parse_card(c) for c in b.cards)), b.owner, b.multiple) for b in obs.builds
    )
    return loose, builds


def options_from_turn(turn: bot_pb2.Turn) -> RuleOptions:
    """The rule options as far as a turn shows them (the handshake has the real ones): players from
    the hand sizes, partnerships from the number of sides, on_twenty from a side restricted to it.
    Nothing else matters to the play of one deal."""
    obs = turn.observation
    players = len(obs.hand_sizes)
    on_twenty = Condition.MOST_SPADES if "most_spades" in obs.restricted else Condition.LITTLE_CASINO
    return RuleOptions(players=players, partnerships=players == 4 and len(obs.pile_sizes) == 2, on_twenty=on_twenty)


def state_from_turn(turn: bot_pb2.Turn, rng: random.Random, options: RuleOptions | None = None) -> GameState:
    """A full engine ``GameState`` of the current deal, the hidden cards (others' hands, the stock)
    drawn by ``rng`` consistently with everything public: a determinisation for search.

    ``options`` default to ``options_from_turn(turn)``. The work is ``referee.rules.resample`` on the
    turn's observation: the state's ``sheets`` is empty, so once ``play`` ends the deal
    (``deal_over``), ``state.sheets[-1]`` is this deal's score sheet. Raises InvalidObservationError
    (a ValueError) when the turn is inconsistent.
    """
    return resample(observation_from_pb(turn.observation, options or options_from_turn(turn)), rng)
