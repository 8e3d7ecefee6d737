"""Royal Casino as an OpenSpiel Python game, registered as ``python_royal_casino`` on import.

    import pyspiel
    import casino_bot.envs.openspiel  # registers the game
    game = pyspiel.load_game("python_royal_casino", {"players": 2, "individuals": False, "max_deals": 30})

Sequential, imperfect information, zero-sum (``features.game_returns``). Every deal starts with 52
explicit chance nodes, one per card in dealing order (the front of the deck first: the 4 table
cards, then the hands as ``referee.rules`` deals them, then the stock), each outcome a card still in
the deck, uniformly: a deal is its deck, so a duplicate deal is the same 52 chance outcomes
(``chance_outcomes_for_seed`` gives the ones of a seeded engine game). Player actions are the tokens
of ``casino_bot.envs.encoding``; the rules are ``referee.rules``' own (``play``, ``legal_moves``).
Observations (string and tensor, per player) come from ``casino_bot.envs.features``; there is no
information-state (perfect recall) form.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pyspiel

from referee.rules import CODE, DeckSource, GameState, Move, RuleOptions, new_game, next_deal_if_over, play

from .encoding import NUM_ACTIONS, TurnBuilder, token_name
from .features import TENSOR_LAYOUT, TENSOR_SIZE, fill_tensor, game_returns, observation_text, tensor_views

SHORT_NAME = "python_royal_casino"
DEFAULT_PARAMS: dict[str, Any] = {"players": 2, "individuals": False, "max_deals": 30}
CARDS = 52
# a deal: 52 chance nodes and 48 plays of at most 2 + 48 + 52 + 1 tokens (in practice 2-4)
MAX_DEAL_LENGTH = CARDS + 48 * (2 + 48 + 52 + 1)

_GAME_TYPE = pyspiel.GameType(
    short_name=SHORT_NAME,
    long_name="Python Royal Casino (Royal Casino Arena rules engine)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=4,
    min_num_players=2,
    provides_information_state_string=False,
    provides_information_state_tensor=False,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=DEFAULT_PARAMS,
)


class _Frozen:
    """Immutable values OpenSpiel's ``clone`` (a deep copy) may share instead of copying: the
    engine's states are immutable, and deep-copying one walks its whole history."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __deepcopy__(self, memo: dict[int, Any]) -> _Frozen:
        return self


class RoyalCasinoGame(pyspiel.Game):
    """The game; parameters ``players`` (2-4), ``individuals`` (4 players without partnerships)
    and ``max_deals`` (rule 18)."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        merged = {**DEFAULT_PARAMS, **(params or {})}
        self.rule_options = RuleOptions(players=int(merged["players"]), partnerships=not merged["individuals"],
                                        max_deals=int(merged["max_deals"]))
        n = self.rule_options.players
        info = pyspiel.GameInfo(
            num_distinct_actions=NUM_ACTIONS,
            max_chance_outcomes=CARDS,
            num_players=n,
            min_utility=-1.0,
            max_utility=1.0,
            utility_sum=0.0,
            max_game_length=self.rule_options.max_deals * MAX_DEAL_LENGTH,
        )
        super().__init__(_GAME_TYPE, info, merged)

    def new_initial_state(self) -> RoyalCasinoState:
        """Before the first card of the first deal."""
        return RoyalCasinoState(self)

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> RoyalCasinoObserver:
        """The observer of one player's view (tensor and string); perfect recall is not offered."""
        if iig_obs_type is not None and iig_obs_type.perfect_recall:
            raise ValueError("python_royal_casino has no perfect-recall observation")
        if params:
            raise ValueError(f"observation parameters are not supported: {params}")
        return RoyalCasinoObserver()


