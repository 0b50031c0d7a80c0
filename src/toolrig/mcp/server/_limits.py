"""Request limits for the streamable HTTP endpoint: body size, body time, and the JSON-RPC envelope.

The SDK's transport reads a POST body whole, however large, and however slowly it arrives; and it takes a
message whose ``id`` is an object, a float, a boolean or null for a notification, answering ``202`` and nothing
else. :class:`RequestLimits` runs before it and answers, with a JSON-RPC error and nothing forwarded:

* ``413`` (-32600) for a body over ``max_body`` bytes (its ``Content-Length`` or what arrived);
* ``408`` (-32600) for a body not complete within ``body_timeout`` seconds (a slow-body "slowloris" client);
* ``400`` -32700 for what does not parse as standard JSON (``NaN``, ``Infinity``, invalid UTF-8, nesting past
  the parser's limit), and -32600 for a batch (a JSON array: MCP has no batches since 2025-06-18), a message
  that is not an object, a ``jsonrpc`` other than ``"2.0"``, a ``method`` that is not a string, or an ``id``
  that is not a string or an integer.

The envelope is checked only on the MCP endpoint (``rpc_paths``); other POST routes (the plain HTTP routes of
``serve --openapi``) get the size and time limits alone. A body within the limits is handed on unchanged.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types
import pydantic_core
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["MAX_BODY_BYTES", "RequestLimits", "envelope_problem"]

MAX_BODY_BYTES = 4 * 1024 * 1024
"""Largest request body accepted (4 MiB)."""

BODY_TIMEOUT = 30.0
"""Seconds a client has to send a whole request body."""


def _error(status: int, code: int, message: str) -> Response:
    body = mcp_types.JSONRPCError(jsonrpc="2.0", id=None, error=mcp_types.ErrorData(code=code, message=message))
    return Response(body.model_dump_json(by_alias=True, exclude_none=True), status_code=status,
                    media_type="application/json")


def envelope_problem(message: Any) -> str | None:
    """Why a parsed JSON-RPC message is not a valid single request, notification or response (None: it is)."""
    if isinstance(message, list):
        return "batch requests are not supported; send one JSON-RPC message per request"
    if not isinstance(message, dict):
        return f"a JSON-RPC message is an object, not {type(message).__name__}"
    if message.get("jsonrpc") != "2.0":
        return 'the "jsonrpc" member must be exactly "2.0"'
    if "method" in message and not isinstance(message["method"], str):
        return 'the "method" member must be a string'
    if "id" in message:
        ident = message["id"]
        if isinstance(ident, bool) or not isinstance(ident, (str, int)):
            kind = "null" if ident is None else type(ident).__name__
            return f"a request id must be a string or an integer, not {kind}"
    return None


class _Replay:
    """``receive`` for the app behind: the body read here first, then the client's own ``receive``."""

    __slots__ = ("body", "receive")

    def __init__(self, body: bytes, receive: Receive) -> None:
        self.body: bytes | None = body
        self.receive = receive

    async def __call__(self) -> Message:
        body = self.body
        if body is None:
            return await self.receive()
        self.body = None
        return {"type": "http.request", "body": body, "more_body": False}


class RequestLimits:
    """ASGI middleware bounding POST bodies and checking their JSON-RPC envelope (see the module docstring)."""

    def __init__(self, app: ASGIApp, *, max_body: int = MAX_BODY_BYTES, body_timeout: float = BODY_TIMEOUT,
                 rpc_paths: frozenset[str] | None = None) -> None:
        self.app = app
        self.rpc_paths = rpc_paths
        """Where bodies are JSON-RPC messages (None: every path)."""
        self.max_body = max_body
        self.body_timeout = body_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        declared = None
        for key, value in scope["headers"]:
            if key == b"content-length":
                declared = value
                break
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body):
            await _error(413, mcp_types.INVALID_REQUEST, f"request body over {self.max_body:,} bytes")(
                scope, receive, send)
            return
        body, refusal = await self._read(receive)
        if refusal is None and (self.rpc_paths is None or scope.get("path") in self.rpc_paths):
            refusal = self._check(body)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, _Replay(body, receive), send)

    async def _read(self, receive: Receive) -> tuple[bytes, Response | None]:
        chunks: list[bytes] = []
        size = 0
        with anyio.move_on_after(self.body_timeout) as scope:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return b"", _error(400, mcp_types.INVALID_REQUEST, "the client closed the request")
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_body:
                    return b"", _error(413, mcp_types.INVALID_REQUEST, f"request body over {self.max_body:,} bytes")
                if not message.get("more_body", False):
                    if not chunks:  # the whole body in one message (the usual case): no copy
                        return chunk, None
                    chunks.append(chunk)
                    break
                chunks.append(chunk)
        if scope.cancelled_caught:
            return b"", _error(408, mcp_types.INVALID_REQUEST,
                               f"the request body did not arrive within {self.body_timeout:g} s")
        return b"".join(chunks), None

    @staticmethod
    def _check(body: bytes) -> Response | None:
        try:
            message = pydantic_core.from_json(body, allow_inf_nan=False)
        except ValueError as exc:
            return _error(400, mcp_types.PARSE_ERROR, f"Parse error: {exc}")
        problem = envelope_problem(message)
        return None if problem is None else _error(400, mcp_types.INVALID_REQUEST, f"Invalid request: {problem}")
