"""The bearer token of the Referee service: a server interceptor that lets a call through only
with ``authorization: Bearer <token>`` (health checks excepted, so load balancers need none).

The token is compared in constant time, as SHA-256 digests, so neither its characters nor its
length can be learned from how long a refusal takes.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Awaitable, Callable

import grpc

log = logging.getLogger(__name__)
AUTHORIZATION = "authorization"  # gRPC metadata keys are lower case
OPEN_METHODS_PREFIX = "/grpc.health.v1.Health/"  # Check and Watch
NO_TOKEN = "this server needs a token: send the metadata 'authorization: Bearer <token>'"
WRONG_TOKEN = "the token is not this server's"


def bearer(token: str) -> tuple[str, str]:
    """The metadata pair that carries ``token``."""
    return AUTHORIZATION, f"Bearer {token}"


class TokenInterceptor(grpc.aio.ServerInterceptor):
    """Refuses every call but health checks with UNAUTHENTICATED unless it carries the token."""

    def __init__(self, token: str) -> None:
        self._digest = hashlib.sha256(token.encode()).digest()

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        if handler_call_details.method.startswith(OPEN_METHODS_PREFIX):
            return await continuation(handler_call_details)
        given = [value for key, value in handler_call_details.invocation_metadata or () if key == AUTHORIZATION]
        if len(given) == 1 and isinstance(given[0], str) and self._matches(given[0]):
            return await continuation(handler_call_details)
        # refused before the method is looked up: an unknown method is refused the same way,
        # so a caller without the token learns nothing about what this server offers
        return _refusal(handler_call_details.method, NO_TOKEN if not given else WRONG_TOKEN)

    def _matches(self, value: str) -> bool:
        scheme, _, token = value.partition(" ")
        digest = hashlib.sha256(token.strip().encode()).digest()
        return hmac.compare_digest(digest, self._digest) and scheme.lower() == "bearer"


def _refusal(method: str, message: str) -> grpc.RpcMethodHandler:
    """A handler that ends the call with UNAUTHENTICATED. A stream-stream handler reads nothing
    first, so it answers any kind of call."""

    async def refuse(requests: object, context: grpc.aio.ServicerContext) -> None:
        log.warning("refused %r from %s: %s", method, context.peer(), message)
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    return grpc.stream_stream_rpc_method_handler(refuse)
