"""Every call the Referee service answers, counted by status code and timed (an aio server
interceptor; the metrics are ``grpc_server_handled_total`` and ``grpc_server_handling_seconds``
in referee/metrics.py). It sits outermost, so calls the token interceptor refuses count too."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from ..metrics import GRPC_HANDLED, GRPC_SECONDS


def split_method(method: str) -> tuple[str, str]:
    """``/casino.v1.RefereeService/RunMatch`` -> (``casino.v1.RefereeService``, ``RunMatch``)."""
    service, _, name = method.lstrip("/").partition("/")
    return service or "unknown", name or "unknown"


def _code(context: grpc.aio.ServicerContext, exc: BaseException | None) -> str:
    """The call's status code: what the handler set (or aborted with), else OK or, for an
    exception the handler let out, UNKNOWN (CANCELLED for a call its client left)."""
    code = context.code() if hasattr(context, "code") else None
    if isinstance(code, grpc.StatusCode):
        return code.name
    if isinstance(code, int):  # older grpcio hands back the number
        return next((c.name for c in grpc.StatusCode if c.value[0] == code), "UNKNOWN")
    if exc is None:
        return "OK"
    return "CANCELLED" if isinstance(exc, asyncio.CancelledError) else "UNKNOWN"


class RpcMetricsInterceptor(grpc.aio.ServerInterceptor):
    """Wraps each method's handler: on its end, one count by code and one latency observation."""

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:  # no such method: gRPC answers UNIMPLEMENTED itself
            service, method = split_method(handler_call_details.method)
            GRPC_HANDLED.labels(service, method, "UNIMPLEMENTED").inc()
            return handler
        service, method = split_method(handler_call_details.method)
        done = GRPC_HANDLED.labels(service, method, "OK")  # the usual case, looked up once
        seconds = GRPC_SECONDS.labels(service, method)

        def finish(context: grpc.aio.ServicerContext, began: float, exc: BaseException | None) -> None:
            seconds.observe(time.perf_counter() - began)
            code = _code(context, exc)
            (done if code == "OK" else GRPC_HANDLED.labels(service, method, code)).inc()

        def wrap_unary(behaviour: Callable[..., Any]) -> Callable[..., Any]:
            async def call(request: Any, context: grpc.aio.ServicerContext) -> Any:
                began, exc = time.perf_counter(), None
                try:
                    return await behaviour(request, context)
                except BaseException as error:
                    exc = error
                    raise
                finally:
                    finish(context, began, exc)
            return call

        def wrap_stream(behaviour: Callable[..., Any]) -> Callable[..., Any]:
            if not inspect.isasyncgenfunction(behaviour):  # writes with context.write: a coroutine
                return wrap_unary(behaviour)

            async def call(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                began, exc = time.perf_counter(), None
                try:
                    async for item in behaviour(request, context):
                        yield item
                except BaseException as error:
                    exc = error
                    raise
                finally:
                    finish(context, began, exc)
            return call

        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(
                wrap_unary(handler.unary_unary), handler.request_deserializer, handler.response_serializer)
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(
                wrap_stream(handler.unary_stream), handler.request_deserializer, handler.response_serializer)
        if handler.stream_unary:
            return grpc.stream_unary_rpc_method_handler(
                wrap_unary(handler.stream_unary), handler.request_deserializer, handler.response_serializer)
        return grpc.stream_stream_rpc_method_handler(
            wrap_stream(handler.stream_stream), handler.request_deserializer, handler.response_serializer)
