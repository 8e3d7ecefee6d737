"""Protocol benchmark: bare round trip to a trivial bot, referee time per move, games/s.

Usage: python bench/bench_protocol.py [--round-trips N] [--games N] [--concurrency K] [--runs R]
       [--ask-forced] [--game-turns GAMES] [--bot builtin|sdk-random|cpp] [--loop asyncio|uvloop]

1. Bare round trip: one stream to ``python -m referee.bots.builtin`` over a unix socket; the
   client sends a Turn with one legal move and waits for the answer, N times.
   ``--game-turns G`` also sends every Turn of G seeded random games, as the referee serializes
   them, with no referee work between: the round trip of real Turns (bigger, several legal moves).
2. Referee per move: a match of random Python bots (the same built-in bot) through run_match:
   wall time per play, and the referee's share = that minus the median bare round trip.
3. Games/s: the same bots, ``--concurrency`` matches at once in one referee process.

``--bot cpp`` builds the C++ starter bot (sample_bots/cpp, about 30 s) in a temporary folder and
plays it: a bot whose own cost is next to nothing, so the figures are the referee's and gRPC's.
``--loop`` chooses the referee's event loop (the bench's own process; default: the referee's own
choice, referee/loop.py), as ``CASINO_EVENT_LOOP`` does.

The referee plays a seat's only legal move itself (``auto_forced``, about a quarter of all
plays): per play counts those too, per turn only the plays a bot was asked for.
``--ask-forced`` asks the bots for every play, as before forced plays existed: then every play
is a round trip and per play compares with the bare round trip like for like.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import referee  # noqa: E402,F401 - first, as in the referee's own commands: it sets gRPC's options
import grpc  # noqa: E402

from casino.v1 import bot_pb2, bot_pb2_grpc, game_pb2  # noqa: E402
from referee.bots.endpoint import BotEndpoint
from referee.bots.health import wait_healthy  # noqa: E402
from referee.bots.launcher import BotProcess
from referee.clock import TimeControl  # noqa: E402
try:  # an older tree, for alternated runs against it, has no referee/loop.py: asyncio's loop there
    from referee.loop import LOOP_ENV, LOOPS, chosen_loop, run_main  # noqa: E402
except ImportError:
    LOOP_ENV, LOOPS, run_main = "CASINO_EVENT_LOOP", ("asyncio",), asyncio.run

    def chosen_loop() -> str:
        return "asyncio"
from referee.match.run import run_match  # noqa: E402
from referee.match.spec import MatchSpec
from referee.rules import RuleOptions  # noqa: E402
from referee.wire.connection import CHANNEL_OPTIONS
from referee.wire.convert import serialize_request

BOTS = {
    "builtin": f"{sys.executable} -m referee.bots.builtin",
    "sdk-random": f"{sys.executable} {Path(__file__).resolve().parents[1] / 'sample_bots' / 'python' / 'random_bot.py'}",
}
BOT = BOTS["builtin"]
def build_cpp_bot(folder: Path) -> str:
    """The C++ starter bot built in ``folder`` (a copy of sample_bots/cpp); its command."""
    import shutil
    import subprocess

    shutil.copytree(Path(__file__).resolve().parents[1] / "sample_bots" / "cpp", folder / "cpp", symlinks=False)
    subprocess.run(["make", "-s", "-j2"], cwd=folder / "cpp", check=True)
    return str(folder / "cpp" / "bot")


async def stream_round_trips(channel: grpc.aio.Channel, n: int) -> list[float]:
    """Seconds of each of ``n`` Turn/answer round trips on one open Play stream to a ready bot
    (one legal move, so the bot's own work is nil)."""
    call = bot_pb2_grpc.BotServiceStub(channel).Play()
    await call.write(bot_pb2.PlayRequest(handshake=bot_pb2.Handshake(protocol_version="1")))
    await call.read()
    turn = bot_pb2.Turn(game_id="g", legal_moves=[game_pb2.Move(card="9C", kind=game_pb2.MOVE_KIND_TRAIL,
                                                                notation="9C trail")])
    times = []
    for i in range(n):
        turn.turn_id = i
        start = time.perf_counter()
        await call.write(bot_pb2.PlayRequest(turn=turn))
        await call.read()
        times.append(time.perf_counter() - start)
    await call.done_writing()
    return times


def game_turns(games: int, seed: int = 1) -> list[bytes]:
    """Every Turn of ``games`` seeded random 2-player games, serialized as the referee writes them
    (every play asked): what a bot reads in a real match, with none of the referee's work."""
    import random

    from referee.rules import apply, legal_moves, new_game
    from referee.wire.convert import public_play_field, turn_request_bytes

    rng, turns = random.Random(seed), []
    for g in range(games):
        state, plays = new_game(RuleOptions(players=2), seed=seed * 1000 + g), b""
        while not state.is_over:
            moves = legal_moves(state)
            turns.append(turn_request_bytes(f"g{g}", len(turns) + 1, state, state.to_move, moves, 2000, 0, plays))
            move, deal = rng.choice(moves), state.deal
            seat, state = state.to_move, apply(state, move)
            plays = b"" if state.deal != deal else plays + public_play_field(seat, str(move), False)
    return turns


async def stream_game_turns(channel: grpc.aio.Channel, turns: list[bytes]) -> list[float]:
    """Seconds of each round trip of ``turns`` (ready bytes) on one open Play stream."""
    play = channel.stream_stream(f"/{bot_pb2.DESCRIPTOR.services_by_name['BotService'].full_name}/Play",
                                 request_serializer=serialize_request, response_deserializer=bot_pb2.PlayResponse.FromString)
    call = play()
    await call.write(bot_pb2.PlayRequest(handshake=bot_pb2.Handshake(protocol_version="1")))
    await call.read()
    times = []
    for turn in turns:
        start = time.perf_counter()
        await call.write(turn)
        await call.read()
        times.append(time.perf_counter() - start)
    await call.done_writing()
    return times


async def bare_round_trips(n: int, turns: list[bytes] | None = None) -> list[float]:
    """``n`` one-move round trips to a started bot, or (``turns``) one round trip per Turn given."""
    with tempfile.TemporaryDirectory() as tmp:
        address = f"unix:{tmp}/bot.sock"
        proc = BotProcess(BotEndpoint.parse(BOT), address, Path(tmp) / "bot.log")
        await proc.start()
        try:
            async with grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS) as channel:
                if await wait_healthy(channel, asyncio.get_running_loop().time() + 20, proc):
                    raise SystemExit("bot did not start")
                return await (stream_game_turns(channel, turns) if turns else stream_round_trips(channel, n))
        finally:
            await proc.stop()


