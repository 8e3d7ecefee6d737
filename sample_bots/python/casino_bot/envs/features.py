"""What one seat sees, as a tensor, a text and a dict: built from ``referee.rules.observation`` (so
never more than that seat may see) plus the tokens the seat has chosen so far in its turn.

Seats and sides are relative: slot 0 is the observer (its side), slot k the seat (side) k places
after it in playing order. The tensor (``TENSOR_SIZE`` floats in [0, 1], ``TENSOR_LAYOUT`` names
the pieces in order) holds: hand, loose cards, cards in builds, build slots by id (present, value
2..14, owner, multiple), cards seen this deal (dealt face up or played), hand sizes, who moves,
the dealer, the stock, pile sizes, sweeps, scores (/21), restricted conditions, the last capturer,
the continuation flag, and the observer's own unfinished move (played card, kind, builds, cards).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from referee.rules import CODE, Condition, GameState, observation

from .encoding import BUILD_REF, MAX_BUILD_ID, PLAY, TAKE, TRAIL, token_name

SLOTS = 4  # seats or sides, relative to the observer (fewer at smaller tables: the rest stay 0)
CONDITIONS = (Condition.MOST_CARDS, Condition.BIG_CASINO, Condition.LITTLE_CASINO, Condition.MOST_SPADES)
TENSOR_LAYOUT: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("hand", (52,)),
    ("loose", (52,)),
    ("in_builds", (52,)),
    ("builds", (MAX_BUILD_ID, 1 + 13 + SLOTS + 1)),  # present, value 2..14, owner seat slot, multiple
    ("seen", (52,)),
    ("hand_sizes", (SLOTS,)),
    ("to_move", (SLOTS,)),
    ("dealer", (SLOTS,)),
    ("stock", (1,)),
    ("pile_sizes", (SLOTS,)),
    ("sweeps", (SLOTS,)),
    ("scores", (SLOTS,)),
    ("restricted", (SLOTS, len(CONDITIONS))),
    ("last_capturer", (SLOTS,)),
    ("continuation", (1,)),
    ("chosen_card", (52,)),
    ("chosen_kind", (17,)),  # tokens TRAIL..RAISE
    ("chosen_builds", (MAX_BUILD_ID,)),
    ("chosen_loose", (52,)),
)
TENSOR_SIZE = sum(int(np.prod(shape)) for _, shape in TENSOR_LAYOUT)


def tensor_views(tensor: np.ndarray) -> dict[str, np.ndarray]:
    """Named, reshaped views into a flat tensor of ``TENSOR_SIZE`` (writing a view writes the tensor)."""
    views, at = {}, 0
    for name, shape in TENSOR_LAYOUT:
        size = int(np.prod(shape))
        views[name] = tensor[at:at + size].reshape(shape)
        at += size
    return views


def fill_tensor(views: dict[str, np.ndarray], state: GameState, seat: int, chosen: tuple[int, ...] = ()) -> None:
    """Write ``seat``'s view of ``state`` into ``views`` (from ``tensor_views``), zeroing the rest.
    ``chosen``: the tokens ``seat`` has chosen so far in its turn (only the mover has any)."""
    for v in views.values():
        v.fill(0)
    obs = observation(state, seat)
    n, sides, side = state.options.players, state.options.sides, obs.side
    views["hand"][list(obs.hand)] = 1
    views["loose"][list(obs.loose)] = 1
    for b in obs.builds:
        views["in_builds"][list(b.cards)] = 1
        if 1 <= b.id <= MAX_BUILD_ID:
            row = views["builds"][b.id - 1]
            row[0] = 1
            row[1 + b.value - 2] = 1
            row[14 + (b.owner - seat) % n] = 1
            row[18] = float(b.multiple)
    seen = views["seen"]
    seen[list(obs.table_dealt)] = 1
    for _, move in obs.plays:
        seen[move.card] = 1
    for s in range(n):
        views["hand_sizes"][(s - seat) % n] = obs.hand_sizes[s] / 4
    views["to_move"][(obs.to_move - seat) % n] = 1
    views["dealer"][(obs.dealer - seat) % n] = 1
    views["stock"][0] = obs.stock_size / 52
    for s in range(sides):
        k = (s - side) % sides
        views["pile_sizes"][k] = obs.pile_sizes[s] / 52
        views["sweeps"][k] = min(obs.sweeps[s], 10) / 10
        views["scores"][k] = min(obs.scores[s], 21) / 21
        if obs.restricted[s] is not None:
            views["restricted"][k, CONDITIONS.index(obs.restricted[s])] = 1
    if obs.last_capturer is not None:
        views["last_capturer"][(obs.last_capturer - seat) % n] = 1
    views["continuation"][0] = float(obs.continuation)
    for token in chosen:
        if token < TRAIL:
            views["chosen_card"][token - PLAY] = 1
        elif token <= BUILD_REF:
            views["chosen_kind"][token - TRAIL] = 1
        elif token < TAKE:
            views["chosen_builds"][token - BUILD_REF - 1] = 1
        elif token - TAKE < 52:
            views["chosen_loose"][token - TAKE] = 1


def observation_dict(state: GameState, seat: int, chosen: tuple[int, ...] = ()) -> dict[str, Any]:
    """``seat``'s view as JSON-friendly data: the engine's ``Observation.to_dict()`` plus ``chosen``
    (the tokens of the seat's unfinished move, in words)."""
    data = observation(state, seat).to_dict()
    data["chosen"] = [token_name(t) for t in chosen]
    return data


def observation_text(state: GameState, seat: int, chosen: tuple[int, ...] = ()) -> str:
    """``seat``'s view in a few lines of card codes and move notation, for logs and language models."""
    obs = observation(state, seat)
    builds = " ".join(
        f"b{b.id}[{b.value}: {'+'.join(CODE[c] for c in b.cards)} P{b.owner} {'multiple' if b.multiple else 'single'}]"
        for b in obs.builds
    )
    lines = [
        f"seat {seat} (side {obs.side}) deal {obs.deal + 1} round {obs.round}; to move: seat {obs.to_move}; "
        f"dealer: seat {obs.dealer}",
        f"hand: {' '.join(CODE[c] for c in obs.hand) or '-'}",
        f"table: {' '.join(CODE[c] for c in obs.loose) or '-'}{' ' + builds if builds else ''}",
        f"scores: {list(obs.scores)}; piles: {list(obs.pile_sizes)}; sweeps: {list(obs.sweeps)}; stock: {obs.stock_size}",
        "plays: " + ("; ".join(f"P{s} {m}" for s, m in obs.plays) or "-"),
    ]
    if chosen:
        lines.append("chosen: " + " ".join(token_name(t) for t in chosen))
    return "\n".join(lines)


def game_returns(state: GameState) -> list[float]:
    """Each seat's result, zero-sum: the winning side's seats share +1 each and the others -1 in all
    (2 sides: +1 / -1); 0 for every seat in a draw or before the end."""
    result = state.result
    n = state.options.players
    if result is None or result.winner is None:
        return [0.0] * n
    winners = [s for s in range(n) if state.options.side_of(s) == result.winner]
    losers = [s for s in range(n) if s not in winners]
    out = [0.0] * n
    for s in winners:
        out[s] = 1.0
    for s in losers:
        out[s] = -len(winners) / len(losers)
    return out

