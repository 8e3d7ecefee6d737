"""The match runner: plays games between bot endpoints over gRPC and reports what happened.

A match is one or more games between the same bots. Each bot gets one process (for command
endpoints) and one protocol stream for the whole match; a crashed or disconnected bot is
restarted (or reconnected) before the next game. Every move is checked against the rules engine
and timed on the monotonic clock; every failure is recorded with what the bot sent and why it
was rejected, and becomes a forfeit or a random substitute move by the match's policy.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import itertools
import json
import logging
import random
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from casino.v1 import bot_pb2, game_pb2, referee_pb2

from .clock import MONOTONIC, Clock, GameClock, TimeControl
from .connection import BotConnection, StreamFailure, preview
from .convert import PROTOCOL_VERSION, move_from_pb, options_to_pb, public_play_field, turn_request_bytes
from .endpoints import CHANNEL_OPTIONS, LOCAL_LAUNCHER, BotEndpoint, BotProcess, Launcher, wait_healthy
from .game_record import SeatRecord, referee_record
from .names import clean_name, clean_version
from .outcome import forfeit_result, normal_result
from .rules import GameState, Move, RuleOptions, apply, legal_moves, new_game, parse_move
from .rules.errors import RulesError
from .rules.legal import explain_illegal
from .rules.observation import observation

log = logging.getLogger("referee.match")
F = game_pb2.FailureKind
SETUP_FORMAT = "royal-casino-game-setup"
SETUP_VERSION = 1
STARTUP_ATTEMPTS = 3  # consecutive failed starts after which a bot is given up for the match
MAX_GAMES = 1_000_000  # games in one match (the Handshake says how many, as a uint32)
MAX_SEED = 2**64 - 1  # game seeds travel as uint64 (GameStarted.seed)


class FailurePolicy(enum.Enum):
    """What a failure costs (docs/protocol.md, "Failures")."""

    FORFEIT = "forfeit"
    RANDOM_MOVE = "random_move"


@dataclass(frozen=True)
class GameSettings:
    """How every game of a match, a tournament or a comparison is played: the rules, the clock and
    what a failure costs."""

    options: RuleOptions = field(default_factory=RuleOptions)
    time_control: TimeControl = field(default_factory=TimeControl)
    policy: FailurePolicy = FailurePolicy.FORFEIT
    max_strikes: int = 3


@dataclass(frozen=True)
class MatchSpec:
    """Everything that defines a match; ``bots`` are in seat order for the first game."""

    bots: Sequence[BotEndpoint]
    options: RuleOptions = field(default_factory=RuleOptions)
    games: int = 1
    seed: int = 1
    decks: Sequence[Sequence[int]] = ()
    time_control: TimeControl = field(default_factory=TimeControl)
    policy: FailurePolicy = FailurePolicy.FORFEIT
    max_strikes: int = 3
    rotate_seats: bool = True
    records_dir: Path | None = None
    logs_dir: Path | None = None
    match_id: str = ""

    def __post_init__(self) -> None:
        if len(self.bots) != self.options.players:
            raise ValueError(f"{self.options.players} players need {self.options.players} bots, got {len(self.bots)}")
        if not 1 <= self.games <= MAX_GAMES:
            raise ValueError(f"games must be 1 to {MAX_GAMES}, not {self.games}")
        if not 0 <= self.seed <= MAX_SEED - (self.games - 1):  # every game's seed, seed + k - 1, must fit
            raise ValueError(
                f"seed must be 0 to {MAX_SEED - (self.games - 1)} for {self.games} game(s), not {self.seed}")
        if self.max_strikes < 0:
            raise ValueError(f"max_strikes must be 0 or more, not {self.max_strikes}")

    def seat_bots(self, game_number: int) -> list[int]:
        """Bot index at each seat of game ``game_number`` (1-based): rotated one seat per game."""
        n = self.options.players
        shift = (game_number - 1) % n if self.rotate_seats else 0
        return [(seat + shift) % n for seat in range(n)]

    def game_seed(self, game_number: int) -> int:
        return self.seed + game_number - 1

    @property
    def settings(self) -> GameSettings:
        return GameSettings(self.options, self.time_control, self.policy, self.max_strikes)

    def game(self, match_id: str, game_number: int) -> GameSetup:
        """The setup of game ``game_number`` (1-based) of this match."""
        return GameSetup.build(self.settings, match_id=match_id, game_number=game_number,
                               seat_bots=self.seat_bots(game_number), seed=self.game_seed(game_number),
                               decks=self.decks)


@dataclass(frozen=True)
class GameSetup:
    """One game to play: its identity, deck seed and the rules, clocks and policy it is played by."""

    game_id: str
    game_number: int
    seat_bots: Sequence[int]  # which bot (the caller's numbering) sits at each seat, for records
    seed: int
    options: RuleOptions = field(default_factory=RuleOptions)
    decks: Sequence[Sequence[int]] = ()
    time_control: TimeControl = field(default_factory=TimeControl)
    policy: FailurePolicy = FailurePolicy.FORFEIT
    max_strikes: int = 3
    match_id: str = ""

    @classmethod
    def build(cls, settings: GameSettings, *, match_id: str, game_number: int, seat_bots: Sequence[int], seed: int,
              decks: Sequence[Sequence[int]] = (), game_id: str | None = None) -> "GameSetup":
        """The one place a GameSetup is made (a match's, a tournament's, a comparison's game);
        ``game_id`` defaults to ``<match_id>-g<game_number>``."""
        return cls(
            game_id=game_id or f"{match_id}-g{game_number}", game_number=game_number, seat_bots=tuple(seat_bots),
            seed=seed, options=settings.options, decks=tuple(tuple(d) for d in decks),
            time_control=settings.time_control, policy=settings.policy, max_strikes=settings.max_strikes,
            match_id=match_id,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (for a job queue to carry a game); ``from_dict`` reads it back."""
        return {
            "format": SETUP_FORMAT, "version": SETUP_VERSION, "game_id": self.game_id,
            "game_number": self.game_number, "seat_bots": list(self.seat_bots), "seed": self.seed,
            "options": self.options.to_dict(), "decks": [list(d) for d in self.decks],
            "time_control": dataclasses.asdict(self.time_control), "policy": self.policy.value,
            "max_strikes": self.max_strikes, "match_id": self.match_id,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GameSetup":
        """Inverse of ``to_dict``; ValueError (RulesError for bad rule options) on anything else."""
        if not isinstance(data, dict) or data.get("format") != SETUP_FORMAT:
            raise ValueError(f"not a {SETUP_FORMAT} object")
        if data.get("version") != SETUP_VERSION:
            raise ValueError(f"{SETUP_FORMAT} version {data.get('version')!r}; this referee reads {SETUP_VERSION}")
        try:
            settings = GameSettings(RuleOptions.from_dict(data["options"]), TimeControl(**data["time_control"]),
                                    FailurePolicy(data["policy"]), int(data["max_strikes"]))
            return cls.build(settings, match_id=str(data["match_id"]), game_number=int(data["game_number"]),
                             seat_bots=[int(b) for b in data["seat_bots"]], seed=int(data["seed"]),
                             decks=[[int(c) for c in d] for d in data["decks"]], game_id=str(data["game_id"]))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed {SETUP_FORMAT}: {exc!r}") from None

    def handshake(self, games: int = 0) -> bot_pb2.Handshake:
        """The handshake a bot stream for such games opens with (``games`` 0: not known ahead)."""
        return bot_pb2.Handshake(
            protocol_version=PROTOCOL_VERSION,
            match_id=self.match_id,
            options=options_to_pb(self.options),
            time_control=self.time_control.to_pb(),
            games=games,
        )


@dataclass
class GameReport:
    """One finished game: its protocol result and its JSON record."""

    game_id: str
    game_number: int
    seat_bots: list[int]
    result: game_pb2.GameResult
    record: dict[str, Any]


@dataclass
class MatchReport:
    match_id: str
    bot_names: list[str]
    games: list[GameReport]
    logs_dir: Path

    def tally(self) -> referee_pb2.MatchResult:
        """Wins, draws, losses and forfeits per bot (request order)."""
        n = len(self.bot_names)
        wins, draws, losses, forfeits = [0] * n, [0] * n, [0] * n, [0] * n
        for game in self.games:
            for seat, bot in enumerate(game.seat_bots):
                rank = game.result.ranks[seat]
                if any(f.seat == seat and f.forfeit for f in game.result.failures):
                    forfeits[bot] += 1
                    losses[bot] += 1  # a forfeit is a loss, even when every side forfeited
                elif rank == 1 and game.result.winner_side >= 0:
                    wins[bot] += 1
                elif rank == 1:  # shares the top with another side: a draw
                    draws[bot] += 1
                else:
                    losses[bot] += 1
        return referee_pb2.MatchResult(
            match_id=self.match_id, wins=wins, draws=draws, losses=losses, forfeits=forfeits,
            game_ids=[g.game_id for g in self.games],
        )


class BotSlot:
    """One bot of the match: its endpoint, process, channel and stream."""

    def __init__(self, index: int, endpoint: BotEndpoint, logs_dir: Path, socket_dir: Path, label: str = "",
                 name: str = "", clock: Clock = MONOTONIC, launcher: Launcher = LOCAL_LAUNCHER) -> None:
        self.index = index
        self.clock = clock  # times its start-up and, through its connection, every answer
        self.launcher = launcher  # starts its process (for a command endpoint)
        self.endpoint = endpoint
        self.label = label or f"bot{index}"  # names its log file and sockets
        self.given_name = name  # what the caller (a tournament) calls the bot; shown instead of its own
        self.hello_name = ""  # the bot's own name, from its Hello, cleaned (referee/names.py)
        self.version = ""  # from its Hello, cleaned
        self.play_events = False  # the bot asked for a PlayMade after every play
        self.log_path = logs_dir / f"{self.label}.log"
        self._socket_dir = socket_dir
        self.process: BotProcess | None = None
        self.channel: grpc.aio.Channel | None = None
        self.connection: BotConnection | None = None
        self.starts = 0
        self.failed_starts = 0
        self.startup_failure: StreamFailure | None = None
        self.needs_restart = False  # set after a timeout: restart before the next game (its state is unknown)

    @property
    def name(self) -> str:
        """The bot's name in output and records: the caller's, else its own, else its label."""
        return self.given_name or self.hello_name or self.label

    @property
    def ready(self) -> bool:
        return (
            self.connection is not None
            and self.connection.broken is None
            and (self.process is None or not self.process.exited)
        )

    async def ensure_ready(self, handshake: bot_pb2.Handshake, control: TimeControl) -> StreamFailure | None:
        """Reuse the stream, or (re)start the bot and redo the handshake; None when ready."""
        if self.ready and not self.needs_restart:
            return None
        if self.failed_starts >= STARTUP_ATTEMPTS:
            return self.startup_failure
        await self.shutdown()
        self.needs_restart = False
        self.starts += 1
        loop = asyncio.get_running_loop()
        startup_s = control.startup_time_ms / 1000
        started = self.clock.now()
        deadline = loop.time() + self.clock.real_wait_s(startup_s)  # the real bound on waiting
        address = self.endpoint.address
        if self.endpoint.is_process:
            address = f"unix:{self._socket_dir / f'{self.label}-{self.starts}.sock'}"
            try:
                self.process = await self.launcher.launch(self.endpoint, address, self.log_path)
            except OSError as exc:
                return await self._startup_failed(f"cannot start {self.endpoint.spec!r}: {exc}")
        assert address is not None
        self.channel = grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS)
        why = await wait_healthy(self.channel, deadline, self.process)
        if why:
            return await self._startup_failed(why)
        self.connection = BotConnection(self.channel, self.clock)
        hello = await self.connection.open(handshake, max(0.001, startup_s - (self.clock.now() - started)))
        late = self.clock.now() - started > startup_s
        if late or (isinstance(hello, StreamFailure) and hello.kind == F.FAILURE_KIND_TIMEOUT):
            return await self._startup_failed(
                f"handshake failed: no Hello within the startup time ({control.startup_time_ms} ms)")
        if isinstance(hello, StreamFailure):
            return await self._startup_failed(f"handshake failed: {hello.reason}", hello.received)
        major = hello.protocol_version.split(".")[0] if hello.protocol_version else PROTOCOL_VERSION
        if major != PROTOCOL_VERSION:
            return await self._startup_failed(
                f"speaks protocol {clean_version(hello.protocol_version)!r}, the referee speaks {PROTOCOL_VERSION}")
        # bot-chosen text is cleaned before any log line, event or record holds it
        self.hello_name = clean_name(hello.name)
        self.version = clean_version(hello.version)
        self.play_events = hello.play_events
        self.failed_starts = 0
        log.info("bot %s ready: %s %s at %s", self.label, self.name, self.version, address)
        return None

    async def _startup_failed(self, reason: str, received: str = "") -> StreamFailure:
        """Record a failed start and tear down what was started, so the bot is not ready."""
        self.failed_starts += 1
        self.startup_failure = StreamFailure(F.FAILURE_KIND_STARTUP, reason, received)
        log.warning("bot %s (%s) failed to start: %s", self.label, self.endpoint.spec, reason)
        await self.shutdown()
        return self.startup_failure

    async def shutdown(self) -> None:
        """Close the stream and channel and stop the process (its whole group)."""
        if self.connection is not None:
            await self.connection.close()
            self.connection = None
        if self.channel is not None:
            await self.channel.close(grace=None)
            self.channel = None
        if self.process is not None:
            await self.process.stop()
            self.process = None


Emit = Callable[[referee_pb2.RunMatchResponse], None]


def _discard(event: referee_pb2.RunMatchResponse) -> None:
    """The default event sink."""


async def run_match(spec: MatchSpec, emit: Emit | None = None, clock: Clock = MONOTONIC,
                    launcher: Launcher = LOCAL_LAUNCHER) -> MatchReport:
    """Play every game of ``spec``; bots are stopped on every path, errors and cancellation included.
    ``clock`` times every start-up and answer (tests drive a ManualClock); ``launcher`` starts the
    bots' processes."""
    emit = emit or _discard
    match_id = spec.match_id or uuid.uuid4().hex[:12]
    logs_dir = spec.logs_dir / match_id if spec.logs_dir else Path(tempfile.mkdtemp(prefix=f"casino-{match_id}-"))
    logs_dir.mkdir(parents=True, exist_ok=True)
    if spec.records_dir:
        spec.records_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="casino-sock-") as socket_dir:
        slots = [BotSlot(i, ep, logs_dir, Path(socket_dir), clock=clock, launcher=launcher)
                 for i, ep in enumerate(spec.bots)]
        try:
            handshake = spec.game(match_id, 1).handshake(spec.games)
            await asyncio.gather(*(slot.ensure_ready(handshake, spec.time_control) for slot in slots))
            emit(referee_pb2.RunMatchResponse(match_started=referee_pb2.MatchStarted(
                match_id=match_id, bot_names=[s.name for s in slots])))
            reports = []
            turn_ids = itertools.count(1)  # unique across the match, so a late answer never matches a later turn
            for number in range(1, spec.games + 1):
                setup = spec.game(match_id, number)
                report = await play_game(setup, [slots[b] for b in setup.seat_bots], handshake, emit, turn_ids)
                reports.append(report)
                if spec.records_dir:
                    path = spec.records_dir / f"{report.game_id}.json"
                    path.write_text(json.dumps(report.record, indent=1) + "\n", encoding="utf-8")
            match = MatchReport(match_id, [s.name for s in slots], reports, logs_dir)
            emit(referee_pb2.RunMatchResponse(match_result=match.tally()))
            return match
        finally:
            await asyncio.gather(*(slot.shutdown() for slot in slots), return_exceptions=True)


