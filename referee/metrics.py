"""The referee's Prometheus metrics: every name, label and bucket in one place (docs/operations.md).

They are recorded wherever a game is played (``referee serve``, ``arena run``, ``arena worker``)
into prometheus_client's process-wide registry, and served only where a command is given
``--metrics-listen HOST:PORT``. A finished game is observed once, from its result and record
(``observe_game``), so the hot path of a play pays nothing for them. Per-bot series are bounded:
``BotSeries`` keeps those of the most recently seen bots and removes the rest.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from .errors import ListenError, PlatformFault

if TYPE_CHECKING:
    from prometheus_client import Counter, Gauge, Histogram

T = TypeVar("T")

# Move times: a fast bot answers in well under a millisecond, a search bot near its limit (100 ms
# to seconds); the buckets cover both ends.
MOVE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
GAME_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
LAG_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
RPC_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0)
MAX_BOTS = 256  # bots whose per-bot series are kept (the least recently seen beyond are removed)
LAG_INTERVAL_S = 0.25  # how often the event loop's lag is sampled


def _define() -> dict[str, Any]:
    """Every referee metric, made and registered in prometheus_client's registry at once."""
    from prometheus_client import Counter, Gauge, Histogram

    return {
        "GAMES_STARTED": Counter("referee_games_started", "Games whose play began."),
        "GAMES_FINISHED": Counter("referee_games_finished", "Games with a result, by termination and reason.",
                                  ["termination", "reason"]),
        "GAMES_FAILED": Counter("referee_games_failed", "Games that ended without a result (an error of the "
                                "referee or the platform; 'cancelled' when their caller stopped them), by error.",
                                ["error"]),
        "GAME_SECONDS": Histogram("referee_game_duration_seconds", "Wall time of a finished game.", ["termination"],
                                  buckets=GAME_BUCKETS),
        "MOVES_JUDGED": Counter("referee_moves_judged", "Plays in finished games' records a bot was asked for: its "
                                "move, or the random move substituted after its failure.", ["bot"]),
        "FORCED_PLAYS": Counter("referee_forced_plays", "Plays in finished games the referee made itself: the "
                                "seat's only legal move, not asked for (auto_forced)."),
        "MOVE_SECONDS": Histogram("referee_move_seconds", "Wall time per move, as the game's record has it.",
                                  ["bot"], buckets=MOVE_BUCKETS),
        "MOVE_CPU_SECONDS": Histogram("referee_move_cpu_seconds", "CPU time per move, where it was measured.",
                                      ["bot"], buckets=MOVE_BUCKETS),
        "BOT_FAILURES": Counter("referee_bot_failures", "Failures in finished games, by bot and kind.",
                                ["bot", "kind"]),
        "BOTS_RUNNING": Gauge("referee_bots_running", "Bot processes running, started by this process."),
        "SANDBOX_KILLS": Counter("referee_sandbox_kills", "Bot processes the sandbox or the clock ended, by reason: "
                                 "memory (OOM kills), pids (a fork refused at the process limit), time (restarted "
                                 "after a missed deadline).", ["reason"]),
        "EVENT_LOOP_LAG": Histogram("referee_event_loop_lag_seconds", f"How late a {LAG_INTERVAL_S} s asyncio "
                                    "sleep wakes up.", buckets=LAG_BUCKETS),
        "GRPC_HANDLED": Counter("grpc_server_handled", "Calls the gRPC server finished, by method and status code.",
                                ["grpc_service", "grpc_method", "grpc_code"]),
        "GRPC_SECONDS": Histogram("grpc_server_handling_seconds", "Latency of the gRPC server's calls.",
                                  ["grpc_service", "grpc_method"], buckets=RPC_BUCKETS),
    }


class _Metric:
    """One of the metrics of ``_define`` by name: the metric itself is made (with all the others,
    and prometheus_client imported) the first time it is used, so a command that records none,
    e.g. ``arena --help`` or ``referee replay``, never loads prometheus_client (docs/benchmarks.md,
    "Commands that answer at once"). Every attribute is the metric's."""

    def __init__(self, name: str) -> None:
        self._referee_key = name  # not a name the metric itself has

    def __getattr__(self, attribute: str) -> Any:
        return getattr(registry()[self._referee_key], attribute)

    def __repr__(self) -> str:
        return f"<referee metric {self._referee_key}>"


