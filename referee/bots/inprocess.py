"""In-process bots (``inprocess:PATH.py[:CLASS]``, trusted code only): a Python SDK bot whose object
plays in the referee's own process, as one more kind of seat the same game loop asks.

``InProcessSlot`` stands where a ``BotSlot`` stands and ``InProcessConnection`` where its stream
does: the loop builds the same Turn bytes, and the answer comes from the SDK's own code path
(``casino_bot.answer``: ``hello``, ``decide``, the hooks), so fallbacks, notes and errors are what
they are over gRPC. What differs is time:

- a call cannot be pre-empted, so each one runs to its end and is judged after the fact: its wall
  time on the slot's clock (a move over its allowance is a timeout, forfeit by the match's policy)
  and its thread CPU time (``time.thread_time``; a CPU limit is judged on it);
- a call that never returns meets a hard cap, twice the move's allowance plus a second. A bot
  with ``threaded = True`` runs each call in a daemon thread of its own, which is abandoned there
  (it may keep running until the process exits); a bot with ``threaded = False`` runs in the
  game's thread, and in the main thread a watchdog thread's signal at the cap raises
  ``_HardCapExceeded`` inside the call (elsewhere nothing can stop it; nor can a signal stop a
  call stuck in C code that never returns to Python). Either way the move is a timeout, the bot answers no more
  turns of that game (each is a timeout at once) and a new object replaces it before its next game.

The referee imports no bot code when it is imported: the file is loaded with importlib when a slot
first starts, and the SDK's answering module with it.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any, TypeVar

from casino.v1 import bot_pb2, game_pb2

from ..clock import MONOTONIC, Clock, TimeControl
from ..names import clean_name, clean_version
from ..wire.connection import StreamFailure, preview
from .endpoint import BotEndpoint

log = logging.getLogger(__name__)
F = game_pb2.FailureKind
STARTUP_ATTEMPTS = 3  # as BotSlot's: consecutive failed starts after which the bot is given up
HARD_CAP_FACTOR = 2.0  # a call's hard cap: this many times the move's allowance ...
HARD_CAP_EXTRA_S = 1.0  # ... plus this
T = TypeVar("T")
_modules: dict[str, ModuleType] = {}  # bot files loaded in this process, by path: loaded once


class _HardCapExceeded(BaseException):
    """Raised by the watchdog's signal inside an in-process call past its hard cap (a BaseException, so a bot's
    ``except Exception`` does not swallow it)."""


def load_bot_class(endpoint: BotEndpoint) -> type:
    """The endpoint's bot class: ``CLASS`` from its file, else the file's one subclass of the
    SDK's ``CasinoBot``. The file is executed once per process (as its own module, its folder on
    ``sys.path`` as when it is run as a script); ValueError says what is wrong."""
    assert endpoint.inprocess is not None
    path = endpoint.inprocess
    module = _modules.get(path)
    if module is None:
        folder = str(Path(path).parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        name = f"casino_inprocess_{len(_modules)}_{Path(path).stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ValueError(f"cannot load {path} as Python")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        _modules[path] = module
    base = importlib.import_module("casino_bot").CasinoBot
    if endpoint.inprocess_class:
        cls = getattr(module, endpoint.inprocess_class, None)
        if not (inspect.isclass(cls) and issubclass(cls, base)):
            raise ValueError(f"{Path(path).name} has no CasinoBot subclass {endpoint.inprocess_class!r}")
        return cls
    found = [c for c in vars(module).values()
             if inspect.isclass(c) and issubclass(c, base) and c is not base and c.__module__ == module.__name__]
    if len(found) != 1:
        names = ", ".join(c.__name__ for c in found) or "none"
        raise ValueError(f"{Path(path).name} defines {len(found)} CasinoBot subclasses ({names}): "
                         "name one as inprocess:PATH.py:CLASS")
    return found[0]


def construct(cls: type, endpoint: BotEndpoint) -> Any:
    """A new bot object: ``cls()``, or ``cls(seed=N)`` when the endpoint's env has
    ``CASINO_BOT_SEED=N`` and the class takes a ``seed`` (the sample bots' convention: their
    ``__main__`` reads that variable), so a seeded bot plays in-process as its process would."""
    seed = dict(endpoint.env).get("CASINO_BOT_SEED")
    if seed is not None and "seed" in inspect.signature(cls).parameters:
        return cls(seed=int(seed))
    return cls()


class _CallMeter:
    """The CPU time of a slot's calls so far (the game loop's CpuMeter reads it before and after a
    move, so the difference is that call's thread CPU time)."""

    def __init__(self) -> None:
        self.total_ns = 0

    def cpu_ns(self) -> int | None:
        return self.total_ns

    def close(self) -> None:
        pass


