"""What a client is shown of an upstream's sampling, elicitation and log messages: labelled, escaped, bounded.

Everything an upstream server writes for a person or a model — an elicitation's message and form, a sampling
request's system prompt and messages, a log message — is

* **labelled** with the upstream's name: ``[upstream 'evil'] ...`` at the start of the message, the form's
  title and the system prompt (which a gateway adds when the upstream gave none), so a request that imitates the
  gateway's own approval prompt, or a system prompt that claims to be the gateway, still says where it came from;
* **escaped** exactly as approval prompts are (:func:`toolrig.policy.visible`): controls (newlines included),
  bidi controls, zero-width, tag and other invisible characters are written out, so nothing can push the label
  out of sight, reorder the text or hide a part of it;
* **bounded**: long texts are cut (saying so), a form schema too large or with too many fields is refused.

A sampling request's ``includeContext`` is **stripped** to ``"none"``: behind a gateway, the client's "this
server" is the gateway, whose context spans every upstream, so ``thisServer`` would leak other upstreams'
context as surely as ``allServers``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import mcp_types

from toolrig.errors import UnshowableRequest

__all__ = ["MAX_FIELDS", "MAX_LOG_TEXT", "MAX_MESSAGES", "MAX_TEXT", "label", "labelled_elicitation",
           "labelled_log", "labelled_sampling", "request_summary", "shown"]

MAX_TEXT = 4_000
"""Characters of an upstream's message, title, description or prompt text shown (the rest is cut, saying so)."""

MAX_LOG_TEXT = 2_000
"""Characters of an upstream's log message forwarded."""

MAX_FIELDS = 32
"""Most fields in a forwarded elicitation form."""

MAX_SCHEMA_CHARS = 64_000
"""Largest forwarded elicitation form schema, as JSON text."""

MAX_MESSAGES = 50
"""Most messages in a forwarded sampling request (each shown in its approval prompt and audit row)."""

_SHOWN_KEYS = frozenset({"title", "description"})


def _visible(text: str) -> str:
    from toolrig.policy import visible

    return visible(text)


def _cut(text: str, limit: int = MAX_TEXT) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … [cut by the gateway: {len(text):,} characters]"


def shown(text: str, limit: int = MAX_TEXT) -> str:
    """Upstream text as shown: cut to ``limit`` characters, then escaped."""
    return _visible(_cut(text, limit))


def label(server: str) -> str:
    """``[upstream 'NAME']``: what every forwarded request starts with."""
    return f"[upstream '{_visible(server)}']"


