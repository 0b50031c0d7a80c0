"""A ``tools/call`` sent on toolrig's streamable-HTTP transport without the SDK's ``ClientSession``: :func:`call_tool`.

The SDK's session hands a request to its dispatcher (an id, a waiter, a span), writes it to the transport, and
gets the answer back from the transport's read stream through its own read loop (a task hop), then validates it.
Here the call is written to the same transport (the same POST, headers, bounds, resumption) and its answer is
taken off the transport's read side by :class:`DirectCalls` before it reaches the session: no hop. What the SDK
does around it is done the same way, with its public pieces (mirrored from ``mcp`` 2.x ``ClientSession.send_request``,
``ClientSession.call_tool``, ``Client.call_tool`` and the dispatcher's ``send_raw_request``):

* the request: ``CallToolRequest`` dumped as the SDK dumps it, ``_meta.progressToken`` = the request id, W3C trace
  context injected into ``_meta``, the header ``MCP-Protocol-Version`` (the handshake stamp); ids are strings
  (``toolrig-N``), never equal to the session's integer ids;
* a span ``MCP send tools/call <name>`` (kind CLIENT, the SDK's tracer name and attributes, error status);
* progress notifications carrying the call's token: the callback runs in a task of its own, its exceptions logged
  (the dispatcher's ``_shielded_progress``); the notification still reaches the session (its ``message_handler``);
* a caller that is cancelled after the write began sends ``notifications/cancelled`` (reason ``caller cancelled``,
  shielded, at most 5 s);
* the answer: an error answer raises ``MCPError`` (code, message, data); a result has a negative ``ttlMs`` floored,
  is validated for the negotiated version (``mcp_types.methods.validate_server_result``), loses the fields of later
  revisions, is parsed as ``CallToolResult | InputRequiredResult``, and a successful ``CallToolResult`` is checked
  against the tool's output schema (``ClientSession.validate_tool_result``). (An ``InputRequiredResult``, which the
  ``Client`` would drive round by round, cannot come on a handshake version: its fields are a later revision's.)

Only for a session on a handshake (pre-2026) protocol version, with no read timeout: anything else goes through
the ``Client`` (:func:`usable`).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable
from contextlib import suppress
from functools import cache
from types import UnionType
from typing import Any, get_args

import anyio
import anyio.abc
import anyio.lowlevel
import mcp_types
from mcp import Client, MCPError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse
from mcp_types import methods as protocol_methods
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from opentelemetry.propagate import inject
from opentelemetry.trace import SpanKind, StatusCode, get_tracer
from pydantic import BaseModel, TypeAdapter

__all__ = ["DirectCalls", "call_tool", "usable"]

log = logging.getLogger("toolrig.mcp")

_METHOD = "tools/call"
_TRACER = get_tracer("mcp-python-sdk")
"""The SDK's tracer name: the spans of a direct call are the session's."""
_RESULT = TypeAdapter(mcp_types.CallToolResult | mcp_types.InputRequiredResult)
_CANCEL_WRITE_TIMEOUT = 5.0

Progress = Callable[[float, float | None, str | None], Awaitable[None]]


class _Waiting:
    __slots__ = ("answer", "progress")

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.answer: JSONRPCResponse | JSONRPCError | None = None


class DirectCalls:
    """The calls one transport sends for toolrig itself; their answers are taken off its read side.

    Args:
        send: the transport's write (POSTs a message; returns once its answer, or its failure, was delivered).
        spawn: starts a task in the transport's task group (progress callbacks run in one each).
    """

    def __init__(self, send: Callable[[SessionMessage], Awaitable[None]],
                 spawn: Callable[..., Any]) -> None:
        self._send = send
        self._spawn = spawn
        self._waiting: dict[str, _Waiting] = {}
        self._ids = itertools.count(1)
        self.sent = 0
        """Calls sent this way so far (a public count: tests and stats see that the direct path is taken)."""

    def take(self, item: Any) -> bool:
        """True when ``item`` is the answer of a direct call in flight (kept for it, not passed on)."""
        if not self._waiting:
            return False
        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCResponse | JSONRPCError):
            waiting = self._waiting.get(message.id) if isinstance(message.id, str) else None
            if waiting is not None and waiting.answer is None:
                waiting.answer = message
                return True
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/progress":
            self._progress(message.params)
        return False

    def _progress(self, params: Any) -> None:
        """The dispatcher's routing of a progress notification, for the tokens of direct calls."""
        match params:
            case {"progressToken": str() as token, "progress": int() | float() as progress} if (
                    not isinstance(progress, bool) and (waiting := self._waiting.get(token)) is not None):
                total, message = params.get("total"), params.get("message")
                self._spawn(_shielded, waiting.progress, float(progress),
                            float(total) if isinstance(total, int | float) else None,
                            message if isinstance(message, str) else None)

    def new_id(self) -> str:
        """A request id no session request uses (the session's are integers)."""
        return f"toolrig-{next(self._ids)}"

    async def request(self, message: JSONRPCRequest, headers: dict[str, str], progress: Progress
                      ) -> JSONRPCResponse | JSONRPCError:
        """POST ``message`` and return its answer (``MCPError`` ``CONNECTION_CLOSED`` when none came)."""
        request_id = str(message.id)
        waiting = self._waiting[request_id] = _Waiting(progress)
        self.sent += 1
        try:
            try:
                await self._send(SessionMessage(message, metadata=ClientMessageMetadata(headers=headers)))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise MCPError(code=mcp_types.CONNECTION_CLOSED, message="Connection closed") from None
        finally:
            del self._waiting[request_id]
        if waiting.answer is None:  # the transport delivers an answer or a failure for every request it sent
            raise MCPError(code=mcp_types.CONNECTION_CLOSED, message="Connection closed")
        return waiting.answer


