"""A message too large to read: which request it answered, and the error that answers that request instead.

Only the first and last few KiB of such a message are kept (:class:`~toolrig.mcp.shared._lines.Oversized`). Its id
is read from them with a JSON parser, never by pattern matching: the beginning is parsed as a partial JSON
object (servers built with the Python SDK write ``{"jsonrpc", "id", "result"}`` in that order), and the end
as the longest suffix that is a complete object once a ``{`` is put before it (the TypeScript SDK writes
``{"result", "jsonrpc", "id"}``). A comma inside a string cannot start such a suffix, because no raw quote
can follow it there; an id that might have been cut short (the last member of the partial beginning) is
not believed. A message with a ``method`` is the server's own request or notification, never an answer.

A message within the byte limit may still be too much: a million one-character content items fit in 27 MB and
cost the SDK about 2 KB of Python objects each. :func:`too_many_values` counts a message's JSON values on its
bytes, before anything is parsed (a count of ``,``, ``{`` and ``[``, outside strings once the rough count is
over the limit), and a message of more than :data:`MAX_VALUES` is answered like one over the byte limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import mcp_types
import pydantic_core
from mcp import MCPError

__all__ = ["MAX_VALUES", "MESSAGE_TOO_LARGE", "Awaiting", "MessageOrigin", "is_too_large", "origin_of",
           "request_id_of", "too_large_error", "too_many_values", "unreadable_error"]

MESSAGE_TOO_LARGE = -32090
"""The JSON-RPC error code toolrig gives a request whose answer was too large to read (a server error code)."""

MAX_VALUES = 100_000
"""The most JSON values (objects, arrays, and the items and members they hold) read in one message."""

_MARK = "toolrig/message_too_large"
_TAIL_CANDIDATES = 64
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


def _structure(text: bytes, start: int = 0, end: int | None = None) -> int:
    return text.count(b",", start, end) + text.count(b"{", start, end) + text.count(b"[", start, end)


def too_many_values(message: bytes, limit: int = MAX_VALUES) -> bool:
    """True when ``message`` holds more than ``limit`` JSON values, told without parsing it (or copying it)."""
    if _structure(message) <= limit:
        return False
    count = 0
    outside = 0
    for string in _STRING.finditer(message):
        count += _structure(message, outside, string.start())
        if count > limit:
            return True
        outside = string.end()
    return count + _structure(message, outside) > limit


@dataclass(frozen=True, slots=True)
class MessageOrigin:
    """What an oversized message was: an answer to request ``id``, the server's own message, or unknown."""

    id: str | int | None = None
    from_server: bool = False


