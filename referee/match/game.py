"""One game between started bots: deal, ask each seat for its move, check it against the engine,
time it, and judge failures by the match's policy; the record is built in match/record.py.

Two optional ways to follow a game as it is played: ``emit`` gets the protocol's events (the
Referee service streams them), ``observe`` a ``GameSoFar`` once the seats are ready and after every
play, from which the record so far can be built (the arena's live games). Both are called on the
loop that times the bots, so they must only note what they are given and return; an observer that
raises is logged and not called again (the game goes on).

A game the platform fails (a bot's log it cannot write, a sandbox it cannot set up, its own memory
or descriptors: issue 26) raises PlatformFault, with every seat's bot stopped: it never ends with
a result or record that blames a bot for it."""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import time
from collections.abc import Callable, Iterator, Sequence

from casino.v1 import bot_pb2, game_pb2, referee_pb2

from ..metrics import GAMES_FAILED, GAMES_STARTED, SANDBOX_KILLS, error_label, failure_kind_label, observe_game
from ..bots.inprocess import InProcessSlot
from ..bots.slot import BotSlot
from ..bots.cpu import CpuMeter
from ..clock import GameClock, TimeControl
from ..errors import PlatformFault
from ..names import clean_text
from ..rules import GameState, Move, apply, legal_moves, new_game, parse_move
from ..rules.errors import RulesError
from ..rules.legal import explain_illegal
from ..wire.connection import StreamFailure, preview
from ..wire.convert import move_from_pb, public_play_field, turn_request_bytes
from .outcome import forfeit_result, normal_result
from .record import GameSoFar, SeatRecord, referee_record
from .report import GameReport
from .spec import FailurePolicy, GameSetup

log = logging.getLogger(__name__)
F = game_pb2.FailureKind
MAX_ERROR_CHARS = 500  # of a bot's own error, as it reported it (MoveChoice.error)
MAX_NOTE_CHARS = 1000  # of a bot's note on a play (MoveChoice.note)



Emit = Callable[[referee_pb2.RunMatchResponse], None]
Observer = Callable[[GameSoFar], None]  # a running game after each play (see the module docstring)


def discard_event(event: referee_pb2.RunMatchResponse) -> None:
    """The default event sink."""


async def play_game(
    spec: GameSetup, seats: Sequence[BotSlot | InProcessSlot], handshake: bot_pb2.Handshake, emit: Emit | None = None,
    turn_ids: Iterator[int] | None = None, observe: Observer | None = None,
) -> GameReport:
    """Play one game between the bots of ``seats`` (one slot per seat; each is started or
    restarted as needed, with ``handshake``). ``turn_ids`` must be unique per stream across
    games (a late answer must never match a later turn). ``observe``: see the module docstring.
    The game is counted in the referee's metrics (referee/metrics.py) once, when it ends.
    PlatformFault when the platform failed the game (see the module docstring): every seat's bot
    is stopped first, so nothing of the game is left running."""
    GAMES_STARTED.inc()
    began = time.perf_counter()
    try:
        try:
            report = await _play_game(spec, seats, handshake, emit, turn_ids, observe)
        except MemoryError as exc:  # the referee's own memory: never a bot's failure
            raise PlatformFault("memory", f"game {spec.game_id}: the referee ran out of memory") from exc
        except PlatformFault as fault:
            log.warning("game %s: not played to its end, the platform's fault (%s): %s", spec.game_id,
                        fault.condition, fault, extra={"game_id": spec.game_id})
            await asyncio.gather(*(slot.shutdown() for slot in seats), return_exceptions=True)
            raise
    except BaseException as exc:
        GAMES_FAILED.labels(error_label(exc)).inc()
        raise
    result, record = report.result, report.record
    observe_game(
        [slot.name for slot in seats], "forfeit" if result.termination == game_pb2.TERMINATION_FORFEIT else "normal",
        result.reason, time.perf_counter() - began, record["timings_us"], record["cpu_us"],
        [(f.seat, failure_kind_label(F.Name(f.kind))) for f in result.failures], forced=record.get("forced", ()))
    return report


