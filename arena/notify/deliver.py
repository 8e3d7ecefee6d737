"""The deliverer: claims due deliveries from the outbox (arena/store/notices.py), POSTs each
event's JSON to its webhook, signed, and marks it delivered, or due again after a backoff that
doubles, or given up after the last attempt. It runs on a thread of its own (``arena notify
deliver``, and beside ``arena web --submit``), never where games are played.

At least once: a delivery is marked after the receiver's 2xx, so a deliverer that dies between the
two leaves it claimed until its lease ends, and another sends it again. Every delivery of one event
carries the event's id, for the receiver to drop a repeat."""

from __future__ import annotations

import http.client
import json
import logging
import socket
import ssl
import threading
import uuid
from dataclasses import dataclass
from datetime import timedelta

from ..errors import one_line
from ..store import notices
from ..store.models import iso_utc, utcnow
from ..store.store import Store
from .signing import HEADER, signature
from .targets import TargetRefused, check_url, resolve

log = logging.getLogger("arena.notify")
PAYLOAD_VERSION = 1  # of the JSON a webhook receives (docs/notifications.md)
ANSWER_BYTES = 4096  # of a receiver's answer read (it is not used; reading a little lets the connection end cleanly)


@dataclass(frozen=True)
class DeliverySettings:
    """How hard the deliverer tries (``arena notify deliver``'s options)."""

    timeout_s: float = 5.0  # connecting and the receiver's answer, each
    attempts: int = 6  # then the delivery is given up
    backoff_s: float = 10.0  # the wait before the first retry, doubled for each next one
    max_backoff_s: float = 3600.0
    lease_s: float = 60.0  # a claim's length: a deliverer that died is replaced after it
    poll_s: float = 2.0  # how often the outbox is looked at when nothing is due
    batch: int = 20  # deliveries claimed at a time

    def __post_init__(self) -> None:
        if self.lease_s <= 2 * self.timeout_s:
            raise ValueError("a claim's lease must be longer than twice the delivery timeout")


def body_of(due: notices.Due) -> bytes:
    """What a webhook receives for ``due``: the event as versioned JSON."""
    return json.dumps({"version": PAYLOAD_VERSION, "id": due.event_id, "event": due.event,
                       "created_at": iso_utc(due.created_at), "data": due.data}, sort_keys=True).encode()


class _Pinned(http.client.HTTPConnection):
    """An HTTP connection to the address the target check resolved (the Host header keeps the name)."""

    address = ""

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)


class _PinnedTLS(http.client.HTTPSConnection):
    address = ""

    def connect(self) -> None:
        sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self.host)


def post(url: str, body: bytes, headers: dict[str, str], timeout_s: float, allow_private: bool) -> int:
    """POST ``body`` to ``url`` (no redirects followed); the answer's status. TargetRefused for a URL
    the arena does not send to, OSError and http.client's errors for a receiver that fails."""
    scheme, host, port, path = check_url(url)
    address = resolve(host, port, allow_private)
    connection = (_PinnedTLS if scheme == "https" else _Pinned)(host, port, timeout=timeout_s)
    connection.address = address
    try:
        connection.request("POST", path, body=body, headers=headers)
        answer = connection.getresponse()
        answer.read(ANSWER_BYTES)
        return answer.status
    finally:
        connection.close()


class Deliverer:
    """Sends the outbox's due deliveries of one database; ``run_once`` a batch, ``start`` a thread."""

    def __init__(self, store: Store, settings: DeliverySettings = DeliverySettings()) -> None:
        self.store = store
        self.settings = settings
        self.owner = uuid.uuid4().hex
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_once(self) -> int:
        """Claim a batch of due deliveries and try each once; how many were delivered."""
        with self.store.engine.begin() as conn:
            allow_private = notices.settings(conn).allow_private
            claimed = notices.claim(conn, self.owner, timedelta(seconds=self.settings.lease_s), self.settings.batch)
        sent = 0
        for due in claimed:
            if self._stop.is_set():
                break  # the rest stay claimed until their lease ends, then are due again
            sent += self._deliver(due, allow_private)
        return sent

    def _deliver(self, due: notices.Due, allow_private: bool) -> bool:
        body = body_of(due)
        headers = {"Content-Type": "application/json", HEADER: signature(due.secret, body),
                   "X-Arena-Event": due.event, "X-Arena-Event-Id": str(due.event_id),
                   "User-Agent": "royal-casino-arena-webhooks/1"}
        try:
            status = post(due.url, body, headers, self.settings.timeout_s, allow_private)
            error = None if 200 <= status < 300 else f"the receiver answered HTTP {status}"
        except TargetRefused as exc:
            error = str(exc)
        except (OSError, http.client.HTTPException) as exc:
            error = f"cannot reach the receiver: {one_line(str(exc)) or type(exc).__name__}"
        with self.store.engine.begin() as conn:
            if error is None:
                if not notices.delivered(conn, due.id, self.owner):
                    log.warning("delivery %d was sent after its claim ended: it may be sent again", due.id)
                return True
            attempt = due.attempts + 1
            retry = None
            if attempt < self.settings.attempts:
                wait = min(self.settings.max_backoff_s, self.settings.backoff_s * 2 ** (attempt - 1))
                retry = utcnow() + timedelta(seconds=wait)
            notices.failed(conn, due.id, self.owner, error, retry)
        log.info("delivery %d of event %d (%s), attempt %d: %s%s", due.id, due.event_id, due.event, attempt, error,
                 "" if retry else "; given up")
        return False

    def run(self) -> None:
        """Deliver until ``stop``: a batch, then a wait of ``poll_s`` when nothing was due."""
        while not self._stop.is_set():
            try:
                busy = self.run_once()
            except Exception as exc:  # a database outage: said, and tried again after the wait
                log.warning("notifications: %s", one_line(str(exc)))
                busy = 0
            if not busy:
                self._stop.wait(self.settings.poll_s)

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="arena-notify", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.settings.timeout_s * 2 + 5)
