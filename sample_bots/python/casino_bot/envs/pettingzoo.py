"""Royal Casino as a PettingZoo AEC environment: ``env(players=2, individuals=False, ...)``.

Agents ``player_0`` .. ``player_{n-1}`` are the seats. Each step is one token of the action encoding
(``casino_bot.envs.encoding``, 170 actions); the observation is a dict of ``observation`` (the
tensor of ``features``) and ``action_mask`` (int8, 1 for the legal tokens); ``observe_text(agent)``
and ``observe_dict(agent)`` give the same view as text and as JSON-friendly data (PettingZoo's
API test wants numeric observations, so those two are methods beside it). Decks come from the engine's seeded ``DeckSource``: ``reset(seed=s)``
deals exactly what ``referee.rules.new_game(seed=s)`` and the referee deal, and
``reset(options={"decks": [...]})`` deals explicit decks first (a duplicate deal). At the end each
agent's reward is its ``game_returns`` (+1 for the winning side, the losers -1 in all).
"""

from __future__ import annotations

import functools
import random
from typing import Any

import gymnasium
import numpy as np
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from referee.rules import GameState, Move, RuleOptions, apply, new_game, parse_deck

from .encoding import NUM_ACTIONS, TurnBuilder
from .features import TENSOR_SIZE, fill_tensor, game_returns, observation_dict, observation_text, tensor_views



def env(players: int = 2, individuals: bool = False, **kwargs: Any) -> AECEnv:
    """The environment, wrapped as PettingZoo's own are (step order checked)."""
    return wrappers.OrderEnforcingWrapper(raw_env(players, individuals, **kwargs))


class raw_env(AECEnv):  # noqa: N801 (PettingZoo's naming)
    """Royal Casino for 2-4 seats (4 in partnerships unless ``individuals``), ``max_deals`` per game."""

    metadata = {"name": "royal_casino_v0", "render_modes": ["ansi", "human"], "is_parallelizable": False}

    def __init__(self, players: int = 2, individuals: bool = False, *, max_deals: int = 30,
                 render_mode: str | None = None) -> None:
        super().__init__()
        self.rule_options = RuleOptions(players=players, partnerships=not individuals, max_deals=max_deals)
        self.render_mode = render_mode
        self.possible_agents = [f"player_{i}" for i in range(players)]
        self.agents = list(self.possible_agents)
        mask = gymnasium.spaces.Box(0, 1, (NUM_ACTIONS,), np.int8)
        body = gymnasium.spaces.Box(0.0, 1.0, (TENSOR_SIZE,), np.float32)
        self._observation_spaces = {
            a: gymnasium.spaces.Dict({"observation": body, "action_mask": mask}) for a in self.possible_agents}
        self._action_spaces = {a: gymnasium.spaces.Discrete(NUM_ACTIONS) for a in self.possible_agents}
        self.state: GameState | None = None
        self.turn: TurnBuilder | None = None
        self.moves: list[Move] = []

    def observation_space(self, agent: str) -> gymnasium.spaces.Space:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> gymnasium.spaces.Space:
        return self._action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """A new game: decks from ``seed`` (a random one when None), after ``options["decks"]`` if
        given (each 52 cards as engine numbers or codes). Other option keys are ignored."""
        if seed is None:
            seed = random.SystemRandom().randrange(1 << 62)
        decks = [parse_deck(d) if isinstance(d, str) or (d and isinstance(d[0], str)) else d
                 for d in (options or {}).get("decks", ())]
        self.state = new_game(self.rule_options, seed=seed, decks=decks)
        self.turn = TurnBuilder.for_state(self.state)
        self.moves = []
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[self.state.to_move]

    def step(self, action: int | None) -> None:
        """Add one token to the mover's move; when it completes a move, play it with the engine."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        assert self.state is not None and self.turn is not None, "reset() first"
        self._cumulative_rewards[agent] = 0.0
        self.rewards = {a: 0.0 for a in self.agents}
        chosen = self.turn.choose(int(action))  # type: ignore[arg-type]
        if isinstance(chosen, Move):
            self.state = apply(self.state, chosen)
            self.moves.append(chosen)
            if self.state.is_over:
                self.turn = None
                for a, r in zip(self.possible_agents, game_returns(self.state), strict=True):
                    self.rewards[a] = r
                    self.terminations[a] = True
            else:
                self.turn = TurnBuilder.for_state(self.state)
                self.agent_selection = self.possible_agents[self.state.to_move]
        else:
            self.turn = chosen
        self._accumulate_rewards()
        if self.render_mode == "human":
            print(self.render())

    def observe(self, agent: str) -> dict[str, Any]:
        """``{"observation": float32[TENSOR_SIZE], "action_mask": int8[170]}`` for ``agent``."""
        assert self.state is not None, "reset() first"
        seat = self.possible_agents.index(agent)
        chosen = self._chosen(seat)
        mask = np.zeros(NUM_ACTIONS, np.int8)
        if self.turn is not None and seat == self.state.to_move:
            mask[self.turn.legal_actions()] = 1
        tensor = np.zeros(TENSOR_SIZE, np.float32)
        fill_tensor(tensor_views(tensor), self.state, seat, chosen)
        return {"observation": tensor, "action_mask": mask}

    def observe_dict(self, agent: str) -> dict[str, Any]:
        """``agent``'s view as JSON-friendly data (``features.observation_dict``)."""
        assert self.state is not None, "reset() first"
        seat = self.possible_agents.index(agent)
        return observation_dict(self.state, seat, self._chosen(seat))

    def observe_text(self, agent: str) -> str:
        """``agent``'s view as text (``features.observation_text``)."""
        assert self.state is not None, "reset() first"
        seat = self.possible_agents.index(agent)
        return observation_text(self.state, seat, self._chosen(seat))

    def _chosen(self, seat: int) -> tuple[int, ...]:
        if self.turn is None or self.state is None or seat != self.state.to_move:
            return ()
        return self.turn.prefix

    def render(self) -> str | None:
        """The mover's view as text (``ansi`` returns it, ``human`` prints it after each step)."""
        if self.render_mode is None:
            gymnasium.logger.warn("render() without a render_mode: pass render_mode='ansi' or 'human'")
            return None
        assert self.state is not None, "reset() first"
        return observation_text(self.state, self.state.to_move, self._chosen(self.state.to_move))

    def close(self) -> None:
        """Nothing to release."""

