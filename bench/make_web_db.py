"""Fill a database with one finished tournament of N games, played in-process, for the web app's benchmark.

Usage: python bench/make_web_db.py --games 100000 --db URL [--bots 8] [--name NAME] [--seed S] [--workers W]

No bot process runs: the engine plays every game in worker processes, each seat an in-process
player (the sample greedy bot's decision, taking a random legal move instead with a probability
that differs per bot, so the standings spread out). Each game is stored as `arena run` stores it:
the round-robin schedule of a tournament file's settings (its first N games), the protocol result
and the referee's record (referee.match.record.referee_record, replayable; response times are
made up, seeded), inserted in large transactions; then the store's own rating pass rates them in
game order and writes the rating history. Everything is seeded: the same arguments give the same
database. Prints the rate (games/s) of each step.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import random
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Self

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path[:0] = [str(ROOT / "sample_bots" / name) for name in ("random", "greedy", "lookahead")]

from google.protobuf import json_format
from greedy_bot import greedy_index
from sqlalchemy import insert, update

from arena.config import TournamentConfig, parse_config
from arena.play.rate import apply_ratings
from arena.play.runner import config_settings, game_setup
from arena.schedule.pairings import round_robin
from arena.store.game_seats import seat_rows
from arena.store.models import Game, GameSeat, GameStatus, Tournament
from arena.store.store import BotSpec, StorageError, Store
from referee.match.outcome import normal_result
from referee.match.record import SeatRecord, referee_record
from referee.rules import apply, legal_moves, new_game

CHUNK = 500  # games per task handed to a worker
BATCH = 5000  # games per insert transaction
START = datetime(2026, 1, 1, tzinfo=UTC)  # the first game's start: a fixed date keeps the file reproducible
GAME_SECONDS = 3  # one game every 3 s of made-up time


def epsilons(bots: int) -> list[float]:
    """Each bot's chance of a random move instead of the greedy one: 0 (pure greedy) to 1 (random)."""
    return [round(i / (bots - 1), 2) for i in range(bots)] if bots > 1 else [0.0]


def tournament_config(name: str, bots: int, players: int, games: int, seed: int) -> TournamentConfig:
    """The tournament file `arena run` would have had (its programs are not checked: none starts);
    games_per_pairing is the smallest whole duplicate set count that reaches ``games``."""
    pairings = math.comb(bots, players)
    sets = max(1, math.ceil(games / (pairings * players)))
    lines = [f'name = "{name}"', f"players = {players}", f"games_per_pairing = {sets * players}",
             "duplicate = true", f"seed = {seed}", 'database = "sqlite:///unused.db"']
    for i, eps in enumerate(epsilons(bots)):
        lines += ["[[bots]]", f'name = "bot-{i + 1}-eps{int(eps * 100):03d}"',
                  f'command = "in-process greedy, random move with probability {eps:.2f}"']
    return parse_config("\n".join(lines) + "\n", Path(f"{name}.toml"), check_programs=False)


def play_chunk(task: tuple[TournamentConfig, list[tuple[int, int, tuple[int, ...]]]]) -> list[dict[str, Any]]:
    """Play a chunk of scheduled games (number, deck seed, seat bots); the rows to insert."""
    config, games = task
    eps = epsilons(len(config.bots))
    rows = []
    for number, deck_seed, seat_bots in games:
        setup = game_setup(config, number, seat_bots, deck_seed)
        rng = random.Random(f"{config.seed}-{number}")  # the players' choices and the made-up times
        state = new_game(setup.options, seed=deck_seed)
        timings: list[list[int]] = []
        while not state.is_over:
            moves = legal_moves(state)
            seat = state.to_move
            if rng.random() < eps[seat_bots[seat]]:
                move = moves[rng.randrange(len(moves))]
            else:
                move = moves[greedy_index(moves, state.loose, state.builds)]
            state = apply(state, move)
            timings.append([seat, rng.randint(150, 4000)])
        assert state.result is not None
        result = normal_result(setup.game_id, setup.options, state.result, [])
        seats = [SeatRecord(s, p, config.bots[p].name, config.bots[p].name, "0.1.0", config.bots[p].spec)
                 for s, p in enumerate(seat_bots)]
        record = referee_record(game_id=setup.game_id, match_id=setup.match_id, game_number=number, seats=seats,
                                time_control=setup.time_control, policy=setup.policy.value,
                                max_strikes=setup.max_strikes, state=state, timings_us=timings, failures=[],
                                result=result)
        started = START + timedelta(seconds=GAME_SECONDS * (number - 1))
        rows.append({"number": number, "result": json_format.MessageToDict(result, always_print_fields_with_no_presence=True),
                     "record": json.dumps(record), "started_at": started,
                     "finished_at": started + timedelta(seconds=GAME_SECONDS - 1)})
    return rows