async def _play_game(
    spec: GameSetup, seats: Sequence[BotSlot | InProcessSlot], handshake: bot_pb2.Handshake, emit: Emit | None,
    turn_ids: Iterator[int] | None, observe: Observer | None,
) -> GameReport:
    emit = emit or discard_event
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
    cpu_timings: list[int | None] = []  # by play, as timings: the move's CPU time, None if not measured
    forced: list[int] = []  # indices into timings of the plays the referee made: the seat's only legal move
    reports: list[dict[str, object]] = []  # what bots said of their own answers: errors and notes (protocol 1.2)
    substitute_rng = random.Random(seed)
    emit(referee_pb2.RunMatchResponse(game_started=referee_pb2.GameStarted(
        game_id=game_id, game_number=number, seat_bots=seat_bots, seed=seed)))
    log.info("game %s: seats %s, seed %d", game_id, [s.name for s in seats], seed, extra={"game_id": game_id})

    def record_failure(seat: int, failure: StreamFailure, forfeit: bool, before_play: bool = False) -> None:
        item = game_pb2.Failure(
            seat=seat, kind=failure.kind, deal=state.deal, play_number=0 if before_play else state.plays + 1,
            received=failure.received, reason=failure.reason, forfeit=forfeit,
        )
        failures.append(item)
        emit(referee_pb2.RunMatchResponse(failure=item))
        log.warning("game %s seat %d (%s): %s: %s%s", game_id, seat, seats[seat].name,
                    F.Name(failure.kind), failure.reason, " -> forfeit" if forfeit else " -> random move",
                    extra={"game_id": game_id, "seat": seat, "bot": seats[seat].name, "reason": failure.reason,
                           "failure_kind": failure_kind_label(F.Name(failure.kind))})

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

    # where each bot's log stands as the game begins (its start-up, if it restarts, is the game's too)
    log_from = [_log_size(slot) for slot in seats]
    # every seat's bot must start; each that cannot is recorded and forfeits
    forfeiting: list[int] = []
    for seat in range(n):
        why = await start_seat(seat)
        if why:
            record_failure(seat, why, True, before_play=True)
            forfeiting.append(seat)

    def seat_records(logs: bool = False) -> tuple[SeatRecord, ...]:
        """Who sat where; with ``logs``, where in its log file each bot's output of this game is."""
        return tuple(SeatRecord(s, seat_bots[s], seats[s].name, seats[s].hello_name, seats[s].version,
                                seats[s].endpoint.spec, seats[s].endpoint.archive,
                                (seats[s].log_path.name, log_from[s], _log_size(seats[s])) if logs else None)
                     for s in range(n))

    seen_seats = seat_records() if observe is not None else ()

    def tell_observer() -> None:
        nonlocal observe
        if observe is None:
            return
        try:
            observe(GameSoFar(game_id, match_id, number, seen_seats, control, spec.policy.value, spec.max_strikes,
                              state, timings, cpu_timings, failures, len(timings), len(failures), forced))
        except Exception:  # an observer's bug must not end the game
            log.exception("game %s: the play observer failed; it is not called again", game_id,
                          extra={"game_id": game_id})
            observe = None

    tell_observer()
    moved = [False] * n  # whether the seat has made a move of its own this game
    public_plays = b""  # this deal's plays, each encoded once (see convert.turn_request_bytes)

    async def make_play(seat: int, move: Move, elapsed: float, cpu_us: int | None, substituted: bool,
                        is_forced: bool = False) -> None:
        """Apply ``move`` for ``seat`` and tell everyone who follows: the record's lists, the
        deal's plays for the next turn, the client's event, the observer and PlayMade listeners."""
        nonlocal state, public_plays
        deal, play_number = state.deal, state.plays + 1
        state = apply(state, move)
        notation = str(move)
        public_plays = (b"" if state.deal != deal
                        else public_plays + public_play_field(seat, notation, is_forced))
        if is_forced:
            forced.append(len(timings))
        timings.append([seat, int(elapsed * 1e6)])
        cpu_timings.append(cpu_us)
        if emit is not discard_event:  # one event per play: only built when someone listens
            emit(referee_pb2.RunMatchResponse(play=referee_pb2.PlayEvent(
                game_id=game_id, seat=seat, move=notation, deal=deal, play_number=play_number,
                elapsed_us=int(elapsed * 1e6), substituted=substituted, cpu_us=cpu_us, forced=is_forced)))
        tell_observer()
        if any(slot.play_events for slot in seats):  # built only for bots that asked for PlayMade
            made = bot_pb2.PlayMade(game_id=game_id, seat=seat, move=notation, deal=deal, play_number=play_number,
                                    substituted=substituted, forced=is_forced)
            await _tell_listeners(seats, made, send_s)

    while not forfeiting and not state.is_over:
        _check_platform(seats)  # before each turn: a log the referee could not write ends the game here
        seat = state.to_move
        slot = seats[seat]
        moves = legal_moves(state)
        if spec.auto_forced and len(moves) == 1:
            # no choice to make: the referee plays it, sends no turn and charges no time
            await make_play(seat, moves[0], 0.0, None, False, is_forced=True)
            continue
        clock = clocks[seat]
        failure: StreamFailure | None
        move: Move | None = None
        elapsed = 0.0
        cpu_us: int | None = None
        answer: bot_pb2.MoveChoice | StreamFailure
        if not slot.ready:
            answer = slot.connection.broken if slot.connection and slot.connection.broken else StreamFailure(
                F.FAILURE_KIND_DISCONNECT, "the bot is gone")
        else:
            turn_id = next(turn_ids)
            request = turn_request_bytes(game_id, turn_id, state, seat, moves, control.move_time_ms, clock.bank_ms,
                                         public_plays)
            answer, elapsed, cpu_us = await _ask(slot, request, turn_id, clock, control)
        if isinstance(answer, StreamFailure):
            answer = await _crash_or_disconnect(answer, slot)
            if not moved[seat] and answer.kind in (F.FAILURE_KIND_DISCONNECT, F.FAILURE_KIND_CRASH):
                # gone before its first move of this game (e.g. it exited after the last game):
                # restart it and ask again once, rather than count a failure of the last game
                moved[seat] = True
                log.info("game %s seat %d: %s before its first move; restarting", game_id, seat, answer.reason,
                         extra={"game_id": game_id, "seat": seat, "bot": slot.name, "reason": answer.reason,
                                "failure_kind": failure_kind_label(F.Name(answer.kind))})
                why = await start_seat(seat)
                if why is None:
                    continue
                answer = why
        moved[seat] = True
        if isinstance(answer, bot_pb2.MoveChoice) and (answer.error or answer.note):
            reports.append(bot_report(len(timings), seat, answer))
        failure, move = _judge(answer, state, moves)
        failure = _on_time(failure, answer, elapsed, cpu_us, clock, control)
        substituted = False
        if failure is not None:
            if failure.kind == F.FAILURE_KIND_TIMEOUT:
                slot.needs_restart = True  # a bot that missed a deadline is restarted before its next game
                SANDBOX_KILLS.labels("time").inc()
            strikes[seat] += 1
            forfeit = spec.policy is FailurePolicy.FORFEIT or strikes[seat] > spec.max_strikes
            record_failure(seat, failure, forfeit)
            if forfeit:
                forfeiting.append(seat)
                break
            move = substitute_rng.choice(moves)
            substituted = True
        assert move is not None
        await make_play(seat, move, elapsed, cpu_us, substituted)

    _check_platform(seats)  # and at its end: no result for a game the platform failed
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
    log.info("game %s: %s %s", game_id, result.reason, list(result.ranks), extra=_end_fields(game_id, result, seats))
    record = referee_record(
        game_id=game_id, match_id=match_id, game_number=number,
        seats=seat_records(logs=True),
        time_control=control, policy=spec.policy.value, max_strikes=spec.max_strikes, state=state,
        timings_us=timings, cpu_us=cpu_timings, failures=failures, result=result, forced=forced, reports=reports,
    )
    return GameReport(game_id, number, seat_bots, result, record)



