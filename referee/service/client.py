"""A client's channel to the Referee service, with its token and TLS: what a Python client (the
tests, an operator's script) opens instead of ``grpc.aio.insecure_channel`` (docs/service.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from .auth import bearer
from .settings import PEM_MAX_BYTES, read_limited, read_token_file


@dataclass(frozen=True)
class ClientTls:
    """TLS of a client: the CA that signed the server's certificate (None: the system's roots)
    and, for mutual TLS, this client's certificate chain and key (PEM)."""

    ca: bytes | None = None
    cert_chain: bytes | None = None
    private_key: bytes | None = field(default=None, repr=False)

    @classmethod
    def from_files(cls, ca: str | None = None, cert: str | None = None, key: str | None = None) -> ClientTls:
        def read(path: str | None, what: str) -> bytes | None:
            return None if path is None else read_limited(path, what, PEM_MAX_BYTES)

        return cls(read(ca, "TLS CA"), read(cert, "TLS certificate"), read(key, "TLS key"))

    def credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(self.ca, self.private_key, self.cert_chain)


def referee_channel(address: str, *, token: str | None = None, token_file: str | None = None,
                    tls: ClientTls | None = None, options: Sequence[tuple[str, Any]] = ()) -> grpc.aio.Channel:
    """A channel to the Referee service at ``address`` that sends ``token`` (or the one in
    ``token_file``) with every call, over TLS when ``tls`` is given."""
    if token_file is not None:
        if token is not None:
            raise ValueError("give the token or its file, not both")
        token = read_token_file(token_file)
    interceptors = _bearer_interceptors(token) if token is not None else None
    if tls is not None:
        return grpc.aio.secure_channel(address, tls.credentials(), options=options, interceptors=interceptors)
    return grpc.aio.insecure_channel(address, options=options, interceptors=interceptors)


class _Bearer:
    """Adds ``authorization: Bearer <token>`` to every call of a channel. (gRPC's own call
    credentials refuse a channel without TLS; a loopback or unix-socket server may have none.)
    One subclass per kind of call: a channel files each interceptor under one kind only."""

    def __init__(self, token: str) -> None:
        self._pair = bearer(token)

    def _details(self, details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        metadata = grpc.aio.Metadata(*(details.metadata or ()), self._pair)
        return grpc.aio.ClientCallDetails(details.method, details.timeout, metadata, details.credentials,
                                          details.wait_for_ready)


class _BearerUnaryUnary(_Bearer, grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation, client_call_details, request):  # type: ignore[no-untyped-def]
        return await continuation(self._details(client_call_details), request)


class _BearerUnaryStream(_Bearer, grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(self, continuation, client_call_details, request):  # type: ignore[no-untyped-def]
        return await continuation(self._details(client_call_details), request)


class _BearerStreamUnary(_Bearer, grpc.aio.StreamUnaryClientInterceptor):
    async def intercept_stream_unary(self, continuation, client_call_details, request_iterator):  # type: ignore[no-untyped-def]
        return await continuation(self._details(client_call_details), request_iterator)


class _BearerStreamStream(_Bearer, grpc.aio.StreamStreamClientInterceptor):
    async def intercept_stream_stream(self, continuation, client_call_details, request_iterator):  # type: ignore[no-untyped-def]
        return await continuation(self._details(client_call_details), request_iterator)


def _bearer_interceptors(token: str) -> list[grpc.aio.ClientInterceptor]:
    return [kind(token) for kind in (_BearerUnaryUnary, _BearerUnaryStream, _BearerStreamUnary, _BearerStreamStream)]