def _usable(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _head_members(head: bytes) -> dict[str, Any]:
    for text in (head, _shallow(head)):  # a head nested past the parser's limit: the members before that nesting
        try:
            value = pydantic_core.from_json(text, allow_partial=True, cache_strings=False)
        except ValueError:
            continue
        return value if isinstance(value, dict) else {}
    return {}


def _shallow(head: bytes, limit: int = 32) -> bytes:
    """``head`` cut where its nesting (outside strings) first goes deeper than ``limit``."""
    depth = 0
    outside = 0
    for string in [*_STRING.finditer(head), None]:
        end = len(head) if string is None else string.start()
        for i in range(outside, end):
            if head[i] in b"{[":
                depth += 1
                if depth > limit:
                    return head[:i]
            elif head[i] in b"}]":
                depth -= 1
        if string is None:
            break
        outside = string.end()
    return head


def _tail_members(tail: bytes) -> dict[str, Any]:
    """The top-level members that end the message, from the longest suffix of ``tail`` that parses as an object."""
    tail = tail.rstrip(b" \t\r\n")
    found: dict[str, Any] = {}
    start = len(tail)
    for _ in range(_TAIL_CANDIDATES):
        start = tail.rfind(b",", 0, start)
        if start < 0:
            break
        try:
            value = pydantic_core.from_json(b"{" + tail[start + 1:], cache_strings=False)
        except ValueError:
            continue
        if isinstance(value, dict):
            found = value
    return found


def _id_and_method(head: bytes, tail: bytes) -> tuple[str | int | None, bool]:
    """The message's id (None when it cannot be told for sure) and whether it has a ``method``."""
    first = _head_members(head)
    last = _tail_members(tail)
    has_method = "method" in first or "method" in last
    if "id" in first and list(first)[-1] != "id" and _usable(first["id"]):
        return first["id"], has_method
    return (last["id"] if _usable(last.get("id")) else None), has_method


def origin_of(head: bytes, tail: bytes) -> MessageOrigin:
    """Which request an oversized message from a server answered (see the module docstring)."""
    request_id, has_method = _id_and_method(head, tail)
    if has_method:
        return MessageOrigin(from_server=True)
    return MessageOrigin(id=request_id)


def request_id_of(head: bytes, tail: bytes) -> str | int | None:
    """The id of an oversized request from a client (None for a notification, or when it cannot be told)."""
    request_id, has_method = _id_and_method(head, tail)
    return request_id if has_method else None


def too_large_error(request_id: str | int, *, server: str, limit: int, size: int | None = None,
                    values: bool = False) -> mcp_types.JSONRPCError:
    """The error that answers ``request_id`` in place of a message from ``server`` over ``limit`` bytes (or, with
    ``values``, of more than :data:`MAX_VALUES` JSON values)."""
    if values:
        message = (f"the answer of MCP server {server} holds more than {MAX_VALUES:,} JSON values, the most read "
                   "in one message; it was not read (ask for less)")
    else:
        seen = f" ({size:,} bytes or more)" if size is not None else ""
        message = (f"the answer of MCP server {server} was larger than its limit of {limit:,} bytes{seen}; it "
                   "was not read (raise max_message_bytes in the server's config entry, or ask for less)")
    data = {_MARK: True, "server": server, "limit": limit}
    return mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=mcp_types.ErrorData(
        code=MESSAGE_TOO_LARGE, message=message, data=data))


def unreadable_error(request_id: str | int, *, server: str, problem: object) -> mcp_types.JSONRPCError:
    """The error that answers ``request_id`` in place of an answer from ``server`` that does not parse as a
    JSON-RPC message (a number out of range, nesting past the parser's limit, a member of the wrong type, ...):
    the call fails at once instead of waiting for an answer that came and could not be read."""
    first = str(problem).splitlines()
    reason = (first[1] if len(first) > 1 else first[0] if first else "").strip()[:300]
    return mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=mcp_types.ErrorData(
        code=mcp_types.PARSE_ERROR,
        message=f"the answer of MCP server {server} is not a JSON-RPC message that can be read: {reason}"))


def is_too_large(exc: MCPError) -> bool:
    """True for the error of :func:`too_large_error`."""
    return exc.code == MESSAGE_TOO_LARGE and isinstance(exc.data, dict) and exc.data.get(_MARK) is True


class Awaiting:
    """The requests sent to a server and not answered yet, by id (kept by a transport as messages pass).

    A request leaves when its answer arrives or when the client cancels it (``notifications/cancelled``:
    the call's deadline passed, or its caller went away), so "nobody awaits it" is known without a clock.
    """

    def __init__(self) -> None:
        self._ids: set[str] = set()

    def sent(self, message: Any) -> None:
        """Note a message going to the server."""
        if isinstance(message, mcp_types.JSONRPCRequest):
            self._ids.add(str(message.id))
        elif isinstance(message, mcp_types.JSONRPCNotification) and message.method == "notifications/cancelled":
            cancelled = (message.params or {}).get("requestId")
            if _usable(cancelled):
                self._ids.discard(str(cancelled))

    def received(self, message: Any) -> None:
        """Note a message from the server."""
        if isinstance(message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError):
            self._ids.discard(str(message.id))

    def done(self, request_id: object) -> None:
        """Note that request ``request_id`` was answered (or will never be)."""
        self._ids.discard(str(request_id))

    def __contains__(self, request_id: object) -> bool:
        return str(request_id) in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def awaits(self, origin: MessageOrigin) -> bool:
        """Whether a call still waits for the message ``origin`` describes (for an unknown one: any call)."""
        if origin.from_server:
            return False
        return origin.id in self if origin.id is not None else bool(self._ids)
