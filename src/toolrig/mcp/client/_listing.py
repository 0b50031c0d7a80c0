"""Reading a server's listings entry by entry: one unreadable tool (resource, template, prompt) is left out, not
the whole server (or the whole listing).

The SDK reads a listing answer whole: one entry it cannot read (for a tool, an ``inputSchema`` that is not an
object or not ``type: object``, a missing or non-string ``name``, a description that is not a string, an
``outputSchema`` that is not an object; for a resource, a missing ``uri``; any entry that is not an object at all)
fails the whole page, and with it the server (or the listing). Its
``send_request`` checks every answer against the protocol's schema before any result type is applied, so no
permissive result type can read a page it refuses. So the transport's streams are watched
(:class:`ListingScreen`): each answer to a listing request (:data:`LISTINGS`) is screened before the SDK reads it.
Every entry is checked as the SDK would check it (the negotiated protocol version's schema, then the SDK's model of
the entry: :class:`mcp_types.Tool`, ``Resource``, ``ResourceTemplate``, ``Prompt``) and
against a size bound; an entry that fails is taken out of the page, and the page says which and why under
``_meta["io.toolrig/unreadable"]`` (a key the server's own value for is dropped: it cannot forge one). The SDK
then reads the good entries; :func:`unreadable_of` gives the connection what was taken out.

What is not one entry — a result that is not an object, ``tools`` that is not a list, a bad ``nextCursor`` — is
left as it is: the SDK refuses the listing, as before. :func:`error_text` says why a listing (or anything pydantic
refused) could not be read in one bounded line that never quotes the server's values.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types
from mcp.shared.message import SessionMessage
from mcp_types import methods
from pydantic import BaseModel, ValidationError

from toolrig.mcp.shared import ReceiveStream

__all__ = ["LISTINGS", "MAX_TOOL_ENTRY_CHARS", "UNREADABLE_KEY", "ListingScreen", "Unreadable", "error_text",
           "screen_page", "shown_remote", "unreadable_of"]

UNREADABLE_KEY = "io.toolrig/unreadable"
"""Where a screened page lists the entries taken out of it (in its ``_meta``)."""

MAX_TOOL_ENTRY_CHARS = 1_000_000
"""The largest entry read (a tool, a resource, ...), in characters of JSON (a real one takes a few thousand)."""

LISTINGS: dict[str, tuple[str, str, str, type[BaseModel]]] = {
    "tools/list": ("tools", "name", "tool", mcp_types.Tool),
    "resources/list": ("resources", "uri", "resource", mcp_types.Resource),
    "resources/templates/list": ("resourceTemplates", "uriTemplate", "resource template", mcp_types.ResourceTemplate),
    "prompts/list": ("prompts", "name", "prompt", mcp_types.Prompt),
}
"""The listings screened: method -> (the result's key for its entries, the key naming an entry (what a call, read
or get names it by), what an entry is called, the SDK's model of an entry)."""

_MAX_NAME = 128
"""The longest tool name kept for comparison (MCP names have at most 128 characters; a URI or a prompt name of any
length is kept)."""
_SHOWN = 80
_REASON = 300
_DEFAULT_VERSION = "2025-11-25"


