"""Tools as an OpenAPI 3.1 document: :func:`to_openapi`.

One operation per tool, ``POST {prefix}/{name}`` (``/tools/get_weather``), whose JSON request body is the tool's
arguments (its input schema, the schema's ``$defs`` moved to ``components.schemas`` as ``{tool}.{name}``) and whose
answer is the call's :class:`~toolrig.ToolOutcome` as JSON. This is what ``toolrig serve --openapi`` serves (and
answers at ``GET /openapi.json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolrig._spec import Permission, thaw
from toolrig.providers import ToolsLike, collect_specs

__all__ = ["ERROR_STATUS", "OUTCOME_SCHEMA", "to_openapi"]

OUTCOME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The outcome of one call: the content the model reads, the structured result, or an error.",
    "properties": {
        "call_id": {"type": "string"}, "name": {"type": "string"}, "ok": {"type": "boolean"},
        "content": {"type": "string", "description": "What the model should read (fenced, redacted, capped)."},
        "result": {"type": ["object", "null"]},
        "error": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {
            "kind": {"type": "string"}, "message": {"type": "string"}, "retryable": {"type": "boolean"},
            "details": {"type": "object"}}, "required": ["kind", "message"]}]},
        "attempts": {"type": "integer"}, "duration_ms": {"type": "number"}, "truncated": {"type": "boolean"},
        "repairs": {"type": "array", "items": {"type": "string"}}, "meta": {"type": "object"},
    },
    "required": ["call_id", "name", "ok", "content"],
}

ERROR_STATUS: Mapping[str, int] = {
    "not_found": 404, "invalid_arguments": 422, "denied": 403, "approval_required": 403, "approval_denied": 403,
    "approval_timeout": 403, "rate_limited": 429, "circuit_open": 503, "unavailable": 503, "timeout": 504,
    "loop_detected": 429, "output_too_large": 502, "execution_error": 502, "retry_requested": 422,
    "cancelled": 503, "internal_error": 500, "replay_miss": 500,
}
"""The HTTP status of a failed call's answer, by error kind (the body is the outcome either way)."""

_SHOWN_STATUSES = {"403": "Denied by policy or approval", "404": "No such tool", "422": "Invalid arguments",
                   "429": "Rate limited", "502": "The tool failed", "503": "Unavailable", "504": "Timed out"}


def to_openapi(tools: ToolsLike, *, title: str = "toolrig tools", version: str = "1.0.0",
               server_url: str | None = None, description: str | None = None, prefix: str = "/tools",
               bearer: bool = False) -> dict[str, Any]:
    """An OpenAPI 3.1 document describing ``tools`` as ``POST {prefix}/{name}`` operations.

    Args:
        tools: tools in any form, a toolset or a registry (e.g. ``runtime.tools()``).
        title, version, description: the document's ``info``.
        server_url: the server the operations are at (``servers``), if known.
        prefix: the path the tool names are appended to.
        bearer: declare bearer-token security (as ``toolrig serve`` with ``[serve.auth]`` requires).
    """
    doc: dict[str, Any] = {"openapi": "3.1.0", "info": {"title": title, "version": version}, "paths": {}}
    if description:
        doc["info"]["description"] = description
    if server_url:
        doc["servers"] = [{"url": server_url}]
    schemas: dict[str, Any] = {"ToolOutcome": OUTCOME_SCHEMA}
    for spec in collect_specs(tools):
        body = _hoisted(thaw(spec.input_schema), spec.name, schemas)
        doc["paths"][f"{prefix.rstrip('/')}/{spec.name}"] = {"post": _operation(spec, body)}
    doc["components"] = {"schemas": schemas}
    if bearer:
        doc["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        doc["security"] = [{"bearer": []}]
    return doc


def _operation(spec: Any, body: dict[str, Any]) -> dict[str, Any]:
    outcome = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ToolOutcome"}}}}
    responses: dict[str, Any] = {"200": {"description": "The call ran; the outcome", **outcome}}
    for status, text in _SHOWN_STATUSES.items():
        responses[status] = {"description": text, **outcome}
    summary = (spec.description or spec.name).strip().splitlines()[0][:120]
    operation: dict[str, Any] = {
        "operationId": spec.name, "summary": summary, "description": spec.description or spec.name,
        "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
        "responses": responses,
        "x-toolrig": {"permission": spec.permission.value, "version": spec.version, "trust": spec.trust.value,
                      "requires_approval": spec.requires_approval},
    }
    if spec.permission is Permission.READONLY:
        operation["x-readonly"] = True
    if spec.tags:
        operation["tags"] = sorted(spec.tags)
    if spec.deprecated:
        operation["deprecated"] = True
    return operation


def _hoisted(schema: dict[str, Any], tool: str, schemas: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its root ``$defs`` moved to ``schemas`` as ``{tool}.{name}`` (references rewritten): in an
    OpenAPI document ``#/$defs/...`` would point at the document's root, not the schema's."""
    defs = schema.pop("$defs", None) or {}
    if not isinstance(defs, dict) or not defs:
        return schema
    names = {name: f"{tool}.{_component(name)}" for name in defs}

    def rewrite(node: Any) -> Any:
        if isinstance(node, list):
            return [rewrite(v) for v in node]
        if not isinstance(node, dict):
            return node
        out = {}
        for key, value in node.items():
            ref = value.removeprefix("#/$defs/") if key == "$ref" and isinstance(value, str) else None
            if ref is not None and ref in names:
                out[key] = f"#/components/schemas/{names[ref]}"
            elif key in ("enum", "const", "default", "examples"):
                out[key] = value
            else:
                out[key] = rewrite(value)
        return out

    for name, definition in defs.items():
        schemas[names[name]] = rewrite(definition)
    return dict(rewrite(schema))


def _component(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name) or "schema"
