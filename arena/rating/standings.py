"""Tournament standings: ratings, win/draw/loss records, forfeits and head-to-head scores, with
their rich-table, JSON and CSV renderings; which bots are provisional (too few games or too wide
a σ for their place to mean much yet), and the pairs whose head-to-head disagrees with the ranking."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from .ratings import Rating, default_rating
from .results import FORFEIT_KINDS, GameOutcome

UNBOUNDED_WIDTH = 10_000  # to measure a table's natural width (rich caps a measurement at the width given)
PROVISIONAL_MARK = "?"  # after a provisional bot's rating in the tables, as chess sites mark a provisional rating


class ProvisionalRule(Protocol):
    """When a bot is provisional: fewer games than ``provisional_games``, or a σ above
    ``provisional_sigma`` (arena.config.StandingsSettings is one, with the defaults)."""

    @property
    def provisional_games(self) -> int: ...

    @property
    def provisional_sigma(self) -> float: ...


def provisional_reasons(games: int, sigma: float, rule: ProvisionalRule | None) -> tuple[str, ...]:
    """Why a bot is provisional under ``rule``, e.g. ("8 games of 20", "σ 3.10 > 2.5"); empty when
    it is not, or there is no rule. σ is shown with as many decimals as it takes to exceed the limit."""
    if rule is None:
        return ()
    reasons = []
    if games < rule.provisional_games:
        reasons.append(f"{games} game{'' if games == 1 else 's'} of {rule.provisional_games}")
    if sigma > rule.provisional_sigma:
        shown = next((text for digits in range(2, 7) if float(text := f"{sigma:.{digits}f}") > rule.provisional_sigma),
                     repr(sigma))
        reasons.append(f"σ {shown} > {rule.provisional_sigma:g}")
    return tuple(reasons)


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
    provisional: tuple[str, ...] = ()  # why its rating is provisional (provisional_reasons); empty: it is not


@dataclass(frozen=True)
class HeadToHead:
    """Pairwise results between bots on different sides; keys are (a, b) for every ordered pair of
    distinct bots. ``score``: 1 per game a ranked above b, 0.5 equal, 0 below; ``games``: games met."""

    names: tuple[str, ...]
    score: dict[tuple[str, str], float]
    games: dict[tuple[str, str], int]


@dataclass(frozen=True)
class Standings:
    """Rows sorted by conservative rating desc, then mu desc, then name; head-to-head in that order;
    ``rule``: when a row is provisional (None: no row is marked)."""

    rows: tuple[StandingRow, ...]
    head_to_head: HeadToHead
    rule: ProvisionalRule | None = None


@dataclass(frozen=True)
class RankNote:
    """A bot ranked below one it leads head to head: ``lower`` scored ``score`` in ``games``
    against ``higher`` (1 a game it finished above, ½ level), more than half."""

    higher: StandingRow
    lower: StandingRow
    score: float
    games: int

    def text(self) -> str:
        """The note as the leaderboard says it: what each figure is, and why the order stands."""
        hi, lo = self.higher, self.lower
        marked = [row.name for row in (lo, hi) if row.provisional]
        provisional = ("; both are provisional" if len(marked) == 2 else
                       f"; {marked[0]} is provisional" if marked else "")
        return (f"{lo.name} leads {hi.name} {self.score:g}–{self.games - self.score:g} head to head but ranks below "
                f"it: ranks follow the rating μ − 3σ, which weighs every game by whom it was against and takes off "
                f"3σ for what is still uncertain "
                f"({hi.name} {_rating_sum(hi)}; {lo.name} {_rating_sum(lo)}){provisional}")


def _rating_sum(row: StandingRow) -> str:
    return f"{row.conservative:.2f} = {row.mu:.2f} − 3 × {row.sigma:.2f}"


def rank_notes(standings: Standings) -> tuple[RankNote, ...]:
    """Every pair where the lower-ranked bot has the better head-to-head score against the higher
    one (more than half of what they played for), in standings order: what the leaderboard explains."""
    h2h = standings.head_to_head
    notes = []
    for i, higher in enumerate(standings.rows):
        for lower in standings.rows[i + 1:]:
            games = h2h.games.get((lower.name, higher.name), 0)
            score = h2h.score.get((lower.name, higher.name), 0.0)
            if games and score > games / 2:
                notes.append(RankNote(higher, lower, score, games))
    return tuple(notes)


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
    bot_names: Sequence[str], outcomes: Iterable[GameOutcome], ratings: Mapping[str, Rating],
    rule: ProvisionalRule | None = None,
) -> Standings:
    """Standings of ``bot_names`` over ``outcomes``; a bot missing from ``ratings`` has the default
    TrueSkill rating. Every bot of every outcome must be in ``bot_names``."""
    return standings_of(bot_names, tally_outcomes(bot_names, outcomes), ratings, rule)


def standings_of(bot_names: Sequence[str], tally: Tally, ratings: Mapping[str, Rating],
                 rule: ProvisionalRule | None = None) -> Standings:
    """The standings of a tally: rows in rating order (conservative, then mu, then name), each
    marked provisional as ``rule`` says (the mark never changes the order)."""
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
            provisional=provisional_reasons(records[name].games, rated[name].sigma, rule),
        )
        for position, name in enumerate(order, start=1)
    )
    return Standings(rows=rows, head_to_head=HeadToHead(names=tuple(order), score=tally.score, games=tally.met),
                     rule=rule)


def forfeits_text(forfeits: Mapping[str, int]) -> str:
    """Forfeit counts as read in a table, e.g. "2 timeout, 1 crash"; "-" when there are none."""
    parts = [f"{forfeits[kind]} {kind}" for kind in FORFEIT_KINDS if forfeits.get(kind, 0)]
    return ", ".join(parts) if parts else "-"


def provisional_legend(rule: ProvisionalRule) -> str:
    """What provisional means under ``rule``: "provisional: under 20 games or σ above 2.5; ..."."""
    tests = ([f"under {rule.provisional_games} games"] if rule.provisional_games > 0 else []) + [
        f"σ above {rule.provisional_sigma:g}"]
    return (f"provisional: {' or '.join(tests)}; its rating is still uncertain, "
            "so its place may move a lot")


def standings_table(standings: Standings, title: str = "", compact: bool = False) -> Table:
    """The standings as a rich table, one line per bot in standings order. ``compact`` (the live
    view of ``arena run``) leaves out μ and σ and shortens headers so that it fits 80 columns.
    On a narrow terminal numbers are never cut; long names and forfeits wrap instead. A
    provisional bot's rating ends in PROVISIONAL_MARK, explained under the table."""
    marked = any(row.provisional for row in standings.rows)
    rule = standings.rule
    legend = f"{PROVISIONAL_MARK} {provisional_legend(rule)}" if marked and rule is not None else None
    table = Table(title=title or None, caption=legend, caption_justify="left")
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("bot", overflow="fold")  # wrapped, never cut to "rando…": names must stay tellable apart
    numbers = ("μ−3σ", "games", "W", "D", "L", "pts/game") if compact else (
        "rating (μ−3σ)", "μ", "σ", "games", "W", "D", "L", "pts/game")
    for header in numbers:
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("forfeits", overflow="fold")
    for row in standings.rows:
        mark = PROVISIONAL_MARK if row.provisional else ""
        ratings = [f"{row.conservative:.2f}{mark}"] + ([] if compact else [f"{row.mu:.2f}", f"{row.sigma:.2f}"])
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
        "provisional": bool(row.provisional), "provisional_reasons": list(row.provisional),
    }


