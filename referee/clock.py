"""Time controls: pure functions over milliseconds, and the clock the referee reads them on.

The referee reads time through a ``Clock`` (``MONOTONIC`` in production), so tests can drive the
clock logic (move time, grace, bank, increment, startup) with a ``ManualClock`` that moves only
when told, instead of sleeping and hoping a loaded machine keeps up.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # imported where used: `referee --help` and the arena's commands need no protobuf
    from casino.v1 import game_pb2

# Every time value of a TimeControl is at most an hour: more is a typo or an attack (a referee
# that waits days for a bot), and it keeps each within the protocol's uint32 (docs/protocol.md).
MAX_TIME_MS = 3_600_000


@dataclass(frozen=True, slots=True)
class TimeControl:
    """Limits for a match (docs/protocol.md, "Time limits").

    ``cpu_time_ms`` (0: none) is an opt-in limit on the CPU time a bot's processes use for one
    move; with it the wall-clock limit (move time + bank + grace) stays, as a backstop.
    """

    move_time_ms: int = 1000
    grace_ms: int = 50
    bank_initial_ms: int = 0
    bank_increment_ms: int = 0
    startup_time_ms: int = 10_000
    cpu_time_ms: int = 0

    def __post_init__(self) -> None:
        for name in ("move_time_ms", "grace_ms", "bank_initial_ms", "bank_increment_ms", "startup_time_ms",
                     "cpu_time_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a whole number of milliseconds >= 0, not {value!r}")
            if value > MAX_TIME_MS:
                raise ValueError(f"{name} must be at most {MAX_TIME_MS} ms (one hour), not {value}")
        if self.move_time_ms == 0:
            raise ValueError("move_time_ms must be at least 1")
        if self.startup_time_ms == 0:
            raise ValueError("startup_time_ms must be at least 1")
        if self.cpu_time_ms > self.move_time_ms:
            # one thread cannot use more CPU than wall time: such a limit would never be the one that applies
            raise ValueError(f"cpu_time_ms ({self.cpu_time_ms}) must be at most move_time_ms ({self.move_time_ms}), "
                             "the wall-clock backstop")

    def cpu_in_time(self, cpu_ms: float) -> bool:
        """Whether a move that used ``cpu_ms`` of CPU (whole ms, rounded) is within the CPU limit;
        the grace is slack here as for the wall clock. Always true without a CPU limit."""
        return not self.cpu_time_ms or round(cpu_ms) <= self.cpu_time_ms + self.grace_ms

    def to_dict(self) -> dict[str, int]:
        """Every field by name, except ``cpu_time_ms`` when it is 0: settings stored (and
        fingerprinted) before the CPU limit existed stay equal to today's without one."""
        data = dataclasses.asdict(self)
        if not self.cpu_time_ms:
            del data["cpu_time_ms"]
        return data

    def to_pb(self) -> game_pb2.TimeControl:
        from casino.v1 import game_pb2

        return game_pb2.TimeControl(
            move_time_ms=self.move_time_ms,
            grace_ms=self.grace_ms,
            bank_initial_ms=self.bank_initial_ms,
            bank_increment_ms=self.bank_increment_ms,
            startup_time_ms=self.startup_time_ms,
            cpu_time_ms=self.cpu_time_ms,
        )

    @classmethod
    def from_pb(cls, pb: game_pb2.TimeControl) -> "TimeControl":
        """Unset (zero) fields take the defaults, except the bank and the CPU limit, where 0 means none."""
        d = cls()
        return cls(
            move_time_ms=pb.move_time_ms or d.move_time_ms,
            grace_ms=pb.grace_ms or d.grace_ms,
            bank_initial_ms=pb.bank_initial_ms,
            bank_increment_ms=pb.bank_increment_ms,
            startup_time_ms=pb.startup_time_ms or d.startup_time_ms,
            cpu_time_ms=pb.cpu_time_ms,
        )


@dataclass(slots=True)
class GameClock:
    """One seat's clock in one game: the bank it has left."""

    control: TimeControl
    bank_ms: int

    @classmethod
    def start(cls, control: TimeControl) -> "GameClock":
        return cls(control, control.bank_initial_ms)

    def allowed_ms(self) -> int:
        """Time the seat may take for this move: the move time plus whatever is in the bank."""
        return self.control.move_time_ms + self.bank_ms

    def deadline_s(self) -> float:
        """How long the referee waits for the answer, grace included, in seconds."""
        return (self.allowed_ms() + self.control.grace_ms) / 1000

    def charge(self, elapsed_ms: float) -> bool:
        """Account for a move that took ``elapsed_ms``; False when it overran move time + bank.

        The grace margin is the referee's slack for transport, so an answer within it counts as
        in time; it never adds to the bank.
        """
        over = elapsed_ms - self.control.move_time_ms
        if over > self.bank_ms + self.control.grace_ms:
            return False
        self.bank_ms = max(0, self.bank_ms - max(0, round(over))) + self.control.bank_increment_ms  # whole ms
        if self.control.bank_initial_ms == 0 and self.control.bank_increment_ms == 0:
            self.bank_ms = 0
        return True


class Clock(Protocol):
    """Where the referee reads the time of a move or a start-up, and how long it really waits."""

    def now(self) -> float:
        """Seconds on a monotonic clock."""
        ...

    def real_wait_s(self, wait_s: float) -> float:
        """Real seconds to wait for something due within ``wait_s`` of this clock's time."""
        ...


class MonotonicClock:
    """The real clock: ``time.perf_counter``; waits are what they say."""

    def now(self) -> float:
        return time.perf_counter()

    def real_wait_s(self, wait_s: float) -> float:
        return wait_s


MONOTONIC = MonotonicClock()


class ManualClock:
    """A clock that moves only when told (``advance``), for tests of the clock logic.

    What a bot "takes" is what the test advances the clock by while the bot thinks, so a verdict
    never depends on how busy the machine is. Real waits are stretched to at least
    ``real_wait_floor_s``: an answer that arrives at once in this clock's time is never cut off by
    a slow machine; only a bot that never answers waits that long.
    """

    def __init__(self, start_s: float = 0.0, real_wait_floor_s: float = 30.0) -> None:
        self._now = start_s
        self.real_wait_floor_s = real_wait_floor_s

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"a clock cannot go back ({seconds} s)")
        self._now += seconds

    def real_wait_s(self, wait_s: float) -> float:
        return max(wait_s, self.real_wait_floor_s)