class RoyalCasinoState(pyspiel.State):
    """A state: dealing (chance) or a player choosing tokens, over an engine ``GameState``."""

    def __init__(self, game: RoyalCasinoGame) -> None:
        super().__init__(game)
        self._options = game.rule_options
        self._engine = _Frozen(None)  # GameState | None: None before the first deal is dealt
        self._decks = _Frozen(())  # tuple of the decks dealt so far, this deal's last when complete
        self._dealing = _Frozen(())  # the cards of the deck being dealt, in dealing order
        self._turn = _Frozen(None)  # TurnBuilder of the player to move

    # --- what the engine says -------------------------------------------------------------------
    @property
    def engine_state(self) -> GameState | None:
        """The engine's state (during a deal's chance nodes: the end of the previous deal)."""
        return self._engine.value

    @property
    def decks(self) -> tuple[tuple[int, ...], ...]:
        """The decks dealt so far (each 52 engine card numbers in dealing order)."""
        return self._decks.value

    def _is_dealing(self) -> bool:
        state = self._engine.value
        return state is None or (state.deal_over and state.result is None)

    def current_player(self) -> int:
        """The seat to move, CHANCE while a deck is dealt, TERMINAL at the end."""
        state = self._engine.value
        if state is not None and state.result is not None:
            return pyspiel.PlayerId.TERMINAL
        if self._is_dealing():
            return pyspiel.PlayerId.CHANCE
        return state.to_move

    def _legal_actions(self, player: int) -> list[int]:
        return self._turn.value.legal_actions() if player == self.current_player() else []

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """The cards not yet dealt from this deal's deck, each equally likely."""
        dealt = set(self._dealing.value)
        left = [c for c in range(CARDS) if c not in dealt]
        return [(c, 1.0 / len(left)) for c in left]

    def _apply_action(self, action: int) -> None:
        if self._is_dealing():
            self._deal_card(int(action))
            return
        chosen = self._turn.value.choose(int(action))
        if not isinstance(chosen, Move):
            self._turn = _Frozen(chosen)
            return
        state = play(self._engine.value, chosen)  # legal: it is one of legal_moves' moves
        self._engine = _Frozen(state)
        self._turn = _Frozen(None if state.deal_over else TurnBuilder.for_state(state))

    def _deal_card(self, card: int) -> None:
        dealing = self._dealing.value + (card,)
        if len(dealing) < CARDS:
            self._dealing = _Frozen(dealing)
            return
        decks = self._decks.value + (dealing,)
        source = DeckSource(None, decks)
        state = self._engine.value
        if state is None:
            state = new_game(self._options, decks=decks)
        else:
            state = next_deal_if_over(replace(state, decks=source))
        self._engine, self._decks, self._dealing = _Frozen(state), _Frozen(decks), _Frozen(())
        self._turn = _Frozen(TurnBuilder.for_state(state))

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"deal {CODE[action]}"
        return token_name(action)

    def is_terminal(self) -> bool:
        state = self._engine.value
        return state is not None and state.result is not None

    def returns(self) -> list[float]:
        """+1 each for the winning side's seats, the losers -1 in all; 0 before the end or in a draw."""
        state = self._engine.value
        return game_returns(state) if state is not None else [0.0] * self._options.players

    def __str__(self) -> str:
        state = self._engine.value
        if state is None or self._is_dealing():
            return f"dealing deal {len(self._decks.value) + 1}: {len(self._dealing.value)} cards dealt"
        hands = " | ".join(" ".join(map(_code, h)) for h in state.hands)
        chosen = " ".join(token_name(t) for t in self._turn.value.prefix) if self._turn.value else ""
        return (f"deal {state.deal + 1} to move {state.to_move} hands {hands} table "
                f"{' '.join(map(_code, state.loose))} builds {[(b.id, b.value) for b in state.builds]} "
                f"scores {list(state.scores)}{' chosen ' + chosen if chosen else ''}")

    def chosen(self) -> tuple[int, ...]:
        """The tokens the player to move has chosen so far in its turn."""
        return self._turn.value.prefix if self._turn.value is not None and not self._is_dealing() else ()


def _code(card: int) -> str:
    return CODE[card]


class RoyalCasinoObserver:
    """One player's view (OpenSpiel's PyObserver): ``tensor`` / ``dict`` as ``features`` lays them
    out, and ``string_from`` the text view. Before the first deal everything is zero."""

    def __init__(self) -> None:
        self.tensor = np.zeros(TENSOR_SIZE, np.float32)
        self.dict = tensor_views(self.tensor)
        assert list(self.dict) == [name for name, _ in TENSOR_LAYOUT]

    def set_from(self, state: RoyalCasinoState, player: int) -> None:
        """Write ``player``'s view of ``state`` into ``tensor``."""
        engine = state.engine_state
        if engine is None:
            self.tensor.fill(0)
            return
        fill_tensor(self.dict, engine, player, state.chosen() if player == engine.to_move else ())

    def string_from(self, state: RoyalCasinoState, player: int) -> str:
        """``player``'s view as text."""
        engine = state.engine_state
        if engine is None:
            return f"seat {player}: dealing the first deal"
        return observation_text(engine, player, state.chosen() if player == engine.to_move else ())


def chance_outcomes_for_seed(seed: int, deals: int = 1, options: RuleOptions | None = None) -> list[int]:
    """The chance outcomes that deal what ``referee.rules.new_game(options, seed=seed)`` deals in its
    first ``deals`` deals (the referee's games with that seed): each deck's cards in order."""
    source = DeckSource(seed)
    return [card for deal in range(deals) for card in source.deck(deal)]


pyspiel.register_game(_GAME_TYPE, RoyalCasinoGame)