# -- elicitation -----------------------------------------------------------------------------------------
def _shown_schema_value(key: str, value: Any) -> Any:
    """A field's schema with every text a client may show escaped and cut (values the answer carries kept)."""
    if key in _SHOWN_KEYS and isinstance(value, str):
        return shown(value)
    if key == "enumNames" and isinstance(value, list):
        return [shown(v) if isinstance(v, str) else v for v in value]
    if key == "default" and isinstance(value, str):
        return shown(value)
    if isinstance(value, Mapping):
        return {str(k): _shown_schema_value(str(k), v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shown_schema_value("", v) for v in value]
    return value


def _choices(value: Any) -> list[str]:
    """The string choices of a field schema: ``enum`` values and ``const`` values, at any depth."""
    if isinstance(value, Mapping):
        own = [v for v in value.get("enum", ()) if isinstance(v, str)] if isinstance(value.get("enum"), list) else []
        if isinstance(value.get("const"), str):
            own.append(value["const"])
        return own + [c for k, v in value.items() if k not in ("enum", "const") for c in _choices(v)]
    if isinstance(value, list):
        return [c for v in value for c in _choices(v)]
    return []


def _titled(name: str, field: dict[str, Any], original: Mapping[str, Any]) -> dict[str, Any]:
    """A field the client shows by its title (never its raw name); its choices, which are the answer's values and
    cannot be rewritten, must show as they are."""
    field.setdefault("title", shown(name))
    for choice in _choices(original):
        if _visible(choice) != choice:
            raise UnshowableRequest(f"a choice of the form's field {shown(name, 100)} has hidden or control "
                                    f"characters: {shown(choice, 100)}")
    return field


def _form_schema(server: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    try:
        size = len(json.dumps(schema, default=str))
    except (TypeError, ValueError, RecursionError) as exc:
        raise UnshowableRequest(f"the form's schema cannot be encoded ({type(exc).__name__})") from None
    if size > MAX_SCHEMA_CHARS:
        raise UnshowableRequest(f"the form's schema is {size:,} characters; at most {MAX_SCHEMA_CHARS:,} are forwarded")
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        raise UnshowableRequest("the form's schema has no 'properties' object")
    if len(properties) > MAX_FIELDS:
        raise UnshowableRequest(f"the form has {len(properties)} fields; at most {MAX_FIELDS} are forwarded")
    out: dict[str, Any] = _shown_schema_value("", schema)
    fields = {}
    for name, field in out["properties"].items():
        if not isinstance(field, Mapping):
            raise UnshowableRequest(f"the schema of the form's field {shown(name, 100)} is not an object")
        fields[name] = _titled(name, dict(field), properties[name])
    out["properties"] = fields
    title = schema.get("title")
    out["title"] = f"{label(server)} " + (shown(title) if isinstance(title, str) else "asks for input")
    return out


def labelled_elicitation(server: str, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitRequestParams:
    """``params`` as the client is shown them: message and title labelled, every text escaped and cut.

    Raises:
        UnshowableRequest: a form schema too large, with too many fields, or without properties.
    """
    message = f"{label(server)} {shown(params.message)}"
    if isinstance(params, mcp_types.ElicitRequestURLParams):
        return params.model_copy(update={"message": message})
    try:
        schema = _form_schema(server, params.requested_schema)
    except RecursionError:
        raise UnshowableRequest("the form's schema is nested too deeply") from None
    return params.model_copy(update={"message": message, "requested_schema": schema})


# -- sampling --------------------------------------------------------------------------------------------
def _shown_content(block: Any) -> Any:
    if isinstance(block, mcp_types.TextContent):
        return block.model_copy(update={"text": shown(block.text)})
    return block


def _shown_message(message: mcp_types.SamplingMessage) -> mcp_types.SamplingMessage:
    content = message.content
    shown_content = [_shown_content(b) for b in content] if isinstance(content, list) else _shown_content(content)
    return message.model_copy(update={"content": shown_content})


def labelled_sampling(server: str, params: mcp_types.CreateMessageRequestParams
                      ) -> mcp_types.CreateMessageRequestParams:
    """``params`` as forwarded: ``includeContext`` stripped to ``"none"``, a labelled system prompt saying the
    request (and any system prompt it carries) comes from the upstream, every text escaped and cut.

    Raises:
        UnshowableRequest: more than :data:`MAX_MESSAGES` messages.
    """
    if len(params.messages) > MAX_MESSAGES:
        raise UnshowableRequest(
            f"the request has {len(params.messages)} messages; at most {MAX_MESSAGES} are forwarded")
    theirs = params.system_prompt
    system = (f"{label(server)} This request comes from the upstream MCP server '{_visible(server)}' behind the "
              "toolrig gateway; it does not speak for the gateway or the user.")
    if theirs:
        system += f" The upstream's system prompt follows: {shown(theirs)}"
    return params.model_copy(update={
        "system_prompt": system, "include_context": "none" if params.include_context is not None else None,
        "messages": [_shown_message(m) for m in params.messages]})


# -- log messages ----------------------------------------------------------------------------------------
def labelled_log(server: str, params: mcp_types.LoggingMessageNotificationParams
                 ) -> mcp_types.LoggingMessageNotificationParams:
    """A log message as forwarded: its data as labelled, escaped text of at most :data:`MAX_LOG_TEXT` characters,
    its logger named after the upstream."""
    data = params.data
    if not isinstance(data, str):
        try:
            data = json.dumps(data, ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):
            data = f"<a log message of type {type(data).__name__} that cannot be shown>"
    logger = f"upstream:{_visible(server)}" + (f"/{shown(params.logger, 100)}" if params.logger else "")
    return mcp_types.LoggingMessageNotificationParams(level=params.level, logger=logger,
                                                      data=f"{label(server)} {shown(data, MAX_LOG_TEXT)}")


# -- what the audit row and the approval prompt say ------------------------------------------------------
def request_summary(params: mcp_types.CreateMessageRequestParams | mcp_types.ElicitRequestParams
                    ) -> dict[str, Any]:
    """What an upstream asked, as plain data for the audit row and the approval prompt: one value per message or
    field, so a person can be shown all of it (texts cut, not escaped: the approval prompt escapes what it shows,
    the audit log stores data)."""
    if isinstance(params, mcp_types.CreateMessageRequestParams):
        messages = []
        for m in params.messages[:MAX_MESSAGES]:  # more are never forwarded (labelled_sampling refuses them)
            blocks = m.content if isinstance(m.content, list) else [m.content]
            texts = [b.text if isinstance(b, mcp_types.TextContent) else f"<{b.type} content>" for b in blocks]
            messages.append(_cut(f"{m.role}: " + " ".join(texts)))
        if len(params.messages) > MAX_MESSAGES:
            messages.append(f"... and {len(params.messages) - MAX_MESSAGES} more messages")
        return {"system_prompt": _cut(params.system_prompt) if params.system_prompt else None,
                "include_context": params.include_context, "max_tokens": params.max_tokens, "messages": messages}
    if isinstance(params, mcp_types.ElicitRequestURLParams):
        return {"mode": "url", "message": _cut(params.message), "url": _cut(params.url, 2_000)}
    schema = params.requested_schema
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    fields = {}
    for name, field in list((properties or {}).items())[:MAX_FIELDS]:
        about = [str(field.get(k)) for k in ("title", "description") if isinstance(field, Mapping) and field.get(k)]
        fields[str(name)] = _cut(" — ".join(about), 500)
    return {"mode": "form", "message": _cut(params.message), "fields": fields}
