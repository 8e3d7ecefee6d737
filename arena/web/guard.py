"""What every answer of the app carries and every request must have, whatever route it reaches:
security headers on every response (pages, error pages, static files, JSON, event streams), a
Host the server answers to (else 400), and the proxies whose forwarded headers are believed.

``guarded`` wraps the whole app, outside Starlette's error middleware, so a 500 page gets the
headers too. The content security policy allows scripts, styles and connections from the app's
own origin only: no inline script or style attribute (the templates have none; static/site.js
does what inline handlers did), no framing by anyone (``frame-ancestors 'none'``, and
``X-Frame-Options: DENY`` for browsers that predate it), forms only to this site.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from .settings import WebSettings, normal_host

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'")
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
)
_NAMES = {name for name, _ in SECURITY_HEADERS}


class SecurityHeaders:
    """ASGI middleware: every response's start gets SECURITY_HEADERS (any the app set itself replaced)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _NAMES]
                message = dict(message, headers=[*kept, *SECURITY_HEADERS])
            await send(message)

        await self.app(scope, receive, send_guarded)


def host_of(header: str) -> str:
    """The name in a Host header, as WebSettings.hosts() has them: no port, lower case."""
    header = header.strip()
    if header.startswith("["):  # [::1]:8000
        return normal_host(header[: header.find("]") + 1] if "]" in header else header)
    name, sep, port = header.rpartition(":")
    return normal_host(name if sep and port.isdigit() else header)


def host_allowed(host: str, allowed: tuple[str, ...]) -> bool:
    """Whether Host name ``host`` is one of ``allowed`` (``*``: any; ``*.example.org``: its subdomains)."""
    for entry in allowed:
        if entry == "*" or entry == host or (entry.startswith("*.") and host.endswith(entry[1:])):
            return True
    return False


class TrustedHosts:
    """ASGI middleware: a request whose Host is not one of ``WebSettings.hosts()`` is refused (400,
    saying why) before any route sees it, so no name an attacker chooses (DNS rebinding, a forged
    Host) reaches the app. Links are paths anyway; this keeps the app from answering at all under a
    name it was not given."""

    def __init__(self, app: ASGIApp, hosts: tuple[str, ...]) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = [v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"]
        why = None
        if len(headers) != 1 or not headers[0].strip():
            why = "the request must carry one Host header"
        elif not host_allowed(host_of(headers[0]), self.hosts):
            shown = host_of(headers[0])[:100].encode("ascii", "backslashreplace").decode()
            why = (f"this server does not answer to the host name {shown!r} (its operator adds names with "
                   "arena web --public-url or --allowed-host)")
        if why is None:
            await self.app(scope, receive, send)
            return
        body = f"400 Bad Request: {why}\n".encode()
        await send({"type": "http.response.start", "status": 400,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def guarded(app: ASGIApp, settings: WebSettings) -> ASGIApp:
    """``app`` behind the three guards, outermost first: the forwarded headers of a trusted proxy
    (uvicorn's ProxyHeadersMiddleware: the client's address and scheme, which the cookie's Secure
    flag and the event streams' per-client cap read), the security headers, the Host check."""
    return ProxyHeadersMiddleware(SecurityHeaders(TrustedHosts(app, settings.hosts())),  # type: ignore[arg-type]
                                  trusted_hosts=list(settings.trusted_proxies))