def _check_platform(seats: Sequence[BotSlot | InProcessSlot]) -> None:
    """Raise the PlatformFault of any seat's bot the platform has failed (its log not written)."""
    for slot in seats:
        fault = slot.platform_fault()
        if fault is not None:
            raise fault


def _end_fields(game_id: str, result: game_pb2.GameResult, seats: Sequence[BotSlot | InProcessSlot]) -> dict[str, object]:
    """The game-end log line's fields: why it ended, and for a forfeit who forfeited and for what
    (the first forfeiting failure: more than one seat can fail to start)."""
    fields: dict[str, object] = {"game_id": game_id, "reason": result.reason}
    forfeit = next((f for f in result.failures if f.forfeit), None)
    if forfeit is not None:
        fields.update(seat=forfeit.seat, bot=seats[forfeit.seat].name,
                      failure_kind=failure_kind_label(F.Name(forfeit.kind)))
    return fields


async def _ask(slot: BotSlot | InProcessSlot, request: bytes, turn_id: int, clock: GameClock,
               control: TimeControl) -> tuple[bot_pb2.MoveChoice | StreamFailure, float, int | None]:
    """Send one Turn and wait for the answer: (the answer or why there is none, the seconds it
    took, the CPU time in µs the bot's processes used meanwhile, None when not measured). Under a
    CPU-time limit the wait also ends as soon as the bot is over it."""
    meter = slot.cpu_meter
    cpu_start = meter.cpu_ns() if meter is not None else None
    give_up = _cpu_watch(meter, cpu_start, control) if meter is not None and cpu_start is not None else None
    answer, elapsed = await slot.connection.ask_move(  # type: ignore[union-attr]
        request, turn_id, clock.deadline_s(), give_up, _cpu_poll_s(control))
    cpu_us = None
    if meter is not None and cpu_start is not None:
        cpu_end = meter.cpu_ns()
        if cpu_end is not None:
            cpu_us = max(0, cpu_end - cpu_start) // 1000
    return answer, elapsed, cpu_us