# A bot in the game's thread is stopped past its hard cap by this signal, sent to the main thread
# by a watchdog thread that looks at the call in progress every WATCH_S: a signal of its own (not
# SIGALRM, which pytest-timeout and others use), so nothing else's timers are touched, and a
# call costs two attribute writes.
STOP_SIGNAL = signal.SIGRTMIN + 7 if hasattr(signal, "SIGRTMIN") else signal.SIGUSR2
WATCH_S = 0.05


class _Watchdog:
    """The main thread's in-process call in progress and its hard deadline (see STOP_SIGNAL)."""

    def __init__(self) -> None:
        self.deadline: float | None = None  # time.monotonic() past which the call is stopped
        self.fired = False
        signal.signal(STOP_SIGNAL, self._on_signal)
        threading.Thread(target=self._watch, name="inprocess-watchdog", daemon=True).start()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.deadline is not None and self.fired:  # a signal after the call returned is dropped
            self.deadline = None
            raise _HardCapExceeded

    def _watch(self) -> None:
        main = threading.main_thread().ident
        assert main is not None
        while True:
            time.sleep(WATCH_S)
            deadline = self.deadline
            if deadline is not None and not self.fired and time.monotonic() > deadline:
                self.fired = True
                signal.pthread_kill(main, STOP_SIGNAL)


_watchdog: _Watchdog | None = None


def _main_watchdog() -> _Watchdog | None:
    """The watchdog, started with the first in-process bot in the main thread; None elsewhere
    (in another thread nothing can stop a call)."""
    global _watchdog
    if threading.current_thread() is not threading.main_thread():
        return None
    if _watchdog is None:
        _watchdog = _Watchdog()
    return _watchdog


class _Abandoned(Exception):
    """A call that did not return within its hard cap."""

    def __init__(self, how: str) -> None:
        super().__init__(how)
        self.how = how