async def _shielded(progress: Progress, value: float, total: float | None, message: str | None) -> None:
    try:
        await progress(value, total, message)
    except Exception:
        log.exception("progress callback raised")


def usable(client: Client) -> bool:
    """Whether a call on ``client``'s session may go direct: a handshake protocol version, no read timeout."""
    version = client.session.protocol_version
    return (version is not None and version in KNOWN_PROTOCOL_VERSIONS and version not in MODERN_PROTOCOL_VERSIONS
            and client.read_timeout_seconds is None)


async def call_tool(client: Client, calls: DirectCalls, name: str, arguments: dict[str, Any],
                    progress: Progress) -> mcp_types.CallToolResult:
    """``client.call_tool(name, arguments, progress_callback=progress)``, sent direct (see the module docstring)."""
    result = await _send(client, calls, name, arguments, progress)
    if not isinstance(result, mcp_types.CallToolResult):  # not on a handshake version: its 2026 fields are dropped
        raise RuntimeError(f"{name}: an input-required result on a {client.session.protocol_version} session")
    return result


async def _send(client: Client, calls: DirectCalls, name: str, arguments: dict[str, Any], progress: Progress
                ) -> mcp_types.CallToolResult | mcp_types.InputRequiredResult:
    version = client.session.protocol_version
    assert version is not None
    request = mcp_types.CallToolRequest(params=mcp_types.CallToolRequestParams(
        name=name, arguments=arguments, input_responses=None, request_state=None, _meta=None))
    data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    headers = {MCP_PROTOCOL_VERSION_HEADER: version}  # the handshake stamp (no Mcp-Name: that is 2026's)
    request_id = calls.new_id()
    params = dict(data.get("params") or {})
    meta = dict(params.get("_meta") or {})
    meta["progressToken"] = request_id
    started = False
    try:
        with _TRACER.start_as_current_span(f"MCP send {_METHOD} {name}", kind=SpanKind.CLIENT, attributes={
                "mcp.method.name": _METHOD, "jsonrpc.request.id": request_id}) as span:
            inject(meta)
            params["_meta"] = meta
            message = JSONRPCRequest(jsonrpc="2.0", id=request_id, method=_METHOD, params=params)
            await anyio.lowlevel.checkpoint_if_cancelled()
            started = True
            answer = await calls.request(message, headers, progress)
            if isinstance(answer, JSONRPCError):
                code = str(answer.error.code)
                span.set_attributes({"error.type": code, "rpc.response.status_code": code})
                span.set_status(StatusCode.ERROR, answer.error.message)
    except anyio.get_cancelled_exc_class():
        if started:  # the courtesy cancel: the server may stop the call's work
            with anyio.move_on_after(_CANCEL_WRITE_TIMEOUT, shield=True) as scope:
                await client.session.send_notification(mcp_types.CancelledNotification(
                    params=mcp_types.CancelledNotificationParams(request_id=request_id, reason="caller cancelled")))
            if scope.cancelled_caught:
                log.warning("courtesy cancel for caller-cancelled request %r gave up: transport write blocked",
                            request_id)
        raise
    if isinstance(answer, JSONRPCError):
        raise MCPError(code=answer.error.code, message=answer.error.message, data=answer.error.data)
    raw = answer.result
    ttl = raw.get("ttlMs")
    if isinstance(ttl, int | float) and not isinstance(ttl, bool) and ttl < 0:
        raw["ttlMs"] = 0
    with suppress(KeyError):  # a version without a row for the method: not validated (the SDK's)
        protocol_methods.validate_server_result(_METHOD, version, raw)
    if not (foreign := _later_revision_fields(version)).isdisjoint(raw):
        raw = {key: value for key, value in raw.items() if key not in foreign}
    result = _RESULT.validate_python(raw, by_name=False)
    if isinstance(result, mcp_types.CallToolResult) and not result.is_error:
        await client.session.validate_tool_result(name, result)
    return result


@cache
def _later_revision_fields(version: str) -> frozenset[str]:
    """Result keys a revision newer than ``version`` declares for ``tools/call`` but ``version`` does not."""
    current = protocol_methods.SERVER_RESULTS.get((_METHOD, version))
    if current is None or version not in KNOWN_PROTOCOL_VERSIONS:
        return frozenset()
    later: set[str] = set()
    for revision in KNOWN_PROTOCOL_VERSIONS[KNOWN_PROTOCOL_VERSIONS.index(version) + 1:]:
        row = protocol_methods.SERVER_RESULTS.get((_METHOD, revision))
        if row is not None:
            later |= _wire_fields(row)
    return frozenset(later) - _wire_fields(current)


def _wire_fields(target: Any) -> frozenset[str]:
    members: tuple[Any, ...] = get_args(target) if isinstance(target, UnionType) else (target,)
    fields: set[str] = set()
    for model in members:
        if isinstance(model, type) and issubclass(model, BaseModel):
            fields.update(field.alias or key for key, field in model.model_fields.items())
    return frozenset(fields)
