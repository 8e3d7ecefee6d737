"""Tournament standings: ratings, win/draw/loss records, forfeits and head-to-head scores, with
their rich-table, JSON and CSV renderings."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from .ratings import Rating, default_rating
from .results import FORFEIT_KINDS, GameOutcome

UNBOUNDED_WIDTH = 10_000  # to measure a table's natural width (rich caps a measurement at the width given)


@dataclass(frozen=True)
class StandingRow:
    """One bot's line of the standings; ``points_per_game`` is the mean final score of its side."""

    rank: int
    name: str
    mu: float
    sigma: float
    conservative: float
    games: int
    wins: int
    draws: int
    losses: int
    points_per_game: float
    forfeits: dict[str, int]


@dataclass(frozen=True)
class HeadToHead:
    """Pairwise results between bots on different sides; keys are (a, b) for every ordered pair of
    distinct bots. ``score``: 1 per game a ranked above b, 0.5 equal, 0 below; ``games``: games met."""

    names: tuple[str, ...]
    score: dict[tuple[str, str], float]
    games: dict[tuple[str, str], int]


@dataclass(frozen=True)
class Standings:
    """Rows sorted by conservative rating desc, then mu desc, then name; head-to-head in that order."""

    rows: tuple[StandingRow, ...]
    head_to_head: HeadToHead


@dataclass
class BotRecord:
    """One bot's sums: games, wins, draws, losses, and its sides' final scores."""

    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    points: int = 0


def seat_result(outcome: GameOutcome, seat: int) -> str:
    """The result ("win", "draw" or "loss") of the bot at ``seat``: a forfeit is a loss even when
    every side forfeited; rank 1 is a win with a single winning side, a draw when the top is shared."""
    if any(forfeit_seat == seat for forfeit_seat, _ in outcome.forfeits):
        return "loss"
    if outcome.ranks[seat] == 1:
        return "win" if outcome.winner_side >= 0 else "draw"
    return "loss"


def _check(outcome: GameOutcome, known: Mapping[str, object]) -> None:
    n = len(outcome.seat_bots)
    if len(outcome.sides) != n or len(outcome.ranks) != n:
        raise ValueError(f"game {outcome.number}: seat_bots, sides and ranks must have one entry per seat")
    if len(set(outcome.seat_bots)) != n:
        raise ValueError(f"game {outcome.number}: a bot plays more than one seat: {list(outcome.seat_bots)}")
    unknown = [bot for bot in outcome.seat_bots if bot not in known]
    if unknown:
        raise ValueError(f"game {outcome.number}: bots not in the standings: {unknown}")
    for seat, column in outcome.forfeits:
        if column not in FORFEIT_KINDS or not 0 <= seat < n:
            raise ValueError(f"game {outcome.number}: bad forfeit {(seat, column)}")


@dataclass
class Tally:
    """What standings count, before ratings order them: per bot its record and forfeits, per
    ordered pair of bots on different sides the head-to-head score and games met. Made from
    outcomes (``tally_outcomes``) or by the database from its game_seats rows (the same sums)."""

    records: dict[str, BotRecord]
    forfeits: dict[str, dict[str, int]]
    score: dict[tuple[str, str], float]
    met: dict[tuple[str, str], int]

    @classmethod
    def empty(cls, bot_names: Sequence[str]) -> Tally:
        if len(set(bot_names)) != len(bot_names):
            raise ValueError(f"bot names repeat: {list(bot_names)}")
        score = {(a, b): 0.0 for a in bot_names for b in bot_names if a != b}
        return cls({name: BotRecord() for name in bot_names}, {name: dict.fromkeys(FORFEIT_KINDS, 0) for name in bot_names},
                   score, dict.fromkeys(score, 0))


def tally_outcomes(bot_names: Sequence[str], outcomes: Iterable[GameOutcome]) -> Tally:
    """The tally of ``outcomes``; every bot of every outcome must be in ``bot_names``."""
    tally = Tally.empty(bot_names)
    records, forfeits, score, met = tally.records, tally.forfeits, tally.score, tally.met
    for outcome in outcomes:
        _check(outcome, records)
        for seat, column in outcome.forfeits:
            forfeits[outcome.seat_bots[seat]][column] += 1
        for seat, bot in enumerate(outcome.seat_bots):
            record = records[bot]
            record.games += 1
            record.points += outcome.scores[outcome.sides[seat]]
            result = seat_result(outcome, seat)
            record.wins += result == "win"
            record.draws += result == "draw"
            record.losses += result == "loss"
            for other, opponent in enumerate(outcome.seat_bots):
                if outcome.sides[other] == outcome.sides[seat]:
                    continue  # teammates (and the seat itself) are not compared
                mine, theirs = outcome.ranks[seat], outcome.ranks[other]
                score[bot, opponent] += 1.0 if mine < theirs else 0.5 if mine == theirs else 0.0
                met[bot, opponent] += 1
    return tally


def compute_standings(
    bot_names: Sequence[str], outcomes: Iterable[GameOutcome], ratings: Mapping[str, Rating]
) -> Standings:
    """Standings of ``bot_names`` over ``outcomes``; a bot missing from ``ratings`` has the default
    TrueSkill rating. Every bot of every outcome must be in ``bot_names``."""
    return standings_of(bot_names, tally_outcomes(bot_names, outcomes), ratings)