_MADE: dict[str, Any] = {}
_MAKING = threading.Lock()


def registry() -> dict[str, Any]:
    """The referee's metrics by name, made on the first call (from any thread, once)."""
    if not _MADE:
        with _MAKING:
            if not _MADE:
                _MADE.update(_define())
    return _MADE


# the metrics by name, as the code records them (each a _Metric standing for the real one)
GAMES_STARTED: Counter = cast("Counter", _Metric("GAMES_STARTED"))
GAMES_FINISHED: Counter = cast("Counter", _Metric("GAMES_FINISHED"))
GAMES_FAILED: Counter = cast("Counter", _Metric("GAMES_FAILED"))
GAME_SECONDS: Histogram = cast("Histogram", _Metric("GAME_SECONDS"))
MOVES_JUDGED: Counter = cast("Counter", _Metric("MOVES_JUDGED"))
FORCED_PLAYS: Counter = cast("Counter", _Metric("FORCED_PLAYS"))
MOVE_SECONDS: Histogram = cast("Histogram", _Metric("MOVE_SECONDS"))
MOVE_CPU_SECONDS: Histogram = cast("Histogram", _Metric("MOVE_CPU_SECONDS"))
BOT_FAILURES: Counter = cast("Counter", _Metric("BOT_FAILURES"))
BOTS_RUNNING: Gauge = cast("Gauge", _Metric("BOTS_RUNNING"))
SANDBOX_KILLS: Counter = cast("Counter", _Metric("SANDBOX_KILLS"))
EVENT_LOOP_LAG: Histogram = cast("Histogram", _Metric("EVENT_LOOP_LAG"))
GRPC_HANDLED: Counter = cast("Counter", _Metric("GRPC_HANDLED"))
GRPC_SECONDS: Histogram = cast("Histogram", _Metric("GRPC_SECONDS"))
PER_BOT = (MOVES_JUDGED, MOVE_SECONDS, MOVE_CPU_SECONDS, BOT_FAILURES)


class BotSeries:
    """The bots that have per-bot series, least recently seen first; beyond ``cap`` the oldest
    bot's series are removed from every per-bot metric, so a ladder that sees thousands of bots
    over its life keeps a bounded number of series (a removed bot's series start again at zero)."""

    def __init__(self, cap: int = MAX_BOTS) -> None:
        self.cap = cap
        self._seen: OrderedDict[str, set[str]] = OrderedDict()  # bot -> failure kinds it has series for
        self._lock = threading.Lock()

    def touch(self, bots: Sequence[str], kinds: Sequence[tuple[str, str]] = ()) -> None:
        """``bots`` played a game now; ``kinds``: the (bot, kind) failure series it added."""
        with self._lock:
            for bot in bots:
                self._seen.setdefault(bot, set())
                self._seen.move_to_end(bot)
            for bot, kind in kinds:
                self._seen.setdefault(bot, set()).add(kind)
            while len(self._seen) > self.cap:
                self._remove(*self._seen.popitem(last=False))

    def keep_only(self, bots: Sequence[str]) -> None:
        """Remove the series of every bot not in ``bots`` (a run that knows its tournament's bots)."""
        with self._lock:
            for bot in [b for b in self._seen if b not in set(bots)]:
                self._remove(bot, self._seen.pop(bot))

    def __contains__(self, bot: str) -> bool:
        return bot in self._seen

    @staticmethod
    def _remove(bot: str, kinds: set[str]) -> None:
        for metric in (MOVES_JUDGED, MOVE_SECONDS, MOVE_CPU_SECONDS):
            try:
                metric.remove(bot)
            except KeyError:
                pass
        for kind in kinds:
            try:
                BOT_FAILURES.remove(bot, kind)
            except KeyError:
                pass


BOTS = BotSeries()


