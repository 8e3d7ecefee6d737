"""The event loop the referee's and the arena's own processes run on: uvloop's by default (the
referee's CPU per asked turn about -8% on top of the gRPC settings, docs/benchmarks.md "A cheaper
gRPC path"), or asyncio's own with ``CASINO_EVENT_LOOP=asyncio``. Bots are not affected: the
Python SDK's bots run on asyncio's loop (a participant's environment need not have uvloop)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from .errors import UsageError

LOOP_ENV = "CASINO_EVENT_LOOP"
LOOPS = ("uvloop", "asyncio")
T = TypeVar("T")


def chosen_loop() -> str:
    """``uvloop`` or ``asyncio``, as ``CASINO_EVENT_LOOP`` says (default uvloop; asyncio when uvloop
    is not installed); UsageError for any other value."""
    name = os.environ.get(LOOP_ENV, "").strip().lower() or "uvloop"
    if name not in LOOPS:
        raise UsageError(f"{LOOP_ENV}={os.environ[LOOP_ENV]!r}: expected one of {', '.join(LOOPS)}")
    if name == "uvloop":
        try:
            import uvloop  # noqa: F401
        except ImportError:
            return "asyncio"
    return name


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes a new event loop of the chosen kind."""
    if chosen_loop() == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return asyncio.new_event_loop


def run_main(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the chosen loop: a command's main coroutine."""
    try:
        factory = loop_factory()
    except BaseException:
        main.close()  # never awaited: say nothing of it
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)
