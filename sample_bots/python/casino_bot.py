"""A small SDK for Royal Casino Arena bots in Python.

Write a bot by subclassing :class:`CasinoBot` and implementing one method::

    from casino_bot import CasinoBot, run

    class FirstMoveBot(CasinoBot):
        name = "first-move"

        def choose(self, turn):
            return 0            # an index into turn.legal_moves, a notation string or a game_pb2.Move

    if __name__ == "__main__":
        run(FirstMoveBot())

``run`` serves the bot over gRPC (casino.v1.BotService) on the address in ``CASINO_BOT_ADDRESS``
(``unix:/path/bot.sock`` or ``host:port``), with the standard health service (SERVING) and server
reflection, until SIGTERM or SIGINT. The referee opens one stream per match; the SDK answers the
handshake, calls ``choose`` for every turn and the optional hooks for the other events, and sends
nothing else. ``legal_moves(turn)`` and ``state_from_turn(turn, rng)`` give the engine's view of a
turn for bots that want to search (see lookahead_bot.py).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import random
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

try:
    import referee.rules  # noqa: F401
except ImportError:  # running from a checkout without `pip install -e .`: use the repository's packages
    sys.path.append(str(Path(__file__).resolve().parents[2]))

os.environ.setdefault("GRPC_VERBOSITY", "NONE")  # gRPC's own log lines; set it to "debug" to see them
import grpc  # noqa: E402
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio
from grpc_reflection.v1alpha import reflection

from casino.v1 import bot_pb2, bot_pb2_grpc, game_pb2
from referee.wire.convert import PROTOCOL_VERSION, observation_to_pb, options_from_pb
from referee.rules import (
    Build, Condition, GameState, Move, MoveKind, RuleOptions, apply, observation, parse_card, parse_move,
)
from referee.rules.cards import ACE, ACE_HIGH, ALL_CARDS, RANK
from referee.rules.state import DeckSource, deal_new

__all__ = ["CasinoBot", "run", "legal_moves", "table_from_turn", "state_from_turn", "options_from_turn"]

SERVICE_NAME = "casino.v1.BotService"
log = logging.getLogger("casino_bot")
Choice = int | str | game_pb2.Move | Move


class CasinoBot:
    """Base class of a bot. Override ``choose``; the ``on_*`` hooks are optional.

    The SDK sets ``self.options`` (engine RuleOptions) and ``self.time_control`` (the match's
    ``casino.v1.TimeControl``) at each handshake, and before each ``choose`` ``self.turn_started``
    (``time.monotonic()`` when the turn arrived) and ``self.turn_started_cpu``
    (``time.process_time()`` then: this process's CPU time, all threads). The move limit
    ``turn.move_time_ms`` counts from the referee's sending, so answer well within it; under a
    CPU-time limit (``time_control.cpu_time_ms`` > 0) the referee counts the CPU time of the
    bot's processes instead, with ``move_time_ms`` as a wall-clock backstop.
    """

    name = "python-bot"
    version = "0.1.0"
    # choose() runs in a worker thread so a slow bot never stalls the connection; a bot whose
    # choose() takes microseconds sets this False and saves the hand-off on every turn
    threaded = True

    def __init__(self) -> None:
        self.options: RuleOptions | None = None
        self.time_control: game_pb2.TimeControl | None = None
        self.turn_started = time.monotonic()
        self.turn_started_cpu = time.process_time()

    def choose(self, turn: bot_pb2.Turn) -> Choice:
        """The move for ``turn``: an index into ``turn.legal_moves``, a notation string, a
        ``game_pb2.Move`` or an engine ``Move``. Runs in a worker thread unless ``threaded`` is False."""
        raise NotImplementedError

    def on_game_start(self, start: bot_pb2.GameStart) -> None:
        """A game begins: ``start.seat`` / ``start.side`` are this bot's."""

    def on_play(self, play_made: bot_pb2.PlayMade) -> None:
        """Someone (this bot included) made a play; ``play_made.move`` is its notation. The SDK
        asks the referee for these events only when a subclass overrides this method."""

    def on_game_end(self, game_end: bot_pb2.GameEnd) -> None:
        """A game is over; ``game_end.result`` has the winner, scores and any failures."""


# --- helpers for bot authors ------------------------------------------------------------------


def legal_moves(turn: bot_pb2.Turn) -> list[Move]:
    """The turn's legal moves as engine ``Move`` tuples, in the turn's order (so an index into
    this list is an index into ``turn.legal_moves``)."""
    return [_parse_move(m.notation) for m in turn.legal_moves]


_parse_move = functools.lru_cache(maxsize=1 << 16)(parse_move)  # the same plays recur all game long


def table_from_turn(turn: bot_pb2.Turn) -> tuple[tuple[int, ...], tuple[Build, ...]]:
    """The loose cards (engine card numbers) and the builds (engine ``Build`` tuples) on the table."""
    obs = turn.observation
    loose = tuple(sorted(parse_card(c) for c in obs.loose))
    builds = tuple(
        Build(b.id, b.value, tuple(sorted(parse_card(c) for c in b.cards)), b.owner, b.multiple) for b in obs.builds
    )
    return loose, builds


def options_from_turn(turn: bot_pb2.Turn) -> RuleOptions:
    """The rule options as far as a turn shows them (the handshake has the real ones): players from
    the hand sizes, partnerships from the number of sides, on_twenty from a side restricted to it.
    Nothing else matters to the play of one deal."""
    obs = turn.observation
    players = len(obs.hand_sizes)
    on_twenty = Condition.MOST_SPADES if "most_spades" in obs.restricted else Condition.LITTLE_CASINO
    return RuleOptions(players=players, partnerships=players == 4 and len(obs.pile_sizes) == 2, on_twenty=on_twenty)


def state_from_turn(turn: bot_pb2.Turn, rng: random.Random, options: RuleOptions | None = None) -> GameState:
    """A full engine ``GameState`` of the current deal, with the hidden cards (others' hands, the
    stock) drawn at random consistently with everything public: a determinisation for search.

    The deal is rebuilt from a deck whose dealing order reproduces the public history (the four
    table cards, then each round's hands: the cards each seat played in that round and, for the
    current round, its hand now), its public plays are replayed with ``apply`` and the result is
    checked against the observation. Hidden hands respect what the history proves: a seat that
    still owned a build after one of this round's plays holds a card of its value unless it played
    one later. The returned state's ``sheets`` is empty: after the deal ends (``play`` sets
    ``deal_over``), ``state.sheets[-1]`` is this deal's score sheet. Raises ValueError when the
    turn is inconsistent.
    """
    options = options or options_from_turn(turn)
    obs = turn.observation
    n = options.players
    seat = obs.seat
    leader = (obs.dealer + 1) % n
    table = [parse_card(c) for c in obs.table_dealt]
    hand = [parse_card(c) for c in obs.hand]
    plays = [(p.seat, parse_move(p.move)) for p in obs.plays]
    per_round = 4 * n
    start = (obs.round - 1) * per_round  # index of the current round's first play
    played: list[list[list[int]]] = [[[] for _ in range(n)] for _ in range(obs.round)]
    for i, (s, m) in enumerate(plays):
        played[i // per_round][s].append(m.card)
    seen = set(table) | set(hand) | {m.card for _, m in plays}
    unseen = [c for c in ALL_CARDS if c not in seen]
    others = [s for s in range(n) if s != seat]
    if len(table) != 4 or len(unseen) != sum(obs.hand_sizes[s] for s in others) + obs.stock_size:
        raise ValueError("the turn's cards do not add up to a deck")
    hands = _deal_hidden(unseen, {s: obs.hand_sizes[s] for s in others}, _required_ranks(plays, start, n), rng)
    hands[seat] = hand
    deck = list(table)
    for r in range(obs.round):
        for i in range(n):
            s = (leader + i) % n
            deck += played[r][s] + (hands[s] if r == obs.round - 1 else [])
    deck += unseen  # the stock: what is left
    state = deal_new(
        options=options, decks=DeckSource(None, [deck] * (obs.deal + 1)), deal=obs.deal, scores=tuple(obs.scores),
        continuation=obs.continuation, sheets=(), log=None,
    )
    restricted = tuple(Condition(c) if c else None for c in obs.restricted)
    if state.restricted != restricted:  # the options' on_twenty, if they were guessed
        state = replace(state, restricted=restricted, _legal=None)
    for _, m in plays:
        state = apply(state, m)
    if observation_to_pb(observation(state, seat)) != obs:
        raise ValueError("the replayed deal does not match the observation")
    return state


def _deal_hidden(
    unseen: list[int], sizes: dict[int, int], need: list[set[int]], rng: random.Random
) -> dict[int, list[int]]:
    """Draw the hidden hands from ``unseen`` (which keeps what is left, shuffled): uniformly among
    the deals that give each seat the ranks it needs, by rejection; if that keeps failing, the
    needed cards are placed first."""
    for attempt in range(201):
        rng.shuffle(unseen)
        hands, pos = {}, 0
        if attempt == 200:  # place a card of each needed rank, then deal the rest
            for s, size in sizes.items():
                hands[s] = []
                for rank in need[s]:
                    card = next((c for c in unseen if RANK[c] == rank), None)
                    if card is None:
                        raise ValueError("no deal of the unseen cards fits the history")
                    unseen.remove(card)
                    hands[s].append(card)
                if len(hands[s]) > size:
                    raise ValueError("no deal of the unseen cards fits the history")
        for s, size in sizes.items():
            got = hands.setdefault(s, [])
            take = size - len(got)
            got += unseen[pos : pos + take]
            pos += take
        if all(need[s] <= {RANK[c] for c in hands[s]} for s in sizes):
            del unseen[:pos]
            return hands
    raise ValueError("no deal of the unseen cards fits the history")


def _required_ranks(plays: list[tuple[int, Move]], start: int, n: int) -> list[set[int]]:
    """Per seat, the ranks its hidden hand must hold: after each of this round's plays, every
    build a seat owns needs a card of its value in hand (rule 10), which is still there unless the
    seat played a card of that rank later in the round. Builds never outlive a round."""
    need: list[set[int]] = [set() for _ in range(n)]
    owner: dict[int, tuple[int, int]] = {}  # build id -> (owner seat, value)
    next_id = 1
    for i, (s, m) in enumerate(plays):
        if m.kind == MoveKind.BUILD:
            owner[next_id] = (s, m.value)
            next_id += 1
        elif m.kind in (MoveKind.ADD, MoveKind.RAISE):
            owner[m.builds[0]] = (s, m.value)
        elif m.kind == MoveKind.CAPTURE:
            for b in m.builds:
                owner.pop(b, None)
        if i < start:
            continue
        for o, value in owner.values():
            rank = ACE if value == ACE_HIGH else value
            later = {RANK[m2.card] for s2, m2 in plays[i + 1 :] if s2 == o}
            if rank not in later:
                need[o].add(rank)
    return need


# --- the gRPC service ---------------------------------------------------------------------------


def _to_choice(turn: bot_pb2.Turn, value: Choice) -> bot_pb2.MoveChoice:
    if isinstance(value, Move):
        return bot_pb2.MoveChoice(turn_id=turn.turn_id, notation=str(value))
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < len(turn.legal_moves):
            raise ValueError(f"index {value} out of range (0..{len(turn.legal_moves) - 1})")
        return bot_pb2.MoveChoice(turn_id=turn.turn_id, index=value)
    if isinstance(value, str):
        return bot_pb2.MoveChoice(turn_id=turn.turn_id, notation=value)
    if isinstance(value, game_pb2.Move):
        return bot_pb2.MoveChoice(turn_id=turn.turn_id, move=value)
    raise TypeError(f"choose returned {type(value).__name__}; expected int, str or Move")


class _Servicer(bot_pb2_grpc.BotServiceServicer):
    def __init__(self, bot: CasinoBot | type[CasinoBot]) -> None:
        self.bot = bot

    async def Play(self, requests: Any, context: grpc.aio.ServicerContext) -> Any:
        bot = self.bot() if isinstance(self.bot, type) else self.bot
        match, seat, side = "?", 0, 0
        async for req in requests:
            event = req.WhichOneof("event")
            if event == "handshake":
                hs = req.handshake
                match = hs.match_id or "?"
                try:
                    bot.options = options_from_pb(hs.options)
                except Exception:
                    bot.options = None
                bot.time_control = hs.time_control
                log.info("match %s: %d game(s), %d players, %d ms/move, protocol %s", match, hs.games,
                         hs.options.players, hs.time_control.move_time_ms, hs.protocol_version)
                yield bot_pb2.PlayResponse(hello=bot_pb2.Hello(
                    name=bot.name, version=bot.version, protocol_version=PROTOCOL_VERSION,
                    play_events=type(bot).on_play is not CasinoBot.on_play))  # events only if they are used
            elif event == "turn":
                bot.turn_started = time.monotonic()
                bot.turn_started_cpu = time.process_time()
                if bot.threaded:
                    yield bot_pb2.PlayResponse(move=await asyncio.to_thread(self._decide, bot, req.turn))
                else:
                    yield bot_pb2.PlayResponse(move=self._decide(bot, req.turn))
            elif event == "game_start":
                seat, side = req.game_start.seat, req.game_start.side
                await self._hook(bot.on_game_start, req.game_start)
            elif event == "play_made":
                await self._hook(bot.on_play, req.play_made)
            elif event == "game_end":
                r = req.game_end.result
                outcome = "draw" if r.winner_side < 0 else "won" if r.winner_side == side else "lost"
                log.info("match %s game %s, seat %d: %s, scores %s (%s, %d deals%s)", match, r.game_id, seat, outcome,
                         "-".join(map(str, r.scores)), r.reason, r.deals,
                         f", {len(r.failures)} failure(s)" if r.failures else "")
                await self._hook(bot.on_game_end, req.game_end)
        log.info("match %s: stream closed", match)

    @staticmethod
    def _decide(bot: CasinoBot, turn: bot_pb2.Turn) -> bot_pb2.MoveChoice:
        try:
            return _to_choice(turn, bot.choose(turn))
        except Exception as exc:  # a bug in the bot: play the first legal move rather than forfeit
            log.exception("choose failed (%s); answering index 0", exc)
            return bot_pb2.MoveChoice(turn_id=turn.turn_id, index=0)

    @staticmethod
    async def _hook(fn: Any, arg: Any) -> None:
        try:
            await asyncio.to_thread(fn, arg)
        except Exception:
            log.exception("%s failed", fn.__name__)


def _check_address(address: str) -> str | None:
    """None when the address looks usable, else why not."""
    if address.startswith("unix:"):
        return None if address[5:].lstrip("/") else "a unix: address needs a socket path"
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        return "expected unix:/path/to/socket or host:port"
    return None


async def _serve(bot: CasinoBot | type[CasinoBot], address: str) -> None:
    server = grpc.aio.server()
    bot_pb2_grpc.add_BotServiceServicer_to_server(_Servicer(bot), server)
    health = health_aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    for service in ("", SERVICE_NAME):
        await health.set(service, health_pb2.HealthCheckResponse.SERVING)
    reflection.enable_server_reflection((SERVICE_NAME, "grpc.health.v1.Health", reflection.SERVICE_NAME), server)
    try:
        if server.add_insecure_port(address) == 0:
            raise RuntimeError("port 0")
    except Exception as exc:
        print(f"error: cannot listen on CASINO_BOT_ADDRESS={address!r}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    await server.start()
    log.info("%s %s serving on %s", bot.name, bot.version, address)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting down")
    await health.enter_graceful_shutdown()
    await server.stop(grace=2)


def run(bot: CasinoBot | type[CasinoBot], address: str | None = None) -> None:
    """Serve ``bot`` on ``address`` (default: $CASINO_BOT_ADDRESS) until SIGTERM/SIGINT.

    An instance serves every stream; in self-play one process gets a stream per seat at the same
    time, so a bot that keeps state across events is better passed as its class: each stream
    (match and seat) then gets a fresh instance."""
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {bot.name}: %(message)s", stream=sys.stderr)
    address = address or os.environ.get("CASINO_BOT_ADDRESS", "")
    if not address:
        print("error: CASINO_BOT_ADDRESS is not set (e.g. unix:/tmp/bot.sock or 127.0.0.1:50051)", file=sys.stderr)
        raise SystemExit(2)
    problem = _check_address(address)
    if problem:
        print(f"error: bad CASINO_BOT_ADDRESS={address!r}: {problem}", file=sys.stderr)
        raise SystemExit(2)
    asyncio.run(_serve(bot, address))
