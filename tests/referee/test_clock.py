"""The time-control arithmetic (referee/clock.py) as a table: what each move may take, what it
costs the bank, and when it is a timeout (docs/protocol.md, "Time limits"); and the ManualClock
that the referee's clock tests run on."""

from __future__ import annotations

import pytest

from referee.clock import MONOTONIC, GameClock, ManualClock, TimeControl


def tc(move: int = 100, grace: int = 50, bank: int = 0, increment: int = 0) -> TimeControl:
    return TimeControl(move_time_ms=move, grace_ms=grace, bank_initial_ms=bank, bank_increment_ms=increment)


@pytest.mark.parametrize("control, taken_ms, verdicts, banks", [
    pytest.param(tc(), [0, 100, 150], [True, True, True], [0, 0, 0], id="no-bank-within-move-time-and-grace"),
    pytest.param(tc(), [150.4], [False], [0], id="no-bank-past-grace"),
    pytest.param(tc(bank=300), [250, 250, 50], [True, True, True], [150, 0, 0], id="bank-pays-the-overrun"),
    pytest.param(tc(bank=300), [250, 250, 151], [True, True, False], [150, 0, 0], id="empty-bank-then-timeout"),
    pytest.param(tc(bank=100), [249], [True], [0], id="grace-covers-an-overrun-of-the-bank"),
    pytest.param(tc(bank=100), [251], [False], [100], id="past-bank-and-grace"),
    pytest.param(tc(bank=200, increment=50), [180, 180, 0], [True, True, True], [170, 140, 190],
                 id="increment-after-every-move-in-time"),
    pytest.param(tc(increment=30), [0, 120, 0], [True, True, True], [30, 40, 70], id="increment-builds-a-bank"),
    pytest.param(tc(bank=100), [179.6], [True], [20], id="charged-in-whole-milliseconds"),
])
def test_game_clock_charges(control: TimeControl, taken_ms: list[float], verdicts: list[bool], banks: list[int]) -> None:
    clock = GameClock.start(control)
    got_verdicts, got_banks = [], []
    for ms in taken_ms:
        allowed = clock.allowed_ms()
        assert clock.deadline_s() == pytest.approx((allowed + control.grace_ms) / 1000)
        got_verdicts.append(clock.charge(ms))
        got_banks.append(clock.bank_ms)
        if not got_verdicts[-1]:
            break
    assert (got_verdicts, got_banks) == (verdicts, banks)


def test_allowed_time_is_move_time_plus_bank() -> None:
    clock = GameClock.start(tc(move=500, bank=2000))
    assert clock.allowed_ms() == 2500
    clock.charge(1500)
    assert clock.allowed_ms() == 500 + 1000


@pytest.mark.parametrize("field, value", [("move_time_ms", 0), ("startup_time_ms", 0), ("grace_ms", -1),
                                          ("bank_initial_ms", 1.5), ("bank_increment_ms", True)])
def test_time_control_refuses_bad_values(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        TimeControl(**{field: value})  # type: ignore[arg-type]


def test_manual_clock_moves_only_when_told_and_stretches_real_waits() -> None:
    clock = ManualClock(real_wait_floor_s=20.0)
    assert clock.now() == 0.0
    clock.advance(0.25)
    clock.advance(0.5)
    assert clock.now() == pytest.approx(0.75)
    assert clock.real_wait_s(0.1) == 20.0 and clock.real_wait_s(60.0) == 60.0
    with pytest.raises(ValueError):
        clock.advance(-1)
    assert MONOTONIC.real_wait_s(0.1) == 0.1 and MONOTONIC.now() <= MONOTONIC.now()


@pytest.mark.parametrize("cpu_limit, grace, used_ms, in_time", [
    (0, 50, 10_000.0, True),      # no CPU limit: never a CPU timeout
    (100, 50, 150.0, True),       # within limit + grace
    (100, 50, 150.4, True),       # rounded to whole ms
    (100, 50, 150.6, False),
    (100, 0, 101.0, False),
])
def test_cpu_limit_is_judged_on_whole_ms_with_the_grace(cpu_limit: int, grace: int, used_ms: float,
                                                         in_time: bool) -> None:
    control = TimeControl(move_time_ms=1000, grace_ms=grace, cpu_time_ms=cpu_limit)
    assert control.cpu_in_time(used_ms) is in_time


def test_cpu_limit_travels_in_protobuf_and_is_left_out_of_settings_when_unset() -> None:
    control = TimeControl(move_time_ms=800, cpu_time_ms=80)
    assert TimeControl.from_pb(control.to_pb()) == control
    assert control.to_dict()["cpu_time_ms"] == 80
    assert "cpu_time_ms" not in TimeControl().to_dict()  # settings stored before the field stay equal
    assert TimeControl(**TimeControl().to_dict()) == TimeControl()


def test_cpu_limit_may_not_exceed_the_wall_move_time() -> None:
    with pytest.raises(ValueError, match=r"cpu_time_ms \(1001\) must be at most move_time_ms \(1000\)"):
        TimeControl(cpu_time_ms=1001)
    assert TimeControl(cpu_time_ms=1000).cpu_time_ms == 1000
