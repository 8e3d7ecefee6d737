"""Research environments over the rules engine (the ``research`` extra: numpy, gymnasium,
pettingzoo, open-spiel): ``casino_bot.envs.pettingzoo.env(...)``, the OpenSpiel game
``python_royal_casino`` (registered by importing ``casino_bot.envs.openspiel``), the shared action
encoding (``encoding``) and observations (``features``), and ``policy_bot`` / ``play_in_process``
to turn a trained policy into a bot and test it (docs/research.md). The core SDK never imports this
package, so a bot without the extra installs as before."""

from __future__ import annotations

from .encoding import END, NUM_ACTIONS, TurnBuilder, spell, token_name, tokens_in_state
from .policy import Policy, PolicyBot, play_in_process, policy_bot

__all__ = ["END", "NUM_ACTIONS", "Policy", "PolicyBot", "TurnBuilder", "play_in_process", "policy_bot", "spell",
           "token_name", "tokens_in_state"]
