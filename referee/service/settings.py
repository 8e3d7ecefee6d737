"""How the Referee service runs, in one validated value (ServiceSettings): where it listens, who
may call it (a bearer token, TLS, client certificates), which bots a client may name (the
server's own bots, the addresses its operator allowed, commands only when allowed) and its
limits (concurrent matches, games per call, bytes its records folder may hold).

A settings value that would leave the service open cannot be made: ``__post_init__`` refuses a
non-loopback address without authentication and ``allow_commands`` without it, with one line
(ServiceSettingsError, exit status 2). docs/service.md documents every setting.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
import ssl
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..bots.endpoint import BotEndpoint
from ..errors import EndpointError, ServiceSettingsError
from ..match.spec import MAX_GAMES

DEFAULT_LISTEN = "127.0.0.1:50051"
DEFAULT_MAX_MATCHES = 4  # concurrent RunMatch calls; each runs its bots' processes on this machine
DEFAULT_MAX_GAMES = 10_000  # games in one RunMatch call
DEFAULT_MAX_RECORD_BYTES = 1 << 30  # what the records folder (records and bot logs) may hold
DEFAULT_MIN_FREE_DISK_BYTES = 64 << 20  # a record is not written when the disk would have less free
MAX_MATCHES_LIMIT = 1000
TOKEN_MIN_CHARS = 16
TOKEN_MAX_BYTES = 4096
PEM_MAX_BYTES = 1 << 20
_TOKEN = re.compile(r"^[\x21-\x7e]+$")  # visible ASCII: what an HTTP/2 header value carries as is
_BOT_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")  # never an address (no ':') nor a command line
_SIZE = re.compile(r"^(\d+)\s*([KMGT]?)(?:i?B)?$", re.IGNORECASE)
_SIZE_UNITS = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}


@dataclass(frozen=True)
class TlsSettings:
    """The server's certificate chain and key (PEM) and, for mutual TLS, the CA that client
    certificates must be signed by."""

    cert_chain: bytes
    private_key: bytes = field(repr=False)
    client_ca: bytes | None = None

    @property
    def mutual(self) -> bool:
        return self.client_ca is not None


@dataclass(frozen=True)
class ServiceSettings:
    """Everything ``referee serve`` is started with, checked as a whole."""

    listen: str = DEFAULT_LISTEN
    token: str | None = field(default=None, repr=False)  # never printed
    tls: TlsSettings | None = None
    allow_commands: bool = False  # clients may name commands for the referee to start
    allow_addresses: frozenset[str] = frozenset()  # bot addresses a client may name, exactly as written
    bots: tuple[tuple[str, BotEndpoint], ...] = ()  # the server's own bots, by the name clients use
    reflection: bool | None = None  # None: on unless authentication is required
    max_matches: int = DEFAULT_MAX_MATCHES
    max_games: int = DEFAULT_MAX_GAMES
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    min_free_disk_bytes: int = DEFAULT_MIN_FREE_DISK_BYTES

    def __post_init__(self) -> None:
        if self.token is not None:
            check_token(self.token, "the token")
        if not 1 <= self.max_matches <= MAX_MATCHES_LIMIT:
            raise ServiceSettingsError(f"max matches must be 1 to {MAX_MATCHES_LIMIT}, not {self.max_matches}")
        if not 1 <= self.max_games <= MAX_GAMES:
            raise ServiceSettingsError(f"max games must be 1 to {MAX_GAMES}, not {self.max_games}")
        if self.max_record_bytes < 1:
            raise ServiceSettingsError(f"max record bytes must be 1 or more, not {self.max_record_bytes}")
        if self.min_free_disk_bytes < 0:
            raise ServiceSettingsError(f"min free disk bytes must be 0 or more, not {self.min_free_disk_bytes}")
        for address in sorted(self.allow_addresses):
            if not BotEndpoint.is_address(address) or address != address.strip():
                raise ServiceSettingsError(f"allowed address {address!r} is not host:port or unix:/path")
            try:
                BotEndpoint.parse(address)
            except EndpointError as exc:
                raise ServiceSettingsError(f"allowed address: {exc}") from None
        names = [name for name, _ in self.bots]
        for name in names:
            if not _BOT_NAME.match(name):
                raise ServiceSettingsError(
                    f"bot name {name!r}: a letter, then up to 63 letters, digits, '_', '.' or '-'")
        if len(set(names)) != len(names):
            raise ServiceSettingsError(f"bot names given twice: {sorted({n for n in names if names.count(n) > 1})}")
        if not self.authenticated:
            how = "give --token-file FILE or --token-env VAR (or --tls-client-ca FILE for client certificates)"
            if not is_local_address(self.listen):
                raise ServiceSettingsError(
                    f"listening on {self.listen}, which is not loopback, needs authentication: {how}")
            if self.allow_commands:
                raise ServiceSettingsError(
                    f"--allow-commands lets clients run programs here, so it needs authentication: {how}")

    @property
    def authenticated(self) -> bool:
        """Every call but health checks proves who it is: a token, or a client certificate."""
        return self.token is not None or (self.tls is not None and self.tls.mutual)

    @property
    def reflection_on(self) -> bool:
        return self.reflection if self.reflection is not None else not self.authenticated

    @property
    def bot_names(self) -> dict[str, BotEndpoint]:
        return dict(self.bots)

    @classmethod
    def load(cls, *, token_file: str | None = None, token_env: str | None = None, tls_cert: str | None = None,
             tls_key: str | None = None, tls_client_ca: str | None = None, bots: Iterable[str] = (),
             allow_addresses: Iterable[str] = (), **settings: object) -> ServiceSettings:
        """Settings from what an operator names (files, an environment variable, ``NAME=ENDPOINT``
        bots), read and checked here; the other keyword arguments are fields as they are."""
        if token_file is not None and token_env is not None:
            raise ServiceSettingsError("give the token once: --token-file or --token-env, not both")
        token = None
        if token_file is not None:
            token = check_token(read_token_file(token_file), f"the token in {token_file}")
        elif token_env is not None:
            value = os.environ.get(token_env, "").strip()
            if not value:
                raise ServiceSettingsError(f"the environment variable {token_env} (--token-env) is not set or empty")
            token = check_token(value, f"the token in ${token_env}")
        return cls(token=token, tls=load_tls(tls_cert, tls_key, tls_client_ca),
                   bots=tuple(parse_bot(text) for text in bots), allow_addresses=frozenset(allow_addresses),
                   **settings)  # type: ignore[arg-type]


def check_token(token: str, what: str) -> str:
    """``token`` when it can be a bearer token: visible ASCII, no spaces, 16 characters or more."""
    if not _TOKEN.match(token):
        raise ServiceSettingsError(f"{what} must be visible ASCII characters without spaces")
    if len(token) < TOKEN_MIN_CHARS:
        raise ServiceSettingsError(f"{what} is too short: {len(token)} characters, at least {TOKEN_MIN_CHARS} "
                                   "(e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(32))')")
    if len(token) > TOKEN_MAX_BYTES:
        raise ServiceSettingsError(f"{what} is too long: more than {TOKEN_MAX_BYTES} characters")
    return token


def read_token_file(path: str) -> str:
    """The token in a file (surrounding whitespace, such as the final newline, removed)."""
    return read_limited(path, "token file", TOKEN_MAX_BYTES + 64).decode("ascii", errors="replace").strip()


def load_tls(cert: str | None, key: str | None, client_ca: str | None) -> TlsSettings | None:
    """The PEM files of TLS, checked to fit (the key is the certificate's, the CA is one)."""
    if cert is None and key is None:
        if client_ca is not None:
            raise ServiceSettingsError("--tls-client-ca needs --tls-cert and --tls-key (client certificates are TLS)")
        return None
    if cert is None or key is None:
        raise ServiceSettingsError("TLS needs both --tls-cert and --tls-key")
    chain = read_limited(cert, "TLS certificate", PEM_MAX_BYTES)
    private_key = read_limited(key, "TLS key", PEM_MAX_BYTES)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert, key)
    except (ssl.SSLError, OSError, ValueError) as exc:  # a key that is not the certificate's, or not PEM
        raise ServiceSettingsError(f"TLS certificate {cert} and key {key} cannot be used together: {exc}") from None
    ca = None
    if client_ca is not None:
        ca = read_limited(client_ca, "TLS client CA", PEM_MAX_BYTES)
        try:
            context.load_verify_locations(cafile=client_ca)
        except (ssl.SSLError, OSError, ValueError) as exc:
            raise ServiceSettingsError(f"TLS client CA {client_ca} is not a PEM certificate: {exc}") from None
    return TlsSettings(cert_chain=chain, private_key=private_key, client_ca=ca)