def _on_time(failure: StreamFailure | None, answer: bot_pb2.MoveChoice | StreamFailure, elapsed: float,
             cpu_us: int | None, clock: GameClock, control: TimeControl) -> StreamFailure | None:
    """The verdict on a move's time, after its legality: a legal answer over the CPU limit (judged
    first, so a move that fails is not charged to the bank) or over the wall clock is a timeout;
    a timeout's reason says the CPU it used."""
    if failure is None and cpu_us is not None and not control.cpu_in_time(cpu_us / 1000):
        return StreamFailure(F.FAILURE_KIND_TIMEOUT, f"used {cpu_us / 1000:.0f} ms of CPU time, limit "
                             f"{control.cpu_time_ms} ms (answered after {elapsed * 1000:.0f} ms)", preview(answer))
    if failure is None and not clock.charge(elapsed * 1000):
        late = StreamFailure(F.FAILURE_KIND_TIMEOUT, f"answered after {elapsed * 1000:.0f} ms, limit "
                             f"{control.move_time_ms + clock.bank_ms} ms", preview(answer))
        return _with_cpu(late, cpu_us, control)
    if failure is not None and failure.kind == F.FAILURE_KIND_TIMEOUT:
        return _with_cpu(failure, cpu_us, control)
    return failure


async def _tell_listeners(seats: Sequence[BotSlot | InProcessSlot], made: bot_pb2.PlayMade, send_s: float) -> None:
    """A PlayMade to every ready bot that asked for them in its Hello."""
    listeners = [slot for slot in seats if slot.play_events and slot.ready]
    if listeners:
        request = bot_pb2.PlayRequest(play_made=made)
        for slot in listeners:
            await slot.connection.send(request, send_s)  # type: ignore[union-attr]

def _cpu_poll_s(control: TimeControl) -> float:
    """How often a bot's CPU time is read while it thinks under a CPU limit: a tenth of the
    limit, from 5 ms to 100 ms (a reading costs some 20 us of the referee's CPU)."""
    return min(0.1, max(0.005, control.cpu_time_ms / 10_000))


def _cpu_watch(meter: CpuMeter, start_ns: int, control: TimeControl) -> Callable[[], str | None] | None:
    """Under a CPU limit, what tells the wait for an answer that the bot has used more CPU than
    the limit and its grace: the wait ends there instead of at the wall-clock backstop."""
    if not control.cpu_time_ms:
        return None

    def over() -> str | None:
        now = meter.cpu_ns()
        if now is None or control.cpu_in_time((now - start_ns) / 1e6):
            return None
        return f"used {(now - start_ns) / 1e6:.0f} ms of CPU time without answering, limit {control.cpu_time_ms} ms"
    return over


def _with_cpu(failure: StreamFailure, cpu_us: int | None, control: TimeControl) -> StreamFailure:
    """A timeout under a CPU limit says how much CPU the move used: over the limit, that is the
    reason; within it, the wall-clock backstop's reason gets the figure (a bot that waited, or
    one the machine starved)."""
    if not control.cpu_time_ms or cpu_us is None:
        return failure
    if not control.cpu_in_time(cpu_us / 1000):  # also when _cpu_watch ended the wait: the final figure
        return StreamFailure(F.FAILURE_KIND_TIMEOUT, f"used {cpu_us / 1000:.0f} ms of CPU time without answering, "
                             f"limit {control.cpu_time_ms} ms", failure.received)
    if failure.reason.startswith("used "):  # _cpu_watch's, though the last reading came out lower
        return failure
    return StreamFailure(failure.kind, f"{failure.reason} (CPU {cpu_us / 1000:.0f} ms)", failure.received)


async def _crash_or_disconnect(failure: StreamFailure, slot: BotSlot | InProcessSlot) -> StreamFailure:
    """A broken stream from a started bot is a crash when its process exits within a moment."""
    proc = slot.process
    if failure.kind != F.FAILURE_KIND_DISCONNECT or proc is None or proc.process is None:
        return failure
    try:
        await asyncio.wait_for(asyncio.shield(proc.process.wait()), 0.5)
    except asyncio.TimeoutError:
        return failure
    return StreamFailure(F.FAILURE_KIND_CRASH, f"the bot process {proc.exit_description}", failure.received)


def _log_size(slot: BotSlot | InProcessSlot) -> int:
    """How much of ``slot``'s log file is written (0 when there is none yet)."""
    try:
        return slot.log_path.stat().st_size
    except OSError:
        return 0


def bot_report(play: int, seat: int, answer: bot_pb2.MoveChoice) -> dict[str, object]:
    """A bot's own word on its answer to play ``play`` (0-based over the game, as ``timings``): its
    error (its answer is a fallback) and its note, cleaned to one line and capped."""
    report: dict[str, object] = {"play": play, "seat": seat}
    if answer.error:
        report["error"] = clean_text(answer.error, MAX_ERROR_CHARS) or "(unprintable)"
    if answer.note:
        report["note"] = clean_text(answer.note, MAX_NOTE_CHARS)
    return report


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
