"""Reading a server's tool listing entry by entry: one unreadable tool is left out, not the whole server.

The SDK reads a ``tools/list`` answer whole: one entry it cannot read (an ``inputSchema`` that is not an object or
not ``type: object``, a missing or non-string ``name``, a description that is not a string, an ``outputSchema``
that is not an object, an entry that is not an object at all) fails the whole page, and with it the server. Its
``send_request`` checks every answer against the protocol's schema before any result type is applied, so no
permissive result type can read a page it refuses. So the transport's streams are watched
(:class:`ListingScreen`): each answer to a ``tools/list`` request is screened before the SDK reads it. Every entry
is checked as the SDK would check it (the negotiated protocol version's schema, then :class:`mcp_types.Tool`) and
against a size bound; an entry that fails is taken out of the page, and the page says which and why under
``_meta["io.toolrig/unreadable"]`` (a key the server's own value for is dropped: it cannot forge one). The SDK
then reads the good entries; :func:`unreadable_of` gives the connection what was taken out.

What is not one entry — a result that is not an object, ``tools`` that is not a list, a bad ``nextCursor`` — is
left as it is: the SDK refuses the listing, as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types
from mcp.shared.message import SessionMessage
from mcp_types import methods
from pydantic import ValidationError

from toolrig.mcp.shared import ReceiveStream

__all__ = ["MAX_TOOL_ENTRY_CHARS", "UNREADABLE_KEY", "ListingScreen", "Unreadable", "screen_page", "shown_remote",
           "unreadable_of"]

UNREADABLE_KEY = "io.toolrig/unreadable"
"""Where a screened page lists the entries taken out of it (in its ``_meta``)."""

MAX_TOOL_ENTRY_CHARS = 1_000_000
"""The largest tool entry read, in characters of JSON (a real definition takes a few thousand)."""

_MAX_NAME = 128
"""The longest remote name kept for comparison (MCP names have at most 128 characters)."""
_SHOWN = 80
_REASON = 300
_DEFAULT_VERSION = "2025-11-25"


@dataclass(frozen=True)
class Unreadable:
    """A tool entry left out of a listing.

    Attributes:
        name: the name it gave, when that is a string of at most 128 characters (None otherwise): an entry that
            names a tool still claims that name, so a readable tool listed under the same name is ambiguous.
        shown: how it is shown: its name escaped and cut (``shown_remote``), else where it was in the listing.
        reason: why it was left out.
    """

    name: str | None
    shown: str
    reason: str


def _escaped(text: str, limit: int) -> str:
    """``text`` with every non-printable character (and the backslash) escaped as Python would, cut at ``limit``
    characters (saying how long it was)."""
    cut = text[:limit]
    out = "".join(c if c.isprintable() and c != "\\" else repr(c)[1:-1] for c in cut)
    return out if len(cut) == len(text) else f"{out}… ({len(text):,} characters)"


def shown_remote(name: str) -> str:
    """A server's tool name as it may be shown (it is untrusted text): as it is when printable and at most 128
    characters, else escaped (``\\x1b``, ``\\u202e``) and cut at 80."""
    if len(name) <= _MAX_NAME and name.isprintable():
        return name
    return _escaped(name, _SHOWN)


def _reason(exc: ValidationError) -> str:
    """The first problem pydantic found, without the value it found it in (that is the server's text)."""
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    if not errors:
        return "it does not match the MCP tool schema"
    first = errors[0]
    loc = tuple(first.get("loc", ()))
    where = ".".join(str(part) for part in (loc[2:] if loc[:2] == ("tools", 0) else loc)) or "the entry"
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return _escaped(f"{where}: {first.get('msg', 'invalid')}{more}", _REASON)


def entry_problem(entry: Any, version: str) -> str | None:
    """Why one ``tools/list`` entry cannot be read, or None when the SDK reads it."""
    if not isinstance(entry, dict):
        return f"the entry is not an object but {type(entry).__name__}"
    try:
        size = len(json.dumps(entry))
        if size > MAX_TOOL_ENTRY_CHARS:
            return f"the entry has {size:,} characters of JSON (over {MAX_TOOL_ENTRY_CHARS:,})"
        return _schema_problem(entry, version)
    except RecursionError:
        return "the entry is nested too deeply"


def _schema_problem(entry: dict[str, Any], version: str) -> str | None:
    """What the SDK would find wrong with ``entry``: the protocol version's schema, then :class:`mcp_types.Tool`."""
    try:
        methods.validate_server_result("tools/list", version, {"tools": [entry]})
    except ValidationError as exc:
        return _reason(exc)
    except (KeyError, ValueError):  # a version without a schema to check: the SDK checks none either
        pass
    try:
        mcp_types.Tool.model_validate(entry, by_name=False)
    except ValidationError as exc:
        return _reason(exc)
    return None


def screen_page(result: Mapping[str, Any], version: str) -> dict[str, Any] | None:
    """``result`` (a ``tools/list`` answer) without its unreadable entries, which its ``_meta`` lists instead;
    None when there is nothing to take out."""
    meta = result.get("_meta")
    tools = result.get("tools")
    if not isinstance(tools, list) or (meta is not None and not isinstance(meta, dict)):
        return None  # the listing itself is unreadable: the SDK says so
    left_out: list[dict[str, Any]] = []
    kept: list[Any] = []
    for index, entry in enumerate(tools):
        problem = entry_problem(entry, version)
        if problem is None:
            kept.append(entry)
            continue
        name = entry.get("name") if isinstance(entry, dict) else None
        left_out.append({"index": index, "reason": problem,
                         "name": name if isinstance(name, str) and 0 < len(name) <= _MAX_NAME else None,
                         "shown": shown_remote(name) if isinstance(name, str) and name else None})
    forged = meta is not None and UNREADABLE_KEY in meta
    if not left_out and not forged:
        return None
    clean = {**result, "tools": kept}
    clean["_meta"] = {k: v for k, v in (meta or {}).items() if k != UNREADABLE_KEY}
    if left_out:
        clean["_meta"][UNREADABLE_KEY] = left_out
    return clean


def unreadable_of(page: mcp_types.ListToolsResult, number: int = 1) -> list[Unreadable]:
    """The entries :class:`ListingScreen` took out of ``page`` (the ``number``-th page of its listing)."""
    out: list[Unreadable] = []
    for entry in (page.meta or {}).get(UNREADABLE_KEY) or []:  # always this module's own (see screen_page)
        shown = entry["shown"] or f"<unnamed tool #{entry['index'] + 1} on page {number}>"
        out.append(Unreadable(entry["name"], shown, entry["reason"]))
    return out


class ListingScreen:
    """Watches a transport's streams: the answers to ``tools/list`` are screened (:func:`screen_page`) on the way in.

    The write side notes the id of each ``tools/list`` request (and of ``initialize``, whose answer names the
    protocol version the entries are checked against); the read side screens the answers with those ids.
    """

    def __init__(self) -> None:
        self.version = _DEFAULT_VERSION
        self._listings: set[Any] = set()
        self._handshakes: set[Any] = set()

    def streams(self, read: Any, write: Any) -> tuple[ReceiveStream, Any]:
        """The screened ``(read, write)`` pair."""
        return _ScreenedRead(read, self._incoming), _NotedWrite(write, self._outgoing)

    def _outgoing(self, item: Any) -> None:
        message = item.message if isinstance(item, SessionMessage) else None
        if isinstance(message, mcp_types.JSONRPCRequest):
            if message.method == "tools/list":
                self._listings.add(message.id)
            elif message.method == "initialize":
                self._handshakes.add(message.id)

    def _incoming(self, item: Any) -> Any:
        message = item.message if isinstance(item, SessionMessage) else None
        if not isinstance(message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError):
            return item
        if message.id in self._handshakes:
            self._handshakes.discard(message.id)
            version = message.result.get("protocolVersion") if isinstance(message, mcp_types.JSONRPCResponse) \
                else None
            if isinstance(version, str):
                self.version = version
            return item
        if message.id is None or message.id not in self._listings:
            return item
        self._listings.discard(message.id)
        screened = screen_page(message.result, self.version) if isinstance(message, mcp_types.JSONRPCResponse) \
            else None
        if screened is None:
            return item
        return SessionMessage(message=mcp_types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=screened),
                              metadata=item.metadata)


class _ScreenedRead(ReceiveStream):
    def __init__(self, stream: Any, screen: Callable[[Any], Any]) -> None:
        self._stream = stream
        self._screen = screen

    async def receive(self) -> Any:
        return self._screen(await self._stream.receive())

    async def aclose(self) -> None:
        await self._stream.aclose()

    def __getattr__(self, name: str) -> Any:  # e.g. ``last_context`` of the SDK's context streams
        return getattr(self._stream, name)


class _NotedWrite:
    def __init__(self, stream: Any, note: Callable[[Any], None]) -> None:
        self._stream = stream
        self._note = note

    async def send(self, item: Any) -> None:
        self._note(item)
        await self._stream.send(item)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _NotedWrite:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
