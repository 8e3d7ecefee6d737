"""From a policy over the action encoding to a bot: ``policy_bot`` wraps it as a ``CasinoBot``, and
``play_in_process`` plays bots against each other in this process (no gRPC, no sandbox) to
regression-test one before packaging it."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import numpy as np

from casino.v1 import bot_pb2, game_pb2
from referee.rules import GameState, Move, RuleOptions, apply, legal_moves, new_game, observation, parse_move
from referee.wire.convert import move_from_pb, turn_to_pb

from ..bot import CasinoBot, Choice, Noted
from ..view import legal_moves as turn_moves
from ..view import state_from_turn
from .encoding import NUM_ACTIONS, TurnBuilder
from .features import TENSOR_SIZE, fill_tensor, tensor_views

Policy = Callable[[np.ndarray, np.ndarray], int]  # (observation tensor, int8 action mask) -> token


class PolicyBot(CasinoBot):
    """A bot that spells each move token by token with ``policy``, on the same tensor and mask as
    the environments (the turn's view, rebuilt with ``state_from_turn``: ``features`` reads only
    what the seat may see, so the hidden cards it draws never reach the policy)."""

    threaded = False

    def __init__(self, policy: Policy, name: str = "policy-bot", seed: int = 0) -> None:
        super().__init__()
        self.policy = policy
        self.name = name
        self._rng = random.Random(seed)
        self._tensor = np.zeros(TENSOR_SIZE, np.float32)
        self._views = tensor_views(self._tensor)

    def choose(self, turn: bot_pb2.Turn) -> Move:
        state = state_from_turn(turn, self._rng, self.options)
        builder: TurnBuilder | Move = TurnBuilder(turn_moves(turn))
        while isinstance(builder, TurnBuilder):
            fill_tensor(self._views, state, state.to_move, builder.prefix)
            mask = np.zeros(NUM_ACTIONS, np.int8)
            mask[builder.legal_actions()] = 1
            builder = builder.choose(int(self.policy(self._tensor.copy(), mask)))
        return builder


def policy_bot(policy: Policy, name: str = "policy-bot", seed: int = 0) -> PolicyBot:
    """``policy(observation, action_mask) -> token`` as a bot: ``run(policy_bot(my_policy))``."""
    return PolicyBot(policy, name, seed)


def play_in_process(bots: Sequence[CasinoBot], seed: int, options: RuleOptions | None = None) -> GameState:
    """One game of ``bots`` (one per seat) dealt from ``seed`` as the referee deals it; each bot's
    ``choose`` gets the ``Turn`` the referee would send. Returns the final state (``result``)."""
    options = options or RuleOptions(players=len(bots))
    for bot in bots:
        bot.options = options
    state = new_game(options, seed=seed)
    turn_id = 0
    while not state.is_over:
        turn_id += 1
        moves = legal_moves(state)
        turn = turn_to_pb(f"in-process-{seed}", turn_id, observation(state, state.to_move), moves, 1000, 0)
        state = apply(state, _move_of(bots[state.to_move].choose(turn), moves))
    return state


def _move_of(choice: Choice, moves: list[Move]) -> Move:
    if isinstance(choice, Noted):
        return _move_of(choice.choice, moves)
    if isinstance(choice, Move):
        return choice
    if isinstance(choice, int):
        return moves[choice]
    if isinstance(choice, str):
        return parse_move(choice)
    if isinstance(choice, game_pb2.Move):
        return move_from_pb(choice)
    raise TypeError(f"choose returned {type(choice).__name__}")