def parse_bot(text: str) -> tuple[str, BotEndpoint]:
    """One of the server's own bots, ``NAME=ENDPOINT`` (an address, a command line, or a bot
    package, built here before the service starts: docs/packages.md); a client names it by NAME,
    and records show NAME as its endpoint."""
    from ..packages.load import Packages, is_package
    from ..packages.manifest import PackageError
    from ..sandbox import SandboxSettings

    name, sep, spec = text.partition("=")
    if not sep or not spec.strip():
        raise ServiceSettingsError(f"bot {text!r}: give NAME=COMMAND_OR_ADDRESS_OR_PACKAGE")
    try:
        if is_package(spec.strip()):
            packages = Packages(SandboxSettings())
            folder, checked = packages.unpack(spec.strip())
            endpoint = packages.bot_sync(folder, name.strip(), checked.sha256).endpoint
        else:
            endpoint = BotEndpoint.parse(spec, cwd=os.getcwd())
    except (EndpointError, PackageError) as exc:
        raise ServiceSettingsError(f"bot {name}: {exc}") from None
    return name.strip(), dataclasses.replace(endpoint, spec=name.strip())


def is_local_address(listen: str) -> bool:
    """True only for a listen address no other machine can reach: a unix socket, ``localhost`` or
    a loopback IP. Anything else, a host name or a form this function does not know included,
    counts as reachable from elsewhere."""
    if listen.startswith(("unix:", "unix-abstract:")):
        return True
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.removeprefix("[").removesuffix("]")).is_loopback
    except ValueError:
        return False


def parse_size(text: str) -> int:
    """A byte count: ``1048576``, ``512M``, ``2G`` (K, M, G, T: powers of 1024; ``MiB`` too)."""
    found = _SIZE.match(text.strip())
    if not found:
        raise ValueError(f"not a size: {text!r} (e.g. 500M, 2G)")
    return int(found.group(1)) << _SIZE_UNITS[found.group(2).upper()]


def read_limited(path: str, what: str, max_bytes: int) -> bytes:
    """The bytes of a file an operator named, at most ``max_bytes``; one line when it cannot be read."""
    try:
        with open(path, "rb") as file:
            data = file.read(max_bytes + 1)
    except OSError as exc:
        raise ServiceSettingsError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise ServiceSettingsError(f"{what} {path} is larger than {max_bytes} bytes")
    return data


def settings_summary(settings: ServiceSettings) -> str:
    """How the service lets clients in, for its start-up line: ``TLS, client certificates, token``."""
    parts = []
    if settings.tls is not None:
        parts.append("TLS with client certificates" if settings.tls.mutual else "TLS")
    if settings.token is not None:
        parts.append("token required")
    if not parts:
        parts.append("no authentication, loopback only")
    return ", ".join(parts)