async def play_game(
    spec: GameSetup, seats: Sequence[BotSlot], handshake: bot_pb2.Handshake, emit: Emit | None = None,
    turn_ids: Iterator[int] | None = None,
) -> GameReport:
    """Play one game between the bots of ``seats`` (one slot per seat; each is started or
    restarted as needed, with ``handshake``). ``turn_ids`` must be unique per stream across
    games (a late answer must never match a later turn)."""
    emit = emit or _discard
    turn_ids = turn_ids if turn_ids is not None else itertools.count(1)
    options = spec.options
    n = options.players
    if len(seats) != n:
        raise ValueError(f"{n} players need {n} seats, got {len(seats)}")
    game_id, number, seat_bots, seed = spec.game_id, spec.game_number, list(spec.seat_bots), spec.seed
    match_id = spec.match_id
    state: GameState = new_game(options, seed=seed, decks=spec.decks)
    control = spec.time_control
    send_s = control.move_time_ms / 1000 + 1.0  # bound on one write to a bot that stopped reading
    clocks = [GameClock.start(control) for _ in range(n)]
    strikes = [0] * n
    failures: list[game_pb2.Failure] = []
    timings: list[list[int]] = []
    substitute_rng = random.Random(seed)
    emit(referee_pb2.RunMatchResponse(game_started=referee_pb2.GameStarted(
        game_id=game_id, game_number=number, seat_bots=seat_bots, seed=seed)))
    log.info("game %s: seats %s, seed %d", game_id, [s.name for s in seats], seed)

    def record_failure(seat: int, failure: StreamFailure, forfeit: bool, before_play: bool = False) -> None:
        item = game_pb2.Failure(
            seat=seat, kind=failure.kind, deal=state.deal, play_number=0 if before_play else state.plays + 1,
            received=failure.received, reason=failure.reason, forfeit=forfeit,
        )
        failures.append(item)
        emit(referee_pb2.RunMatchResponse(failure=item))
        log.warning("game %s seat %d (%s): %s: %s%s", game_id, seat, seats[seat].name,
                    F.Name(failure.kind), failure.reason, " -> forfeit" if forfeit else " -> random move")

    async def start_seat(seat: int) -> StreamFailure | None:
        """Make the seat's bot ready and tell it the game; a stream that breaks on the way (a bot
        that exited after the last game) gets one restart."""
        slot = seats[seat]
        start = bot_pb2.GameStart(game_id=game_id, game_number=number, seat=seat, side=options.side_of(seat),
                                  player_names=[s.name for s in seats])
        for _ in range(2):
            why = await slot.ensure_ready(handshake, control)
            if why:
                return why
            why = await slot.connection.send(bot_pb2.PlayRequest(game_start=start), send_s)  # type: ignore[union-attr]
            if why is None:
                slot.connection.begin_game()  # type: ignore[union-attr]
                return None
        return why

    # every seat's bot must start; each that cannot is recorded and forfeits
    forfeiting: list[int] = []
    for seat in range(n):
        why = await start_seat(seat)
        if why:
            record_failure(seat, why, True, before_play=True)
            forfeiting.append(seat)

    moved = [False] * n  # whether the seat has made a move of its own this game
    public_plays = b""  # this deal's plays, each encoded once (see convert.turn_request_bytes)
    while not forfeiting and not state.is_over:
        seat = state.to_move
        slot = seats[seat]
        moves = legal_moves(state)
        clock = clocks[seat]
        failure: StreamFailure | None
        move: Move | None = None
        elapsed = 0.0
        answer: bot_pb2.MoveChoice | StreamFailure
        if not slot.ready:
            answer = slot.connection.broken if slot.connection and slot.connection.broken else StreamFailure(
                F.FAILURE_KIND_DISCONNECT, "the bot is gone")
        else:
            turn_id = next(turn_ids)
            request = turn_request_bytes(game_id, turn_id, observation(state, seat, with_plays=False), moves,
                                         control.move_time_ms, clock.bank_ms, public_plays)
            answer, elapsed = await slot.connection.ask_move(request, turn_id, clock.deadline_s())  # type: ignore[union-attr]
        if isinstance(answer, StreamFailure):
            answer = await _crash_or_disconnect(answer, slot)
            if not moved[seat] and answer.kind in (F.FAILURE_KIND_DISCONNECT, F.FAILURE_KIND_CRASH):
                # gone before its first move of this game (e.g. it exited after the last game):
                # restart it and ask again once, rather than count a failure of the last game
                moved[seat] = True
                log.info("game %s seat %d: %s before its first move; restarting", game_id, seat, answer.reason)
                why = await start_seat(seat)
                if why is None:
                    continue
                answer = why
        moved[seat] = True
        failure, move = _judge(answer, state, moves)
        if failure is None and not clock.charge(elapsed * 1000):
            failure = StreamFailure(F.FAILURE_KIND_TIMEOUT, f"answered after {elapsed * 1000:.0f} ms, limit "
                                    f"{control.move_time_ms + clock.bank_ms} ms", preview(answer))
        substituted = False
        if failure is not None:
            if failure.kind == F.FAILURE_KIND_TIMEOUT:
                slot.needs_restart = True  # a bot that missed a deadline is restarted before its next game
            strikes[seat] += 1
            forfeit = spec.policy is FailurePolicy.FORFEIT or strikes[seat] > spec.max_strikes
            record_failure(seat, failure, forfeit)
            if forfeit:
                forfeiting.append(seat)
                break
            move = substitute_rng.choice(moves)
            substituted = True
        assert move is not None
        deal, play_number = state.deal, state.plays + 1
        state = apply(state, move)
        notation = str(move)
        public_plays = b"" if state.deal != deal else public_plays + public_play_field(seat, notation)
        timings.append([seat, int(elapsed * 1e6)])
        if emit is not _discard:  # one event per play: only built when someone listens
            emit(referee_pb2.RunMatchResponse(play=referee_pb2.PlayEvent(
                game_id=game_id, seat=seat, move=notation, deal=deal, play_number=play_number,
                elapsed_us=int(elapsed * 1e6), substituted=substituted)))
        listeners = [other for other in seats if other.play_events and other.ready]
        if listeners:
            made = bot_pb2.PlayRequest(play_made=bot_pb2.PlayMade(
                game_id=game_id, seat=seat, move=notation, deal=deal, play_number=play_number, substituted=substituted))
            for other in listeners:
                await other.connection.send(made, send_s)  # type: ignore[union-attr]

    if forfeiting:
        result = forfeit_result(game_id, options, state.scores, forfeiting, state.deal + 1, failures)
    else:
        assert state.result is not None
        result = normal_result(game_id, options, state.result, failures)
    end = bot_pb2.PlayRequest(game_end=bot_pb2.GameEnd(result=result))
    for slot in seats:
        if slot.ready:
            await slot.connection.send(end, send_s)  # type: ignore[union-attr]
    emit(referee_pb2.RunMatchResponse(game_result=result))
    log.info("game %s: %s %s", game_id, result.reason, list(result.ranks))
    record = referee_record(
        game_id=game_id, match_id=match_id, game_number=number,
        seats=[SeatRecord(s, seat_bots[s], seats[s].name, seats[s].hello_name, seats[s].version, seats[s].endpoint.spec)
               for s in range(n)],
        time_control=control, policy=spec.policy.value, max_strikes=spec.max_strikes, state=state,
        timings_us=timings, failures=failures, result=result,
    )
    return GameReport(game_id, number, seat_bots, result, record)


