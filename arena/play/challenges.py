"""Challenges played between a ladder's rounds (docs/challenges.md): each is ``arena compare``'s
comparison (arena/play/compare.py: duplicate pairs, its sequential test and margins) of the
challenger (the candidate) against the opponent (the baseline), at the ladder's table, rules and
time control, through the ladder's own executor (`arena serve --queue`: the job queue's workers,
through a QueueExecutor playing into the challenge's tournament).

`arena serve` plays a round's own games first; then, while it is not stopping, the open challenges
oldest first, ``[challenges] games_per_round`` games in all (whole pairs), so a round's pace is
kept whatever users ask for. A challenge not finished within that budget goes on after the next
round from the pair it reached: its finished pairs are kept with it and fed back to the test
(``Comparison.restore``), and the pair a stopped server left half played is played again from its
seed. Each game is stored in the challenge's own tournament (arena/store/challenges.py), never in
the ladder's, as it finishes.

The verdict: with the sequential test (until decided), H1 is "better", H0 "not_better", the cap of
pairs reached first "undecided"; with a number of pairs, "better" when the 95% interval lies above
the lower bound, else "not_better" when it lies below the upper bound, else "undecided". A game the
referee itself could not play fails the challenge (its error kept); a bot's misbehaviour is a
result, counted in ``games_failed``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from referee.bots.endpoint import BotEndpoint
from referee.match.game import Observer
from referee.match.report import GameReport
from referee.match.spec import GameSetup

from ..config import TournamentConfig
from ..rating.stats import SprtBounds
from ..store.challenges import ChallengeRow, decide, forget_unsettled, record_pair, start_game
from ..store.store import Store, first_line
from .compare import Comparison, CompareSpec, PairResult
from .executor import GameExecutor, SeatBot
from .queue_executor import QueueExecutor, QueueRunError

log = logging.getLogger(__name__)
CHALLENGE_TABLES = (2, 4)  # the comparison's tables: 2 players, or 2 v 2


class StoringExecutor:
    """Plays through ``inner`` and stores each game in the challenge's tournament ``games_tid`` as
    it finishes (a cancelled game's row is deleted); counts the games a bot failed in. With
    ``store_games`` False (the queue's executor, whose workers store the games) it only counts."""

    def __init__(self, inner: GameExecutor, store: Store, games_tid: int, store_games: bool = True) -> None:
        self.inner, self.store, self.games_tid, self.store_games = inner, store, games_tid, store_games
        self.failed: set[int] = set()  # game numbers where a bot failed (forfeit or replaced move)

    async def play(self, setup: GameSetup, seats: Sequence[SeatBot], observe: Observer | None = None) -> GameReport:
        if not self.store_games:
            report = await self.inner.play(setup, seats, observe)
            if report.result.failures:
                self.failed.add(setup.game_number)
            return report
        task = await asyncio.to_thread(start_game, self.store, self.games_tid, setup.game_number, setup.seed,
                                       list(setup.seat_bots))
        try:
            report = await self.inner.play(setup, seats, observe)
        except asyncio.CancelledError:
            await asyncio.shield(asyncio.to_thread(forget_unsettled, self.store, self.games_tid,
                                                   setup.game_number - 1))
            raise
        except Exception as exc:
            await asyncio.to_thread(self.store.fail, task, first_line(exc), False)
            raise
        if report.result.failures:
            self.failed.add(setup.game_number)
        await asyncio.to_thread(self.store.finish, task, report.result, report.record)
        return report

    async def close(self) -> None:  # the ladder closes its own executor
        pass


def challenge_spec(row: ChallengeRow, config: TournamentConfig, seats: dict[int, SeatBot]) -> CompareSpec:
    """The comparison a challenge is: position 0 (the challenger) against position 1."""
    fixed = row.pairs_asked is not None
    bounds = SprtBounds(**{k: float(row.bounds[k]) for k in ("lower", "upper", "alpha", "beta")})
    return CompareSpec(candidate=seats[0], baseline=seats[1], unit=row.unit, players=config.players,
                       bounds=None if fixed else bounds, units=2 * row.pair_limit, max_units=2 * row.max_pairs,
                       seed=row.seed, concurrency=config.concurrency, time_control=config.time_control,
                       policy=config.policy, label=f"challenge-{row.id}", rules=config.rules)


def pair_to_stored(pair: PairResult) -> dict[str, Any]:
    return {"index": pair.index, "value": pair.value, "game_scores": list(pair.game_scores),
            "margins": list(pair.margins), "deals": pair.deals, "failures": list(pair.failures)}


def pair_from_stored(stored: dict[str, Any]) -> PairResult:
    scores, margins = stored["game_scores"], stored["margins"]
    return PairResult(int(stored["index"]), float(stored["value"]), (float(scores[0]), float(scores[1])),
                      (int(margins[0]), int(margins[1])), int(stored["deals"]), tuple(stored["failures"]), ())  # type: ignore[arg-type]


def verdict_of(comparison: Comparison, bounds: SprtBounds) -> tuple[str, float | None, tuple[float, float] | None]:
    """(verdict, margin, 95% interval) of a comparison that has ended (see the module docstring)."""
    report = comparison.report()
    stats = report["statistics"] or {}
    deals = comparison.spec.unit == "deals"
    margin = stats.get("mean") if deals else stats.get("elo")
    ci = stats.get("ci") if deals else stats.get("elo_ci")
    interval = (ci[0], ci[1]) if ci and ci[0] is not None and ci[1] is not None else None
    if comparison.spec.bounds is not None:
        verdict = {"H1": "better", "H0": "not_better"}.get(comparison.decision or "", "undecided")
    elif interval is not None and interval[0] > bounds.lower:
        verdict = "better"
    elif interval is not None and interval[1] < bounds.upper:
        verdict = "not_better"
    else:
        verdict = "undecided"
    return verdict, margin, interval


async def play_challenge(store: Store, row: ChallengeRow, config: TournamentConfig, executor: GameExecutor,
                         seats: dict[int, SeatBot], budget_pairs: int, store_games: bool = True) -> int:
    """Play up to ``budget_pairs`` more pairs of challenge ``row`` (resumed from its stored pairs)
    and decide it when it has ended; the pairs played. ``store_games`` False: ``executor`` stores
    them (the queue's). A queue without workers (QueueRunError) leaves the challenge open."""
    assert row.games_tournament_id is not None
    if config.players not in CHALLENGE_TABLES:
        await _end(store, row, None, None, None, f"a challenge needs a table of 2 players or 2 v 2, and this "
                                                  f"ladder plays {config.players}")
        return 0
    spec = challenge_spec(row, config, seats)
    storing = StoringExecutor(executor, store, row.games_tournament_id, store_games)
    comparison = Comparison(spec, storing)
    comparison.restore([pair_from_stored(p) for p in row.pairs])
    already = len(comparison.pairs)
    await asyncio.to_thread(forget_unsettled, store, row.games_tournament_id, 2 * already)
    error = None
    try:
        if comparison.decision is None and already < spec.pair_limit:
            await comparison.run(until_pairs=already + budget_pairs)
    except (asyncio.CancelledError, QueueRunError):
        raise
    except Exception as exc:  # the referee could not play a game: the challenge fails, saying why
        error = f"a game could not be played: {first_line(exc)}"
    finally:
        for pair in comparison.pairs[already:]:  # in pair order; what a stop left is played again
            games = {2 * pair.index + 1, 2 * pair.index + 2}
            await asyncio.shield(asyncio.to_thread(record_pair, store, row.id, pair_to_stored(pair),
                                                   len(games & storing.failed)))
        # games past the last counted pair (begun before the verdict, or past the round's budget)
        # are not the challenge's: it lists exactly the games it counted
        await asyncio.shield(asyncio.to_thread(forget_unsettled, store, row.games_tournament_id,
                                               2 * len(comparison.pairs)))
    played = len(comparison.pairs) - already
    if error is not None:
        await _end(store, row, None, None, None, error)
    elif comparison.decision is not None or len(comparison.pairs) >= spec.pair_limit:
        bounds = SprtBounds(**{k: float(row.bounds[k]) for k in ("lower", "upper", "alpha", "beta")})
        await _end(store, row, *verdict_of(comparison, bounds))
    return played


async def _end(store: Store, row: ChallengeRow, verdict: str | None, margin: float | None,
               interval: tuple[float, float] | None, error: str | None = None) -> None:
    """Store the challenge's end and, in the same transaction, the webhook event that tells its user
    (arena/notify: delivered later, once)."""
    payload = {"challenge": row.id, "tournament": row.tournament, "bot": row.bot, "opponent": row.opponent,
               "status": "failed" if error else "decided", "verdict": verdict, "margin": margin,
               "interval": list(interval) if interval else None, "error": error}
    if not await asyncio.to_thread(decide, store, row.id, verdict, margin, interval, error, payload, row.user_id):
        return
    log.info("challenge %d (%s v %s): %s", row.id, row.bot, row.opponent, verdict or f"failed: {error}",
             extra={"tournament": row.tournament_id})


async def play_open_challenges(store: Store, tid: int, config: TournamentConfig, executor: GameExecutor,
                               seats_of: Any, stopping: Any = lambda: False, queue: bool = False) -> int:
    """A slot after a ladder round: the ladder's open challenges, oldest first, up to
    ``[challenges] games_per_round`` games in whole pairs; the games played. ``seats_of(games_tid)``
    gives a challenge's bots as SeatBots (called on a thread: it may build packages). With
    ``queue`` (`arena serve --queue`) the games go to the job queue of the ladder's database, into
    the challenge's tournament, and ``executor`` is not used."""
    from ..store.challenges import open_challenges

    budget = max(1, config.challenges.games_per_round // 2)
    played = 0
    for row in await asyncio.to_thread(open_challenges, store, tid):
        if budget <= 0 or stopping():
            break
        assert row.games_tournament_id is not None
        try:
            seats = await asyncio.to_thread(seats_of, row.games_tournament_id)
        except Exception as exc:  # noqa: BLE001 - a bot that cannot be built here fails its challenge only
            await _end(store, row, None, None, None, f"its bots could not be made ready: {first_line(exc)}")
            continue
        try:
            if queue:
                pairs = await _play_queued(store, row, config, seats, budget)
            else:
                pairs = await play_challenge(store, row, config, executor, seats, budget)
        except QueueRunError as exc:  # no worker: the challenges wait for the next round
            log.warning("challenges wait for the next round: %s", exc, extra={"tournament": tid})
            break
        budget -= pairs
        played += 2 * pairs
    return played


async def _play_queued(store: Store, row: ChallengeRow, config: TournamentConfig, seats: dict[int, SeatBot],
                       budget_pairs: int) -> int:
    """``play_challenge`` through the queue: a QueueExecutor that plays into the challenge's tournament."""
    assert row.games_tournament_id is not None
    executor = QueueExecutor(config.database, row.games_tournament or "", [], {}, sandbox=config.sandbox,
                             what="arena serve --queue", runtimes=config.runtimes)
    await executor.open(tournament_id=row.games_tournament_id)
    try:
        return await play_challenge(store, row, config, executor, seats, budget_pairs, store_games=False)
    finally:
        await executor.close()


def queued_seats(store: Store, games_tid: int) -> dict[int, SeatBot]:
    """A challenge's bots for a queued comparison: names only matter here (the workers start them)."""
    return {b.position: SeatBot(b.name, BotEndpoint(spec=b.spec)) for b in store.bots(games_tid)}