def chunks(items: Sequence[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield list(items[i:i + size])


def fill(db: str, games: int, bots: int = 8, name: str = "bench", seed: int = 1, workers: int | None = None,
         say: Any = print) -> int:
    """Create tournament ``name`` in ``db`` with ``games`` finished, rated games; its id."""
    config = tournament_config(name, bots, 2, games, seed)
    schedule = round_robin(len(config.bots), config.players, config.games_per_pairing, config.duplicate,
                           config.seed)[:games]
    store = Store(db)
    try:
        if store.tournament_id(name) is not None:
            raise StorageError(f"tournament {name!r} is already in {store.url_for_people}: use another --name or --db")
        tid = store.create_tournament(name, config.settings_fingerprint(), config_settings(config),
                                      [BotSpec(b.name, b.spec, b.cwd, dict(b.env)) for b in config.bots])
        by_number = {g.number: g for g in schedule}
        tasks = [(config, [(g.number, g.deck_seed, tuple(g.seat_bots)) for g in part])
                 for part in chunks(schedule, CHUNK)]
        start = time.perf_counter()
        pending: list[dict[str, Any]] = []
        done = 0
        processes = workers or os.cpu_count() or 1
        with multiprocessing.get_context("spawn").Pool(processes) if processes > 1 else _Serial() as pool:
            for rows in pool.imap(play_chunk, tasks):
                pending.extend(rows)
                if len(pending) >= BATCH:
                    done += _insert(store, tid, pending, by_number)
                    pending = []
            done += _insert(store, tid, pending, by_number)
        with store.engine.begin() as conn:
            conn.execute(update(Tournament).where(Tournament.id == tid).values(rounds=1))
        played = time.perf_counter() - start
        say(f"played and stored {done} games in {played:.1f} s ({done / played:.0f} games/s, {processes} processes)")
        start = time.perf_counter()
        rated = apply_ratings(store, tid)
        took = time.perf_counter() - start
        say(f"rated {rated} games in {took:.1f} s ({rated / max(took, 1e-9):.0f} games/s)")
        return tid
    finally:
        store.close()


class _Serial:
    """A stand-in for a one-process pool: plays in this process (small runs, tests)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def imap(self, fn: Any, items: Sequence[Any]) -> Iterator[Any]:
        return map(fn, items)


def _insert(store: Store, tid: int, rows: list[dict[str, Any]], by_number: dict[int, Any]) -> int:
    """One transaction of finished games and their game_seats rows, as Store.finish writes them."""
    if not rows:
        return 0
    values, seats = [], []
    for row in rows:
        g = by_number[row["number"]]
        values.append({"tournament_id": tid, "number": g.number, "round": 1, "set_number": g.set_number,
                       "deck_seed": g.deck_seed, "seat_bots": list(g.seat_bots), "status": GameStatus.DONE.value,
                       "attempt": 1, "error": None, "job_id": None, "worker": None, **row})
        seats += seat_rows(tid, g.number, list(g.seat_bots), row["result"])
    with store.engine.begin() as conn:
        conn.execute(insert(Game), values)
        conn.execute(insert(GameSeat), seats)
    return len(values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100_000, help="finished games to store (default 100000)")
    parser.add_argument("--db", required=True, help="database URL (sqlite:///FILE or postgresql://...)")
    parser.add_argument("--bots", type=int, default=8, help="bots in the tournament (default 8)")
    parser.add_argument("--name", default="bench", help="the tournament's name (default bench)")
    parser.add_argument("--seed", type=int, default=1, help="the schedule's seed (default 1)")
    parser.add_argument("--workers", type=int, default=None, help="processes playing games (default: one per CPU)")
    args = parser.parse_args()
    if args.games < 1 or args.bots < 2 or (args.workers is not None and args.workers < 1):
        print("make_web_db: --games must be >= 1, --bots >= 2 and --workers >= 1", file=sys.stderr)
        return 2
    try:
        fill(args.db, args.games, args.bots, args.name, args.seed, args.workers)
    except StorageError as exc:
        print(f"make_web_db: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