class InProcessConnection:
    """A bot object answering as a stream would (see the module docstring); ``broken`` once a call
    was abandoned."""

    def __init__(self, bot: Any, answers: ModuleType, clock: Clock, meter: _CallMeter) -> None:
        self.bot = bot
        self._answers = answers  # casino_bot.answer
        self._clock = clock
        self._meter = meter
        self.broken: StreamFailure | None = None
        self._threaded_bot = bool(getattr(bot, "threaded", True))
        # decided once: a connection stays on the thread it was made on
        self._watchdog = None if self._threaded_bot else _main_watchdog()

    def begin_game(self) -> None:
        """Nothing to forget: answers are matched to turns by construction."""

    async def _call(self, fn: Callable[[], T], cap_s: float) -> T:
        """``fn()`` in this thread or (a ``threaded`` bot) a daemon thread of its own, its thread
        CPU time added to the meter; ``_Abandoned`` past ``cap_s`` real seconds."""
        if self._threaded_bot:
            return await self._threaded(fn, cap_s)
        watchdog = self._watchdog
        cpu = time.thread_time_ns()
        if watchdog is not None:
            watchdog.fired = False
            watchdog.deadline = time.monotonic() + cap_s
        try:
            return fn()
        except _HardCapExceeded:
            raise _Abandoned("interrupted") from None
        finally:
            if watchdog is not None:
                watchdog.deadline = None
            self._meter.total_ns += time.thread_time_ns() - cpu

    async def _threaded(self, fn: Callable[[], T], cap_s: float) -> T:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        meter = self._meter

        def settle(value: T | None, error: BaseException | None) -> None:
            if not done.done():
                if error is not None:
                    done.set_exception(error)
                else:
                    done.set_result(value)  # type: ignore[arg-type]

        def run() -> None:
            cpu = time.thread_time_ns()
            value: T | None = None
            error: BaseException | None = None
            try:
                value = fn()
            except BaseException as exc:  # noqa: BLE001 (handed to the caller as it is)
                error = exc
            meter.total_ns += time.thread_time_ns() - cpu
            try:
                loop.call_soon_threadsafe(settle, value, error)
            except RuntimeError:  # the loop is closed: the call was long abandoned
                pass

        threading.Thread(target=run, name="inprocess-bot", daemon=True).start()
        try:
            return await asyncio.wait_for(asyncio.shield(done), cap_s)
        except TimeoutError:
            raise _Abandoned("left running in its thread") from None

    def _cap_s(self, timeout_s: float) -> float:
        return HARD_CAP_FACTOR * self._clock.real_wait_s(timeout_s) + HARD_CAP_EXTRA_S

    async def send(self, request: bot_pb2.PlayRequest, timeout_s: float) -> StreamFailure | None:
        """An event for the bot's hooks (GameStart, PlayMade, GameEnd); what a hook raises is logged
        by the SDK, as over gRPC. A hook past the hard cap breaks the connection."""
        if self.broken:
            return self.broken
        event = request.WhichOneof("event")
        hook = {"game_start": "on_game_start", "play_made": "on_play", "game_end": "on_game_end"}.get(event or "")
        if hook is None:
            return None
        fn, arg, call_hook = getattr(self.bot, hook), getattr(request, event or ""), self._answers.call_hook
        try:
            await self._call(lambda: call_hook(fn, arg), self._cap_s(timeout_s))
        except _Abandoned as exc:
            self.broken = StreamFailure(F.FAILURE_KIND_TIMEOUT, f"its {hook} did not return within "
                                        f"{self._cap_s(timeout_s):.1f} s and was abandoned ({exc.how})")
            return self.broken
        return None

    async def ask_move(self, request: bytes, turn_id: int, timeout_s: float,
                       give_up: Callable[[], str | None] | None = None,
                       poll_s: float = 0.01) -> tuple[bot_pb2.MoveChoice | StreamFailure, float]:
        """The bot's answer to the turn in ``request`` (a serialized PlayRequest) and the seconds it
        took; an answer later than ``timeout_s`` is a TIMEOUT judged once the call returned (it
        cannot be pre-empted; ``give_up`` is not polled for the same reason: the CPU limit is
        judged on the call's CPU time afterwards)."""
        if self.broken:
            return self.broken, 0.0
        turn = bot_pb2.PlayRequest.FromString(request).turn
        answers, bot = self._answers, self.bot

        def answer() -> bot_pb2.MoveChoice:
            answers.start_turn(bot)
            return answers.decide(bot, turn)

        cap_s = self._cap_s(timeout_s)
        start = self._clock.now()
        try:
            choice = await self._call(answer, cap_s)
        except _Abandoned as exc:
            self.broken = StreamFailure(
                F.FAILURE_KIND_TIMEOUT, f"no answer within the in-process hard cap of {cap_s:.1f} s (twice the "
                f"move's {timeout_s * 1000:.0f} ms plus {HARD_CAP_EXTRA_S:.0f} s): the call was abandoned "
                f"({exc.how}); the bot answers no more turns this game")
            return self.broken, self._clock.now() - start
        elapsed = self._clock.now() - start
        if elapsed > timeout_s:
            return StreamFailure(F.FAILURE_KIND_TIMEOUT, f"answered after {elapsed * 1000:.0f} ms, limit "
                                 f"{timeout_s * 1000:.0f} ms (an in-process call runs to its end: "
                                 "judged when it returned)", preview(choice)), elapsed
        return choice, elapsed

    async def close(self) -> None:
        self.broken = self.broken or StreamFailure(F.FAILURE_KIND_DISCONNECT, "closed")