def failure_kind_label(kind_name: str) -> str:
    """``FAILURE_KIND_ILLEGAL_MOVE`` -> ``illegal_move``."""
    return kind_name.removeprefix("FAILURE_KIND_").lower()


def observe_game(bots: Sequence[str], termination: str, reason: str, duration_s: float,
                 timings_us: Sequence[Sequence[int]], cpu_us: Sequence[int | None],
                 failures: Sequence[tuple[int, str]], series: BotSeries = BOTS, forced: Sequence[int] = ()) -> None:
    """One finished game: ``bots`` by seat, its termination (``normal``/``forfeit``) and reason,
    its plays' ``[seat, wall us]`` and CPU us, its failures as (seat, kind label), and the
    indices of its forced plays (no bot was asked: counted apart, not timed)."""
    GAMES_FINISHED.labels(termination, reason).inc()
    GAME_SECONDS.labels(termination).observe(duration_s)
    kinds = [(bots[seat], kind) for seat, kind in failures]
    series.touch(bots, kinds)
    wall = [MOVE_SECONDS.labels(bot) for bot in bots]
    cpu = [MOVE_CPU_SECONDS.labels(bot) for bot in bots]
    plays = [0] * len(bots)
    skip = set(forced)
    for i, ((seat, us), cpu_time) in enumerate(zip(timings_us, cpu_us)):
        if i in skip:
            continue
        plays[seat] += 1
        wall[seat].observe(us / 1e6)
        if cpu_time is not None:
            cpu[seat].observe(cpu_time / 1e6)
    for seat, bot in enumerate(bots):
        if plays[seat]:
            MOVES_JUDGED.labels(bot).inc(plays[seat])
    for bot, kind in kinds:
        BOT_FAILURES.labels(bot, kind).inc()
    if skip:
        FORCED_PLAYS.inc(len(skip))


def error_label(exc: BaseException) -> str:
    """The ``error`` label of a game that ended without a result: ``platform_<condition>`` for a
    PlatformFault (``platform_disk``, ``platform_sandbox``...), ``cancelled``, else the class name."""
    if isinstance(exc, PlatformFault):
        return f"platform_{exc.condition}"
    return "cancelled" if isinstance(exc, asyncio.CancelledError) else type(exc).__name__


# --- serving ------------------------------------------------------------------------------------


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9100`` for IPv6) -> (host, port); port 0 picks a free one."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ListenError(f"--metrics-listen must be HOST:PORT with a port 0..65535 (e.g. 127.0.0.1:9100), "
                          f"not {text!r}")
    return host.removeprefix("[").removesuffix("]"), int(port)


def serve_metrics(listen: str, prog: str) -> str:
    """Serve the registry at ``http://HOST:PORT/metrics`` from a thread and say where on stderr,
    once; ListenError for an address that cannot be listened on (malformed, taken, not this
    machine's)."""
    from prometheus_client import start_http_server

    host, port = parse_listen(listen)
    registry()  # every metric is served from the start, a game played or not
    try:
        server, _thread = start_http_server(port, addr=host)
    except OSError as exc:  # in use, or an address this machine does not have
        raise ListenError(f"cannot serve metrics on {listen}: {exc.strerror or exc}") from None
    bound = server.server_address[1]
    url = f"http://{f'[{host}]' if ':' in host else host}:{bound}/metrics"
    sys.stderr.write(f"{prog}: metrics at {url}\n")
    sys.stderr.flush()
    return url


async def watch_event_loop(interval_s: float = LAG_INTERVAL_S) -> None:
    """Sample how late the running loop wakes from a sleep, for ever (cancel it to stop): a loop
    blocked by synchronous work shows here before it shows as missed deadlines."""
    while True:
        start = time.perf_counter()
        await asyncio.sleep(interval_s)
        EVENT_LOOP_LAG.observe(max(0.0, time.perf_counter() - start - interval_s))


async def with_loop_watch(main: Awaitable[T]) -> T:
    """Await ``main`` with ``watch_event_loop`` running beside it."""
    watcher = asyncio.ensure_future(watch_event_loop())
    try:
        return await main
    finally:
        watcher.cancel()
