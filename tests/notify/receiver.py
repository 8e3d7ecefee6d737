"""A webhook receiver on loopback for the notification tests: a real HTTP server on a thread that
answers each POST by a script (a status per request, then 200), and keeps what it got."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WAIT_S = 60.0  # the longest a test waits for a delivery


@dataclass
class Received:
    """What the receiver got: each request's body, headers and the status it answered."""

    requests: list[tuple[bytes, dict[str, str], int]] = field(default_factory=list)
    script: list[int] = field(default_factory=list)  # statuses to answer, in order; then 200
    hold: Callable[[], None] | None = None  # called before the first answer (a test kills the sender there)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def accepted(self) -> list[tuple[bytes, dict[str, str]]]:
        return [(body, headers) for body, headers, status in self.requests if 200 <= status < 300]

    def wait_for(self, test: Callable[[Received], bool], timeout_s: float = WAIT_S) -> bool:
        deadline = time.monotonic() + timeout_s
        with self.changed:
            while not test(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(left)
            return True


@contextmanager
def receiver(script: list[int] | None = None, hold: Callable[[], None] | None = None
             ) -> Iterator[tuple[str, Received]]:
    """A receiver at http://127.0.0.1:PORT/hook: (its URL, what it receives)."""
    got = Received(script=list(script or []), hold=hold)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            if got.hold is not None:
                hold, got.hold = got.hold, None
                hold()
            status = got.script.pop(0) if got.script else 200
            with got.changed:
                got.requests.append((body, dict(self.headers.items()), status))
                got.changed.notify_all()
            try:
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()
            except OSError:  # the sender is gone
                pass

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", got
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