class InProcessSlot:
    """One in-process bot of a match, in a BotSlot's place (same attributes the game loop reads)."""

    def __init__(self, index: int, endpoint: BotEndpoint, logs_dir: Path, label: str = "", name: str = "",
                 clock: Clock = MONOTONIC) -> None:
        self.index = index
        self.clock = clock
        self.endpoint = endpoint
        self.label = label or f"bot{index}"
        self.given_name = name
        self.hello_name = ""
        self.version = ""
        self.play_events = False
        self.log_path = logs_dir / f"{self.label}.log"  # never written: its output is this process's
        self.process = None  # no process of its own: a broken "stream" is never a crash
        self.connection: InProcessConnection | None = None
        self.starts = 0
        self.failed_starts = 0
        self.startup_failure: StreamFailure | None = None
        self.needs_restart = False
        self._meter = _CallMeter()

    @property
    def name(self) -> str:
        return self.given_name or self.hello_name or self.label

    @property
    def cpu_meter(self) -> _CallMeter:
        """Its calls' thread CPU time (see _CallMeter)."""
        return self._meter

    @property
    def ready(self) -> bool:
        return self.connection is not None and self.connection.broken is None

    async def ensure_ready(self, handshake: bot_pb2.Handshake, control: TimeControl) -> StreamFailure | None:
        """Reuse the object, or make a new one (the first time, after a timeout or an abandoned
        call) and give it the handshake; None when ready."""
        if self.ready and not self.needs_restart:
            return None
        if self.failed_starts >= STARTUP_ATTEMPTS:
            return self.startup_failure
        await self.shutdown()
        self.needs_restart = False
        self.starts += 1
        try:
            cls = load_bot_class(self.endpoint)
            answers = importlib.import_module("casino_bot.answer")
            bot = construct(cls, self.endpoint)
        except Exception as exc:  # noqa: BLE001 (whatever the file does wrong is its start-up failure)
            return self._startup_failed(f"cannot load {self.endpoint.spec!r}: {type(exc).__name__}: {exc}")
        connection = InProcessConnection(bot, answers, self.clock, self._meter)
        try:
            hello = await connection._call(lambda: answers.hello(bot, handshake),
                                           connection._cap_s(control.startup_time_ms / 1000))
        except _Abandoned:
            return self._startup_failed("handshake failed: no Hello within the hard cap")
        except Exception as exc:  # noqa: BLE001 (a bot's name or version property that raises)
            return self._startup_failed(f"handshake failed: {type(exc).__name__}: {exc}")
        self.connection = connection
        self.hello_name = clean_name(hello.name)
        self.version = clean_version(hello.version)
        self.play_events = hello.play_events
        self.failed_starts = 0
        log.info("bot %s ready in-process: %s %s from %s", self.label, self.name, self.version, self.endpoint.inprocess)
        return None

    def platform_fault(self) -> None:
        """Nothing of the platform stands between the game and an in-process bot (no process, log
        or sandbox of its own): a failure in its call is the bot's."""
        return None

    def _startup_failed(self, reason: str) -> StreamFailure:
        self.failed_starts += 1
        self.startup_failure = StreamFailure(F.FAILURE_KIND_STARTUP, reason)
        log.warning("bot %s (%s) failed to start: %s", self.label, self.endpoint.spec, reason)
        return self.startup_failure

    async def shutdown(self) -> None:
        """Drop the object (an abandoned call's thread, if any, is left to finish on its own)."""
        if self.connection is not None:
            connection, self.connection = self.connection, None
            await connection.close()


def new_slot(index: int, endpoint: BotEndpoint, logs_dir: Path, socket_dir: Path, label: str = "", name: str = "",
             clock: Clock = MONOTONIC, launcher: Any = None) -> Any:
    """A seat for ``endpoint``: an InProcessSlot for an in-process bot, else a BotSlot started by
    ``launcher`` (its default when None)."""
    if endpoint.inprocess:
        return InProcessSlot(index, endpoint, logs_dir, label=label, name=name, clock=clock)
    from .slot import BotSlot  # noqa: PLC0415 (beside, not below: the gRPC slot)
    kwargs = {"launcher": launcher} if launcher is not None else {}
    return BotSlot(index, endpoint, logs_dir, socket_dir, label=label, name=name, clock=clock, **kwargs)