async def matches(games: int, concurrency: int, ask_forced: bool = False) -> tuple[float, int, int, int, float]:
    """Run ``concurrency`` matches of ``games`` games each at once; (seconds, games, plays, turns
    asked, referee CPU seconds), all counted from the moment the last match has its bots ready."""
    specs = [
        MatchSpec(bots=[BotEndpoint.parse(BOT), BotEndpoint.parse(BOT)],
                  options=RuleOptions(players=2), games=games, seed=100 * k + 1, time_control=TimeControl(move_time_ms=2000),
                  auto_forced=not ask_forced)
        for k in range(concurrency)
    ]
    # the clock starts when the last match has its bots ready: games/s measures play, not start-up
    ready: list[float] = []
    cpu_at_ready: list[float] = []

    def on_event(event: object) -> None:
        if event.WhichOneof("event") == "match_started":  # type: ignore[attr-defined]
            ready.append(time.perf_counter())
            cpu_at_ready.append(time.process_time())

    reports = await asyncio.gather(*(run_match(s, on_event) for s in specs))
    elapsed = time.perf_counter() - max(ready)
    cpu = time.process_time() - max(cpu_at_ready)
    plays = sum(len(g.record["timings_us"]) for r in reports for g in r.games)
    turns = plays - sum(len(g.record.get("forced", ())) for r in reports for g in r.games)
    return elapsed, sum(len(r.games) for r in reports), plays, turns, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--round-trips", type=int, default=3000)
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bot", choices=sorted([*BOTS, "cpp"]), default="builtin",
                        help="which random bot plays (default builtin, a Python bot; cpp: the C++ starter bot)")
    parser.add_argument("--cpp-bot", metavar="PATH", help="with --bot cpp: an already built ./bot to play (no build)")
    parser.add_argument("--loop", choices=LOOPS, help="the referee's event loop (default: as referee/loop.py chooses)")
    parser.add_argument("--game-turns", type=int, default=0, metavar="GAMES",
                        help="also time the round trips of every Turn of GAMES random games, sent as ready bytes")
    parser.add_argument("--ask-forced", action="store_true", help="ask the bots for forced plays too (every play a round trip)")
    args = parser.parse_args()
    global BOT
    if args.loop:
        os.environ[LOOP_ENV] = args.loop
    build = tempfile.TemporaryDirectory()
    BOT = (args.cpp_bot or build_cpp_bot(Path(build.name))) if args.bot == "cpp" else BOTS[args.bot]
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; bots: {args.bot}; loop: {chosen_loop()}; "
          f"GRPC_EXPERIMENTS={os.environ.get('GRPC_EXPERIMENTS', '')!r}")
    rtts = []
    for _ in range(args.runs):
        t = sorted(run_main(bare_round_trips(args.round_trips)))[args.round_trips // 10:]  # drop warm-up tail
        rtts.append(statistics.median(t))
    bare_ms = statistics.median(rtts) * 1000
    print(f"bare round trip: median {bare_ms:.3f} ms (runs: {', '.join(f'{r * 1000:.3f}' for r in rtts)})")
    if args.game_turns:
        turns, real = game_turns(args.game_turns), []
        for _ in range(args.runs):
            t = sorted(run_main(bare_round_trips(0, turns)))[len(turns) // 10:]
            real.append(statistics.median(t))
        real_ms = statistics.median(real) * 1000
        print(f"bare round trip of {len(turns)} real Turns ({args.game_turns} games): median {real_ms:.3f} ms "
              f"({real_ms / bare_ms:.2f}x the one-move turn; runs: {', '.join(f'{r * 1000:.3f}' for r in real)})")
    per_move, per_turn, rates, cpu_ms, cpu_turn_ms = [], [], [], [], []
    for _ in range(args.runs):
        elapsed, games, plays, turns, cpu = run_main(matches(args.games, args.concurrency, args.ask_forced))
        per_move.append(elapsed / plays * 1000)
        per_turn.append(elapsed / turns * 1000)
        rates.append(games / elapsed)
        cpu_ms.append(cpu / plays * 1000)
        cpu_turn_ms.append(cpu / turns * 1000)
    move_ms, turn_ms = statistics.median(per_move), statistics.median(per_turn)
    over = (f", {move_ms - bare_ms:.3f} ms over the bare round trip ({move_ms / bare_ms:.2f}x); "
            f"{turn_ms:.3f} ms per turn asked ({turn_ms / bare_ms:.2f}x)") if args.concurrency == 1 else ""
    print(f"referee, {args.concurrency} match(es) of {args.games} games at once"
          f"{', every play asked' if args.ask_forced else ''}: {move_ms:.3f} ms per play (wall){over}; "
          f"referee CPU {statistics.median(cpu_ms):.3f} ms per play, {statistics.median(cpu_turn_ms):.3f} ms per turn "
          f"asked; {statistics.median(rates):.1f} games/s "
          f"(runs: {', '.join(f'{r:.1f}' for r in rates)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