def standings_of(bot_names: Sequence[str], tally: Tally, ratings: Mapping[str, Rating]) -> Standings:
    """The standings of a tally: rows in rating order (conservative, then mu, then name)."""
    records, forfeits = tally.records, tally.forfeits
    fallback = default_rating()
    rated = {name: ratings.get(name, fallback) for name in bot_names}
    order = sorted(bot_names, key=lambda name: (-rated[name].conservative, -rated[name].mu, name))
    rows = tuple(
        StandingRow(
            rank=position,
            name=name,
            mu=rated[name].mu,
            sigma=rated[name].sigma,
            conservative=rated[name].conservative,
            games=records[name].games,
            wins=records[name].wins,
            draws=records[name].draws,
            losses=records[name].losses,
            points_per_game=records[name].points / records[name].games if records[name].games else 0.0,
            forfeits=forfeits[name],
        )
        for position, name in enumerate(order, start=1)
    )
    return Standings(rows=rows, head_to_head=HeadToHead(names=tuple(order), score=tally.score, games=tally.met))


def forfeits_text(forfeits: Mapping[str, int]) -> str:
    """Forfeit counts as read in a table, e.g. "2 timeout, 1 crash"; "-" when there are none."""
    parts = [f"{forfeits[kind]} {kind}" for kind in FORFEIT_KINDS if forfeits.get(kind, 0)]
    return ", ".join(parts) if parts else "-"


def standings_table(standings: Standings, title: str = "", compact: bool = False) -> Table:
    """The standings as a rich table, one line per bot in standings order. ``compact`` (the live
    view of ``arena run``) leaves out μ and σ and shortens headers so that it fits 80 columns.
    On a narrow terminal numbers are never cut; long names and forfeits wrap instead."""
    table = Table(title=title or None)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("bot", overflow="fold")  # wrapped, never cut to "rando…": names must stay tellable apart
    numbers = ("μ−3σ", "games", "W", "D", "L", "pts/game") if compact else (
        "rating (μ−3σ)", "μ", "σ", "games", "W", "D", "L", "pts/game")
    for header in numbers:
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("forfeits", overflow="fold")
    for row in standings.rows:
        ratings = [f"{row.conservative:.2f}"] + ([] if compact else [f"{row.mu:.2f}", f"{row.sigma:.2f}"])
        table.add_row(
            str(row.rank), row.name, *ratings, str(row.games), str(row.wins), str(row.draws), str(row.losses),
            f"{row.points_per_game:.2f}", forfeits_text(row.forfeits),
        )
    return table


def fitting_standings_table(console: Console, standings: Standings, title: str = "") -> Table:
    """The full table when it fits ``console``'s width, else the compact one (an 80-column
    terminal): either way no figure is cut."""
    table = standings_table(standings, title)
    natural = Measurement.get(console, console.options.update_width(UNBOUNDED_WIDTH), table).maximum
    if natural <= console.width:
        return table
    return standings_table(standings, title, compact=True)


def head_to_head_table(standings: Standings) -> Table:
    """Head-to-head as a rich table: the row bot's "score/games" against the column bot."""
    h2h = standings.head_to_head
    table = Table(title="head to head")
    table.add_column("bot", overflow="fold")
    for name in h2h.names:
        table.add_column(name, justify="right", overflow="fold")
    for a in h2h.names:
        cells = [
            f"{h2h.score[a, b]:g}/{h2h.games[a, b]}" if a != b and h2h.games[a, b] else "-" for b in h2h.names
        ]
        table.add_row(a, *cells)
    return table


def _row_dict(row: StandingRow) -> dict[str, Any]:
    return {
        "rank": row.rank, "name": row.name, "mu": row.mu, "sigma": row.sigma, "conservative": row.conservative,
        "games": row.games, "wins": row.wins, "draws": row.draws, "losses": row.losses,
        "points_per_game": row.points_per_game, "forfeits": {kind: row.forfeits[kind] for kind in FORFEIT_KINDS},
    }


def standings_json(standings: Standings) -> str:
    """The standings as JSON: rows in standings order, then every ordered pair of bots head-to-head."""
    h2h = standings.head_to_head
    document = {
        "standings": [_row_dict(row) for row in standings.rows],
        "head_to_head": [
            {"bot": a, "opponent": b, "score": h2h.score[a, b], "games": h2h.games[a, b]}
            for a in h2h.names for b in h2h.names if a != b
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False)


def standings_csv(standings: Standings) -> str:
    """The standings as CSV: a header, then one line per bot; forfeits as one column per kind."""
    fields = ["rank", "name", "mu", "sigma", "conservative", "games", "wins", "draws", "losses", "points_per_game"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(fields + [f"forfeits_{kind}" for kind in FORFEIT_KINDS])
    for row in standings.rows:
        writer.writerow([getattr(row, name) for name in fields] + [row.forfeits[kind] for kind in FORFEIT_KINDS])
    return out.getvalue()
