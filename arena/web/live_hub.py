"""The live games' event streams, shared: one poll per followed game, whoever follows it, and caps
on how many streams are open.

Every stream of game (tournament, number) subscribes to one ``Watch``: a task that reads the
game's live row (``Store.live_plays``) every ``events_poll_s`` and wakes the subscribers when
what it read changed. The first subscriber starts it, the last one to leave stops it, and it
stops by itself once the game is stored or failed (or is gone). So 300 viewers of one game cost
the database one small read per interval, not 300; ``LiveHub.reads`` counts the reads made.

The caps (``WebSettings.events_per_client``, ``events_total``) are counted here too: a stream
takes a ``Ticket`` from ``admit`` before it starts (429 past the client's cap, 503 past the
server's, both with Retry-After) and gives it back when it ends. A client is its address as
the app sees it: behind a trusted proxy, the forwarded client (arena/web/guard.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass, field

from starlette.exceptions import HTTPException

from ..store.models import GameStatus
from ..store.store import Store
from .settings import EVENTS_RETRY_AFTER_S, WebSettings

log = logging.getLogger("arena.web.live")
SETTLED = (GameStatus.DONE.value, GameStatus.FAILED.value)
Progress = tuple[str, int | None]  # a game's status and its plays so far (Store.live_plays)


@dataclass(eq=False)
class Watch:
    """One followed game: what its last read said (``progress``; None: no such game), and an
    event set when that changes (a new one each time: a subscriber keeps the one it waits on)."""

    key: tuple[int, int]
    progress: Progress | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)  # the first read is done
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    failed: bool = False  # the reads failed (the database): the streams end, browsers reconnect
    ended: bool = False  # nothing more will be read (settled, gone or failed)
    subscribers: int = 0
    task: asyncio.Task[None] | None = None

    def _publish(self, progress: Progress | None) -> None:
        changed = not self.ready.is_set() or progress != self.progress
        self.progress = progress
        self.ready.set()
        if changed:
            self.changed.set()
            self.changed = asyncio.Event()

    def _fail(self) -> None:
        self.failed = self.ended = True
        self.ready.set()
        self.changed.set()


@dataclass(eq=False)
class Ticket:
    """One admitted stream's place under the caps; ``release`` (idempotent) gives it back."""

    hub: LiveHub
    client: str
    released: bool = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.hub._release(self.client)


class LiveHub:
    """Every followed game's watch, and the open streams by client (see the module docstring)."""

    def __init__(self, settings: WebSettings) -> None:
        self.settings = settings
        self.watches: dict[tuple[int, int], Watch] = {}
        self.streams: Counter[str] = Counter()  # open streams by client
        self.total = 0
        self.reads = 0  # live-row reads made by every watch so far

    def admit(self, client: str) -> Ticket:
        """A place for one more stream of ``client``, or an HTTPException saying which cap is full."""
        retry = {"Retry-After": str(EVENTS_RETRY_AFTER_S)}
        if self.streams[client] >= self.settings.events_per_client:
            raise HTTPException(429, f"too many live game streams from your address at once (at most "
                                     f"{self.settings.events_per_client}): close one, or try again later",
                                headers=retry)
        if self.total >= self.settings.events_total:
            raise HTTPException(503, f"this server follows as many live game streams as it may "
                                     f"({self.settings.events_total}): try again later", headers=retry)
        self.streams[client] += 1
        self.total += 1
        return Ticket(self, client)

    def _release(self, client: str) -> None:
        self.streams[client] -= 1
        if self.streams[client] <= 0:
            del self.streams[client]
        self.total -= 1

    def subscribe(self, store: Store, tid: int, number: int) -> Watch:
        """The watch of game ``number`` of tournament ``tid``, started if nobody follows it yet;
        every subscribe is paired with one ``unsubscribe``."""
        key = (tid, number)
        watch = self.watches.get(key)
        if watch is None or watch.ended:
            watch = Watch(key)
            watch.task = asyncio.get_running_loop().create_task(self._poll(store, watch),
                                                                name=f"live game {tid}/{number}")
            self.watches[key] = watch
        watch.subscribers += 1
        return watch

    def unsubscribe(self, watch: Watch) -> None:
        """One subscriber less; the last one stops the watch's reads."""
        watch.subscribers -= 1
        if watch.subscribers <= 0:
            self._drop(watch)
            if watch.task is not None:
                watch.task.cancel()

    def _drop(self, watch: Watch) -> None:
        if self.watches.get(watch.key) is watch:
            del self.watches[watch.key]

    async def _poll(self, store: Store, watch: Watch) -> None:
        tid, number = watch.key
        try:
            while True:
                self.reads += 1
                progress = await asyncio.to_thread(store.live_plays, tid, number)
                watch._publish(progress)
                if progress is None or progress[0] in SETTLED:
                    watch.ended = True  # a later subscriber starts a new watch (the game may run again)
                    self._drop(watch)
                    return
                await asyncio.sleep(self.settings.events_poll_s)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the database: every stream of the game ends, and says so in the log
            log.warning("cannot read live game %d/%d: %s", tid, number, str(exc).splitlines()[0] if str(exc) else exc)
            watch._fail()
            self._drop(watch)

    def close(self) -> None:
        """Stop every watch (the app is shutting down)."""
        for watch in list(self.watches.values()):
            if watch.task is not None:
                watch.task.cancel()
        self.watches.clear()