async def _crash_or_disconnect(failure: StreamFailure, slot: BotSlot) -> StreamFailure:
    """A broken stream from a started bot is a crash when its process exits within a moment."""
    proc = slot.process
    if failure.kind != F.FAILURE_KIND_DISCONNECT or proc is None or proc.process is None:
        return failure
    try:
        await asyncio.wait_for(asyncio.shield(proc.process.wait()), 0.5)
    except asyncio.TimeoutError:
        return failure
    return StreamFailure(F.FAILURE_KIND_CRASH, f"the bot process {proc.exit_description}", failure.received)


def _judge(
    answer: bot_pb2.MoveChoice | StreamFailure, state: GameState, moves: list[Move]
) -> tuple[StreamFailure | None, Move | None]:
    """Turn a bot's answer into a legal Move, or say precisely why it is not one."""
    if isinstance(answer, StreamFailure):
        return answer, None
    which = answer.WhichOneof("choice")
    if which == "index":
        if answer.index < len(moves):
            return None, moves[answer.index]
        return StreamFailure(F.FAILURE_KIND_MALFORMED, f"index {answer.index} is out of range (0..{len(moves) - 1})",
                             preview(answer)), None
    try:
        if which == "notation":
            move = parse_move(answer.notation)
        elif which == "move":
            move = move_from_pb(answer.move)
        else:
            return StreamFailure(F.FAILURE_KIND_MALFORMED, "the answer names no move (index, notation or move)",
                                 preview(answer)), None
    except RulesError as exc:
        return StreamFailure(F.FAILURE_KIND_MALFORMED, str(exc), preview(answer)), None
    if move not in moves:
        return StreamFailure(F.FAILURE_KIND_ILLEGAL_MOVE, f"{move}: {explain_illegal(state, move)}", preview(answer)), None
    return None, move
