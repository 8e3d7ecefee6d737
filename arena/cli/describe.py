"""Stored games in words for people and spreadsheets: who sat where, who won, who forfeited
and why. Pure functions over a game's stored result (casino.v1.GameResult as JSON) and the
tournament's bot names, shared by ``arena games``, ``arena show`` and ``arena export``."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence

from referee.match.record import MoveTimes

from ..rating.failures import failure_where, failures_of, kind_name, winners
from ..store.store import GameRow

# games.csv: the first eleven columns are the original ones (kept in place for old readers); the
# forfeit and winner columns were added after them. docs/tournaments.md describes every column.
GAMES_CSV_COLUMNS = ("number", "round", "set", "deck_seed", "status", "attempt", "seats", "scores", "ranks", "reason",
                     "error", "winner", "forfeited_by", "forfeit_kind", "forfeit_reason", "forfeit_at", "random_moves")
MANY = " | "  # between the entries of a cell when several seats forfeited one game (e.g. both at startup)


def seat_times_line(seat: int, name: str, moves: MoveTimes) -> str:
    """``seat 0 greedy: 45 moves, median 1.20 ms, max 5.00 ms, CPU median 0.90 ms, max 4.00 ms``:
    a seat's wall-clock move times and, where the record has them, its moves' CPU times."""
    def spread(values: Sequence[int]) -> str:
        ordered = sorted(values)
        return f"median {ordered[len(ordered) // 2] / 1000:.2f} ms, max {ordered[-1] / 1000:.2f} ms"
    line = f"seat {seat} {name}: {len(moves.wall_us)} moves, {spread(moves.wall_us)}"
    return line + f", CPU {spread(moves.cpu_us)}" if moves.cpu_us else line


def games_csv(games: Iterable[GameRow], names: Mapping[int, str]) -> str:
    """games.csv: a header, then one line per game (bots by their tournament names)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(GAMES_CSV_COLUMNS)
    for g in games:
        r = g.result or {}
        seats = [names[p] for p in g.seat_bots]
        forfeits = failures_of(r, forfeits=True)
        writer.writerow([
            g.number, g.round, g.set_number, g.deck_seed, g.status, g.attempt, " ".join(seats),
            " ".join(map(str, r.get("scores", []))), " ".join(map(str, r.get("ranks", []))), r.get("reason", ""),
            g.error or "", "+".join(winners(r, seats)),
            MANY.join(seats[int(f.get("seat", 0))] for f in forfeits),
            MANY.join(kind_name(f.get("kind", "")) for f in forfeits),
            MANY.join(str(f.get("reason", "")) for f in forfeits),
            MANY.join(failure_where(f) for f in forfeits),
            len(failures_of(r, forfeits=False)) if g.result else "",
        ])
    return out.getvalue()
