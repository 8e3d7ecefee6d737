"""A worker's pause after a platform fault: an ``arena worker`` whose game raised PlatformFault (a
full disk under its bot logs, no file descriptors left, a sandbox that would not start) takes no
more games until the condition clears, so that the other workers play them (the faulted game's
job is retried, claimed.py put the game back to pending).

The worker says so in one line on stderr ("arena worker: paused: disk: ...; trying again in 5 s"),
then checks the condition (``still_failing``) after ``pause_s``, doubling the wait after each
failed check up to ``MAX_WAIT_FACTOR`` times it, and says one line when it resumes. While it is
paused its job manager fetches nothing (``PausingJobManager``; its heartbeat goes on, so its
running jobs are not taken for stalled), ``arena_worker_paused`` is 1, and its row in
``worker_pauses`` (arena/store/pauses.py) shows it in ``arena status``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from procrastinate import jobs

from referee.errors import PlatformFault

from ..metrics import WORKER_PAUSED, WORKER_PAUSES
from ..store.models import utcnow
from ..store.outage import ping
from ..store.pauses import clear_pause, put_pause
from ..store.store import Store, first_line
from .job_status import OnLost, SteadyJobManager

log = logging.getLogger(__name__)
PAUSE_S = 5.0  # the first wait before a paused worker checks its condition again
MAX_WAIT_FACTOR = 12  # the longest wait between two checks: this many times the first (60 s by default)
PROBE_BYTES = 64 << 10  # disk: a file this large written and synced in the bot logs' folder
PROBE_DESCRIPTORS = 64  # descriptors: this many opened at once
PROBE_MEMORY = 64 << 20  # memory: this much allocated


def still_failing(condition: str, folders: Iterable[Path]) -> str | None:
    """Why ``condition`` still holds on this machine (one line), or None when its check passes:
    disk, a file of PROBE_BYTES written and synced in each of ``folders``; descriptors,
    PROBE_DESCRIPTORS opened; memory, PROBE_MEMORY allocated. The sandbox and a runtime have no
    check here: the next game is theirs (the database's is a ping: ``WorkerPause``)."""
    try:
        if condition == "disk":
            for folder in folders:
                folder.mkdir(parents=True, exist_ok=True)
                fd, name = tempfile.mkstemp(prefix=".arena-check-", dir=folder)
                try:
                    with os.fdopen(fd, "wb") as probe:
                        probe.write(bytes(PROBE_BYTES))
                        probe.flush()
                        os.fsync(probe.fileno())
                finally:
                    os.unlink(name)
        elif condition == "descriptors":
            opened: list[int] = []
            try:
                for _ in range(PROBE_DESCRIPTORS):
                    opened.append(os.open(os.devnull, os.O_RDONLY))
            finally:
                for fd in opened:
                    os.close(fd)
        elif condition == "memory":
            block = bytearray(PROBE_MEMORY)
            del block
    except OSError as exc:
        return f"{exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''}"
    except MemoryError:
        return "out of memory"
    return None


def say(line: str) -> None:
    """One line of the worker's on stderr (shown without -v, like its other notices)."""
    sys.stderr.write(f"arena worker: {line}\n")
    sys.stderr.flush()


class WorkerPause:
    """One worker's pause (module docstring). ``enter`` on a game's platform fault; ``paused``
    while the worker must fetch no job; ``close`` when the worker stops."""

    def __init__(self, name: str, folders: Callable[[], list[Path]], store: Callable[[], Store | None],
                 queue_worker_id: Callable[[], int | None], pause_s: float = PAUSE_S,
                 tell: Callable[[str], None] = say) -> None:
        self.name = name
        self.folders = folders  # where the disk check writes: the worker's bot logs and archive cache
        self.store = store
        self.queue_worker_id = queue_worker_id
        self.pause_s = pause_s
        self.tell = tell
        self._fault: PlatformFault | None = None
        self._watch: asyncio.Task[None] | None = None

    @property
    def paused(self) -> bool:
        return self._fault is not None

    def enter(self, fault: PlatformFault) -> None:
        """Take no more games until ``fault``'s condition clears (a second fault while paused only
        ends its own game). Call it on the worker's event loop."""
        if self._fault is not None:
            return
        self._fault = fault
        WORKER_PAUSED.set(1)
        WORKER_PAUSES.labels(fault.condition).inc()
        self.tell(f"paused: {fault.condition}: {first_line(fault)}; trying again in {self.pause_s:g} s")
        self._watch = asyncio.create_task(self._until_clear(fault), name="worker-pause")

    async def _until_clear(self, fault: PlatformFault) -> None:
        since, began = utcnow(), time.monotonic()
        wait = self.pause_s
        await self._write(lambda store: put_pause(store, self.name, self.queue_worker_id(), fault.condition,
                                                  first_line(fault), since, wait))
        while True:
            await asyncio.sleep(wait)
            why = await asyncio.to_thread(self._still_failing, fault.condition)
            if why is None:
                break
            wait = min(wait * 2, self.pause_s * MAX_WAIT_FACTOR)
            log.debug("still paused: %s: %s; trying again in %g s", fault.condition, why, wait)
            await self._write(lambda store, wait=wait: put_pause(store, self.name, self.queue_worker_id(),  # type: ignore[misc]
                                                                 fault.condition, first_line(fault), since, wait))
        await self._write(lambda store: clear_pause(store, self.name))
        self._fault = None
        WORKER_PAUSED.set(0)
        self.tell(f"resumed: {fault.condition} cleared after {time.monotonic() - began:.0f} s; taking games again")

    def _still_failing(self, condition: str) -> str | None:
        """``still_failing``, and for the database a round trip to it: a paused worker fetches no
        job, so no game of its could be the database's check (an outage itself is the worker's
        outage loop's, store/outage.py; this is a fault a game reported)."""
        if condition != "database":
            return still_failing(condition, self.folders())
        store = self.store()
        if store is None:
            return None
        try:
            ping(store.engine)
        except Exception as exc:  # noqa: BLE001 - any failure of the round trip: still paused
            return first_line(exc)
        return None

    async def _write(self, write: Callable[[Store], None]) -> None:
        """A pause row's write, off the loop; its failure is logged (status shows less, the pause holds)."""
        store = self.store()
        if store is None:
            return
        try:
            await asyncio.to_thread(write, store)
        except Exception as exc:  # noqa: BLE001 - `arena status` misses the pause; the worker still holds it
            log.warning("could not write this worker's pause for arena status: %s", first_line(exc))

    async def close(self) -> None:
        """The worker stops: no more checks, and its pause row (if any) goes."""
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
            self._watch = None
        if self._fault is not None:
            self._fault = None
            WORKER_PAUSED.set(0)
            await self._write(lambda store: clear_pause(store, self.name))


class PausingJobManager(SteadyJobManager):
    """The worker's job manager: fetches no job while its worker is paused (procrastinate then
    waits for a new job's notice or its poll, and asks again)."""

    def __init__(self, connector: object, on_lost: OnLost, pause: WorkerPause) -> None:
        super().__init__(connector, on_lost)
        self.pause = pause

    async def fetch_job(self, queues: Iterable[str] | None, worker_id: int) -> jobs.Job | None:
        if self.pause.paused:
            return None
        return await super().fetch_job(queues, worker_id)


__all__ = ["PAUSE_S", "PausingJobManager", "WorkerPause", "still_failing"]
