"""The referee's record of one game: the engine's record of the play (the decks and every move,
``referee.rules.game_record``) wrapped with who sat where, the clock, the failure policy, each
play's response time and CPU time, every failure and the result (docs/protocol.md, section 8);
``GameSoFar``, a running game's record so far for observers (the same format, only shorter, with
no result yet); and ``seat_move_times``, which reads the times back (from older records too)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format

from casino.v1 import game_pb2

from ..clock import TimeControl
from ..rules import GameState, game_record, legal_moves
from ..rules.errors import InvalidRecordError

RECORD_FORMAT = "royal-casino-game"
RECORD_VERSION = 1


@dataclass(frozen=True, slots=True)
class SeatRecord:
    """Who sat at a seat: the caller's bot number, the name shown for it (the tournament's, else
    its own), the name and version it gave in its Hello (cleaned), how it was reached (its command
    line or address) and, for a bot run from an archive, that archive's sha256."""

    seat: int
    bot: int
    name: str
    hello_name: str
    version: str
    endpoint: str
    archive: str | None = None
    # (its log file's name, the offsets its output of this game lies between): for its owner's
    # page; approximate by what the log's pipe still held at the game's end
    log: tuple[str, int, int] | None = None


def _as_dict(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message, always_print_fields_with_no_presence=True)


def _seat_entry(s: SeatRecord) -> dict[str, Any]:
    entry: dict[str, Any] = {"seat": s.seat, "bot": s.bot, "name": s.name, "hello_name": s.hello_name,
                             "version": s.version, "endpoint": s.endpoint}
    if s.archive is not None:  # only then: records of other bots stay as they were
        entry["archive"] = s.archive
    if s.log is not None:
        entry["log"] = {"file": s.log[0], "from": s.log[1], "to": s.log[2]}
    return entry


def referee_record(*, game_id: str, match_id: str, game_number: int, seats: Sequence[SeatRecord],
                   time_control: TimeControl, policy: str, max_strikes: int, state: GameState,
                   timings_us: list[list[int]], failures: Sequence[game_pb2.Failure],
                   result: game_pb2.GameResult | None, cpu_us: Sequence[int | None] | None = None,
                   forced: Sequence[int] = (), reports: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The JSON-serialisable record of a finished (or forfeited) game; with ``result`` None, of a
    game still being played (its record so far: ``"result": null``). ``cpu_us``: by play, as
    ``timings_us``, the CPU time of each move (None where it was not measured; all None if not given).
    ``forced``: the indices (into ``timings_us``, 0-based over the game) of the plays the referee
    made because they were the seat's only legal move; written only when there are some.
    ``reports``: the bots' own errors and notes on their answers, by play; written only when any."""
    cpu = list(cpu_us) if cpu_us is not None else [None] * len(timings_us)
    if len(cpu) != len(timings_us):
        raise ValueError(f"{len(cpu)} CPU times for {len(timings_us)} plays")
    return {
        "format": RECORD_FORMAT,
        "version": RECORD_VERSION,
        "game_id": game_id,
        "match_id": match_id,
        "game_number": game_number,
        "seats": [_seat_entry(s) for s in seats],
        "time_control": _as_dict(time_control.to_pb()),
        "failure_policy": policy,
        "max_strikes": max_strikes,
        "engine": game_record(state),
        "timings_us": timings_us,
        "cpu_us": cpu,
        "failures": [_as_dict(f) for f in failures],
        "result": _as_dict(result) if result is not None else None,
        **({"forced": list(forced)} if forced else {}),  # only then: other records stay as they were
        # what bots said of their own answers (protocol 1.2): {"play", "seat", "error"?, "note"?}, only when any
        **({"bot_reports": list(reports)} if reports else {}),
    }


@dataclass(frozen=True, slots=True)
class GameSoFar:
    """A running game just after a play (or before the first), as a play observer sees it: cheap to
    make (the referee makes one per play, so nothing is copied: the lists are the game's own, only
    ever appended to, and read up to their length at this moment), and ``record()`` builds the
    record so far, in a finished game's format, only when asked (by whoever writes it somewhere)."""

    game_id: str
    match_id: str
    game_number: int
    seats: tuple[SeatRecord, ...]
    time_control: TimeControl
    policy: str
    max_strikes: int
    state: GameState  # immutable: the position after the last play
    timings_us: list[list[int]]
    cpu_us: list[int | None]
    failures: list[game_pb2.Failure]
    plays: int  # plays made so far (the length of timings_us here)
    failures_so_far: int
    forced: list[int]  # indices of forced plays so far (only appended to, as the other lists)

    def record(self) -> dict[str, Any]:
        """The game's record up to this play: ``referee_record`` of a game with no result yet."""
        return referee_record(
            game_id=self.game_id, match_id=self.match_id, game_number=self.game_number, seats=self.seats,
            time_control=self.time_control, policy=self.policy, max_strikes=self.max_strikes, state=self.state,
            timings_us=self.timings_us[:self.plays], cpu_us=self.cpu_us[:self.plays],
            failures=self.failures[:self.failures_so_far], result=None,
            forced=[i for i in self.forced if i < self.plays])


@dataclass(frozen=True, slots=True)
class MoveTimes:
    """One seat's moves in a record: wall-clock response times and, where measured, CPU times (us)."""

    wall_us: tuple[int, ...]
    cpu_us: tuple[int, ...]  # only the moves whose CPU time was measured


def seat_move_times(record: dict[str, Any]) -> dict[int, MoveTimes]:
    """Each seat's move times in a game record, by seat, forced plays left out (no bot was asked);
    a record written before CPU times were recorded (no ``cpu_us``) gives none."""
    timings = record.get("timings_us", [])
    cpu = list(record.get("cpu_us") or [])
    cpu += [None] * (len(timings) - len(cpu))
    forced = set(record.get("forced") or ())
    wall: dict[int, list[int]] = {}
    used: dict[int, list[int]] = {}
    for i, ((seat, us), cpu_of_move) in enumerate(zip(timings, cpu)):
        if i in forced:
            continue
        wall.setdefault(seat, []).append(us)
        if cpu_of_move is not None:
            used.setdefault(seat, []).append(cpu_of_move)
    return {seat: MoveTimes(tuple(values), tuple(used.get(seat, ()))) for seat, values in sorted(wall.items())}


def forced_plays(record: dict[str, Any], before: Sequence[GameState]) -> frozenset[int]:
    """The record's forced plays, each checked: ``before`` holds the state before every play (the
    replay's); a play marked forced must have been the mover's only legal move. InvalidRecordError
    names the first that was not (a hand-edited record), or a malformed list."""
    marked = record.get("forced", [])
    if not isinstance(marked, list) or not all(type(i) is int for i in marked):
        raise InvalidRecordError("malformed record: forced must be a list of play indices")
    for i in marked:
        if not 0 <= i < len(before):
            raise InvalidRecordError(f"malformed record: forced play {i} is not one of its {len(before)} plays")
        choices = len(legal_moves(before[i]))
        if choices != 1:
            state = before[i]
            raise InvalidRecordError(f"play {i + 1} of the game (deal {state.deal + 1}, play {state.plays + 1}) "
                                     f"is marked forced, but its mover had {choices} legal moves")
    return frozenset(marked)
