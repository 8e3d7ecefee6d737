"""TrueSkill ratings of the bots: one rating per bot, updated one finished game at a time."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import trueskill

from .results import GameOutcome


@dataclass(frozen=True, slots=True)
class Rating:
    """A bot's skill estimate: mean ``mu`` and uncertainty ``sigma``."""

    mu: float
    sigma: float

    @property
    def conservative(self) -> float:
        """mu - 3 sigma: the skill the bot very probably has at least; what standings sort by."""
        return self.mu - 3 * self.sigma


def make_env() -> trueskill.TrueSkill:
    """A TrueSkill environment with the trueskill package's defaults: mu 25, sigma 25/3,
    beta 25/6, tau 25/300, draw_probability 0.10 (a new object, so nothing global is touched)."""
    return trueskill.TrueSkill()


def default_rating(env: trueskill.TrueSkill | None = None) -> Rating:
    """The rating of a bot that has played no game yet under ``env`` (make_env() if None)."""
    env = env if env is not None else make_env()
    return Rating(mu=env.mu, sigma=env.sigma)


def rating_teams(outcome: GameOutcome) -> tuple[list[tuple[str, ...]], list[int]]:
    """The game as TrueSkill sees it: the bots of each side (sides in order of their first seat)
    and each side's 0-based rank, lower is better, equal for a draw."""
    n = len(outcome.seat_bots)
    if n < 2 or len(outcome.sides) != n or len(outcome.ranks) != n:
        raise ValueError(f"game {outcome.number}: seat_bots, sides and ranks must have one entry per seat (2 or more)")
    if len(set(outcome.seat_bots)) != n:
        raise ValueError(f"game {outcome.number}: a bot plays more than one seat: {list(outcome.seat_bots)}")
    teams: dict[int, list[str]] = {}
    team_rank: dict[int, int] = {}
    for bot, side, rank in zip(outcome.seat_bots, outcome.sides, outcome.ranks):
        if rank < 1:
            raise ValueError(f"game {outcome.number}: ranks start at 1, got {rank}")
        if team_rank.setdefault(side, rank) != rank:
            raise ValueError(f"game {outcome.number}: seats of side {side} have different ranks")
        teams.setdefault(side, []).append(bot)
    if len(teams) < 2:
        raise ValueError(f"game {outcome.number}: needs at least two sides")
    return [tuple(bots) for bots in teams.values()], [team_rank[side] - 1 for side in teams]


class RatingBook:
    """Every bot's current rating; games are applied one at a time, in game-number order (the caller's job)."""

    def __init__(self, env: trueskill.TrueSkill | None = None, ratings: Mapping[str, Rating] | None = None) -> None:
        self.env = env if env is not None else make_env()
        self._ratings: dict[str, Rating] = dict(ratings or {})

    def rating(self, name: str) -> Rating:
        """The bot's current rating; the environment's starting rating for a bot not seen yet."""
        found = self._ratings.get(name)
        return found if found is not None else default_rating(self.env)

    def ratings(self) -> dict[str, Rating]:
        """A copy of every rating the book holds (bots given at start or seen in a game)."""
        return dict(self._ratings)

    def update(self, outcome: GameOutcome) -> dict[str, Rating]:
        """Apply one finished game: 1 v 1, free-for-all or two teams of two with individual ratings,
        by the game's side ranks; returns the new rating of each bot in it."""
        teams, ranks = rating_teams(outcome)
        current = {bot: self.rating(bot) for team in teams for bot in team}
        groups = [{bot: self.env.create_rating(current[bot].mu, current[bot].sigma) for bot in team} for team in teams]
        rated = self.env.rate(groups, ranks=ranks)
        new = {bot: Rating(mu=r.mu, sigma=r.sigma) for group in rated for bot, r in group.items()}
        self._ratings.update(new)
        return new