@dataclass(frozen=True)
class Unreadable:
    """An entry left out of a listing.

    Attributes:
        name: the name (for a resource its URI, for a template its URI template) it gave, when that is a non-empty
            string (for a tool of at most 128 characters; None otherwise): an entry that names a tool still claims
            that name, so a readable one listed under the same name is ambiguous.
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


def _reason(exc: ValidationError, key: str = "tools", whole: str = "the entry") -> str:
    """The first problem pydantic found, in one line of at most 300 characters, without the value it found it in
    (that is the server's text) — ``str(exc)`` quotes it."""
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    if not errors:
        return "it does not match the MCP schema"
    first = errors[0]
    loc = tuple(first.get("loc", ()))
    where = ".".join(str(part) for part in (loc[2:] if loc[:2] == (key, 0) else loc)) or whole
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return _escaped(f"{where}: {first.get('msg', 'invalid')}{more}", _REASON)


def error_text(exc: BaseException) -> str:
    """``str(exc)``, except for pydantic's ``ValidationError`` (several lines quoting the values it refused, e.g. of
    a listing the server sent): then what was refused and its first problem, in one bounded line."""
    if isinstance(exc, ValidationError):
        return f"{_escaped(exc.title, _SHOWN)}: {_reason(exc, key='', whole='the result')}"
    return str(exc).strip()


def entry_problem(entry: Any, version: str, method: str = "tools/list") -> str | None:
    """Why one entry of a ``method`` listing cannot be read, or None when the SDK reads it."""
    if not isinstance(entry, dict):
        return f"the entry is not an object but {type(entry).__name__}"
    try:
        size = len(json.dumps(entry))
        if size > MAX_TOOL_ENTRY_CHARS:
            return f"the entry has {size:,} characters of JSON (over {MAX_TOOL_ENTRY_CHARS:,})"
        return _schema_problem(entry, version, method)
    except RecursionError:
        return "the entry is nested too deeply"


def _schema_problem(entry: dict[str, Any], version: str, method: str) -> str | None:
    """What the SDK would find wrong with ``entry``: the protocol version's schema, then its model of the entry."""
    key, _, _, model = LISTINGS[method]
    try:
        methods.validate_server_result(method, version, {key: [entry]})
    except ValidationError as exc:
        return _reason(exc, key)
    except (KeyError, ValueError):  # a version without a schema to check: the SDK checks none either
        pass
    try:
        model.model_validate(entry, by_name=False)
    except ValidationError as exc:
        return _reason(exc, key)
    return None


def screen_page(result: Mapping[str, Any], version: str, method: str = "tools/list") -> dict[str, Any] | None:
    """``result`` (an answer to ``method``, one of :data:`LISTINGS`) without its unreadable entries, which its
    ``_meta`` lists instead; None when there is nothing to take out."""
    key, naming, _, _ = LISTINGS[method]
    meta = result.get("_meta")
    entries = result.get(key)
    if not isinstance(entries, list) or (meta is not None and not isinstance(meta, dict)):
        return None  # the listing itself is unreadable: the SDK says so
    left_out: list[dict[str, Any]] = []
    kept: list[Any] = []
    longest = _MAX_NAME if method == "tools/list" else MAX_TOOL_ENTRY_CHARS
    for index, entry in enumerate(entries):
        problem = entry_problem(entry, version, method)
        if problem is None:
            kept.append(entry)
            continue
        name = entry.get(naming) if isinstance(entry, dict) else None
        left_out.append({"index": index, "reason": problem,
                         "name": name if isinstance(name, str) and 0 < len(name) <= longest else None,
                         "shown": shown_remote(name) if isinstance(name, str) and name else None})
    if left_out and not kept and method != "tools/list":
        kept, left_out = entries, []  # every entry unreadable: the SDK refuses the page, as before
    forged = meta is not None and UNREADABLE_KEY in meta
    if not left_out and not forged:
        return None
    clean = {**result, key: kept}
    clean["_meta"] = {k: v for k, v in (meta or {}).items() if k != UNREADABLE_KEY}
    if left_out:
        clean["_meta"][UNREADABLE_KEY] = left_out
    return clean


def unreadable_of(page: mcp_types.Result, number: int = 1, method: str = "tools/list") -> list[Unreadable]:
    """The entries :class:`ListingScreen` took out of ``page`` (the ``number``-th page of its ``method`` listing)."""
    out: list[Unreadable] = []
    what = LISTINGS[method][2]
    for entry in (page.meta or {}).get(UNREADABLE_KEY) or []:  # always this module's own (see screen_page)
        shown = entry["shown"] or f"<unnamed {what} #{entry['index'] + 1} on page {number}>"
        out.append(Unreadable(entry["name"], shown, entry["reason"]))
    return out


class ListingScreen:
    """Watches a transport's streams: the answers to listings (:data:`LISTINGS`) are screened (:func:`screen_page`)
    on the way in.

    The write side notes the id (and method) of each listing request (and of ``initialize``, whose answer names the
    protocol version the entries are checked against); the read side screens the answers with those ids.
    """

    def __init__(self) -> None:
        self.version = _DEFAULT_VERSION
        self._listings: dict[Any, str] = {}
        self._handshakes: set[Any] = set()

    def streams(self, read: Any, write: Any) -> tuple[ReceiveStream, Any]:
        """The screened ``(read, write)`` pair."""
        return _ScreenedRead(read, self._incoming), _NotedWrite(write, self._outgoing)

    def _outgoing(self, item: Any) -> None:
        message = item.message if isinstance(item, SessionMessage) else None
        if isinstance(message, mcp_types.JSONRPCRequest):
            if message.method in LISTINGS:
                self._listings[message.id] = message.method
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
        method = self._listings.pop(message.id)
        screened = screen_page(message.result, self.version, method) \
            if isinstance(message, mcp_types.JSONRPCResponse) else None
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