def rule_dict(rule: ProvisionalRule | None) -> dict[str, Any] | None:
    """The thresholds as JSON gives them (None: no row is marked)."""
    return None if rule is None else {"games": rule.provisional_games, "sigma": rule.provisional_sigma}


def note_dict(note: RankNote) -> dict[str, Any]:
    """A rank note as JSON gives it: the lower-ranked bot, the one above it, their head-to-head, the text."""
    return {"bot": note.lower.name, "ranked_below": note.higher.name, "score": note.score, "games": note.games,
            "text": note.text()}


def standings_json(standings: Standings) -> str:
    """The standings as JSON: rows in standings order, then every ordered pair of bots head-to-head,
    the provisional thresholds, and the notes on bots ranked below one they lead head to head."""
    h2h = standings.head_to_head
    document = {
        "standings": [_row_dict(row) for row in standings.rows],
        "head_to_head": [
            {"bot": a, "opponent": b, "score": h2h.score[a, b], "games": h2h.games[a, b]}
            for a in h2h.names for b in h2h.names if a != b
        ],
        "provisional": rule_dict(standings.rule),
        "rank_notes": [note_dict(note) for note in rank_notes(standings)],
    }
    return json.dumps(document, indent=2, ensure_ascii=False)


def standings_csv(standings: Standings) -> str:
    """The standings as CSV: a header, then one line per bot; forfeits as one column per kind, then
    (new columns go at the end) ``provisional`` (true/false) and its reasons, "; "-joined."""
    fields = ["rank", "name", "mu", "sigma", "conservative", "games", "wins", "draws", "losses", "points_per_game"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(fields + [f"forfeits_{kind}" for kind in FORFEIT_KINDS] + ["provisional", "provisional_reasons"])
    for row in standings.rows:
        writer.writerow([getattr(row, name) for name in fields] + [row.forfeits[kind] for kind in FORFEIT_KINDS]
                        + ["true" if row.provisional else "false", "; ".join(row.provisional)])
    return out.getvalue()
