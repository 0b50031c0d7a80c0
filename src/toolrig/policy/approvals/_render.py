"""Showing a call to a human with nothing hidden: the one rendering of an approval request.

The terminal approver and the MCP client's elicitation form (``toolrig.mcp.ClientApprover``) show a request the
same way: the tool, the reason, the caller, a hash of the exact arguments, and one
line per argument value (:mod:`._layout`: security-relevant ones first, every key path, long values elided only
where a size limit requires it), every string made visible by :func:`~._visible.visible`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from toolrig._calls import ToolCall
from toolrig._context import CallContext
from toolrig.policy.approvals._layout import layout_arguments
from toolrig.policy.approvals._visible import visible

__all__ = ["fit_request", "render_request", "render_value", "visible"]


def render_value(value: Any, indent: int = 0) -> str:
    """JSON-like rendering of an argument value with every string passed through :func:`visible`."""
    pad = "  " * (indent + 1)
    if isinstance(value, str):
        return f'"{visible(value, quote=chr(34))}"'
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        items = [f"{pad}{render_value(str(k))}: {render_value(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(f"{pad}{render_value(v, indent + 1)}" for v in value) + "\n" + "  " * indent + "]"
    try:
        return visible(json.dumps(value, allow_nan=True))
    except (TypeError, ValueError):
        return visible(repr(value))


def arguments_hash(arguments: Mapping[str, Any]) -> str:
    """The SHA-256 of the canonical JSON of ``arguments`` (sorted keys, compact): what the shown call is."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True,
                      default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def render_request(call: ToolCall, context: CallContext, reason: str, version: str | None = None) -> str:
    """The text a human sees before approving ``call``: tool, reason, caller, every argument value whole."""
    head = _head(call, context, reason, version)
    return head + "\n".join(layout_arguments(_arguments(call)) or [])


def fit_request(call: ToolCall, context: CallContext, reason: str, version: str | None = None, *,
                limit: int) -> str | None:
    """:func:`render_request` in at most ``limit`` characters: long values elided in the middle (with their length
    and hash) as needed; None when the request cannot be shown whole (every key path, every short value) in
    ``limit`` — then do not ask: deny."""
    head = _head(call, context, reason, version)
    lines = layout_arguments(_arguments(call), limit - len(head)) if len(head) <= limit else None
    return None if lines is None else head + "\n".join(lines)


def _arguments(call: ToolCall) -> Mapping[str, Any]:
    return call.arguments if isinstance(call.arguments, Mapping) else {"<raw>": call.arguments}


def _head(call: ToolCall, context: CallContext, reason: str, version: str | None) -> str:
    name = visible(call.name) + (f"@{visible(version)}" if version else "")
    who = ", ".join(f"{k}={visible(str(v))}" for k, v in (("user", context.user), ("agent", context.agent),
                                                          ("session", context.session)) if v)
    arguments = _arguments(call)
    lines = [f"Tool call needs approval: {name}", f"Reason: {visible(reason)}"]
    if who:
        lines.append(f"Caller: {who}")
    try:
        digest = arguments_hash(arguments)[:16]
    except ValueError:  # an integer past the text-conversion limit
        digest = "unavailable"
    lines.append(f"Arguments (sha256 {digest}; paths, URLs, commands and other sensitive values first):"
                 if arguments else "Arguments: none")
    return "\n".join(lines) + "\n"
