"""OpenAPI operations as tool definitions: one input schema from path, query, header and body parameters.

Each argument of the tool maps to one place in the request (:class:`Argument`); the body, when there is one, is
the argument ``body`` (``request_body`` if a parameter is already called ``body``). A parameter whose name is
taken by another (a query ``id`` and a header ``id``) is named ``{in}_{name}``. Cookie parameters are left out
(a tool sends no cookies).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolrig._spec import Permission
from toolrig.errors import DefinitionError
from toolrig.openapi._document import Document

__all__ = ["METHODS", "Argument", "Operation", "operations"]

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_READONLY = frozenset({"get", "head", "options", "trace"})
_BODY_TYPES = ("application/json", "application/x-www-form-urlencoded", "application/octet-stream", "text/plain")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")

Place = Literal["path", "query", "header", "body"]


@dataclass(frozen=True, kw_only=True)
class Argument:
    """Where one tool argument goes: ``place`` (path, query, header, body) under ``wire_name``.

    ``style`` / ``explode`` say how a query array is written (``form`` + explode: ``?t=a&t=b``; otherwise
    ``?t=a,b``).
    """

    name: str
    wire_name: str
    place: Place
    required: bool
    style: str | None = None
    explode: bool = True


@dataclass(frozen=True, kw_only=True)
class Operation:
    """One operation of the document, ready to become a tool."""

    name: str
    method: str
    path: str
    description: str
    input_schema: dict[str, Any]
    arguments: tuple[Argument, ...]
    body_type: str | None = None
    flat_body: bool = False
    """The tool's arguments are the fields of the JSON body (an operation with a body and no parameters)."""
    permission: Permission = Permission.WRITE
    security: tuple[Mapping[str, Any], ...] = ()
    tags: frozenset[str] = frozenset()
    skipped: tuple[str, ...] = field(default=())


def tool_name(operation: Mapping[str, Any], method: str, path: str) -> str:
    """``operationId`` made a legal tool name (else ``method_path``), at most 64 characters."""
    raw = operation.get("operationId") or f"{method}_{path}"
    name = _UNSAFE.sub("_", str(raw)).strip("_") or method
    return name[:64]


def permission_of(method: str, operation: Mapping[str, Any]) -> Permission:
    """GET / HEAD / OPTIONS / TRACE (or ``x-readonly: true``) read only; DELETE destructive; others write."""
    if method == "delete":
        return Permission.DESTRUCTIVE
    if method in _READONLY or operation.get("x-readonly") is True:
        return Permission.READONLY
    return Permission.WRITE


def operations(doc: Document, *, only: Iterable[str] | None = None) -> Iterator[Operation]:
    """The document's operations (those named in ``only``, by operationId or tool name, when given).

    Raises:
        DefinitionError: ``only`` names an operation the document does not have.
    """
    wanted = set(only) if only is not None else None
    seen: dict[str, int] = {}
    found: set[str] = set()
    for path, raw in (doc.doc.get("paths") or {}).items():
        item = doc.deref(raw)
        if not isinstance(item, Mapping):
            continue
        shared = list(item.get("parameters") or [])
        for method in METHODS:
            operation = item.get(method)
            if not isinstance(operation, Mapping):
                continue
            name = tool_name(operation, method, path)
            if wanted is not None and name not in wanted and operation.get("operationId") not in wanted:
                continue
            found.update({name, str(operation.get("operationId"))})
            seen[name] = seen.get(name, 0) + 1
            unique = name if seen[name] == 1 else f"{name[:60]}_{seen[name]}"
            yield _operation(doc, unique, (method, str(path)), operation, shared)
    if wanted is not None and wanted - found:
        raise DefinitionError(f"the document has no operation {sorted(wanted - found)}")


class _Inputs:
    """The input schema of one operation, built argument by argument."""

    def __init__(self) -> None:
        self.properties: dict[str, Any] = {}
        self.required: list[str] = []
        self.arguments: list[Argument] = []
        self.skipped: list[str] = []
        self.defs: dict[str, Any] = {}

    def add(self, argument: Argument, schema: dict[str, Any], description: Any) -> None:
        if description and "description" not in schema:
            schema = {"description": str(description), **schema}
        self.properties[argument.name] = schema
        if argument.required:
            self.required.append(argument.name)
        self.arguments.append(argument)

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object", "properties": self.properties}
        if self.required:
            out["required"] = self.required
        out["additionalProperties"] = False
        defs = _used(Document.finish(self.defs), self.properties)
        if defs:
            out["$defs"] = defs
        return out


def _used(defs: dict[str, Any], properties: Mapping[str, Any]) -> dict[str, Any]:
    """The definitions the properties reach (a body whose fields became the arguments leaves its own unused)."""
    kept: dict[str, Any] = {}
    pending = [properties]
    while pending:
        text = json.dumps(pending.pop())
        for name, definition in defs.items():
            if name not in kept and f'"#/$defs/{name}"' in text:
                kept[name] = definition
                pending.append(definition)
    return {name: kept[name] for name in defs if name in kept}


def _operation(doc: Document, name: str, where: tuple[str, str], operation: Mapping[str, Any],
               shared: list[Any]) -> Operation:
    method, path = where
    params = _parameters(doc, shared, operation.get("parameters") or [])
    inputs = _Inputs()
    for p in params:
        wire = str(p["name"])
        if p["in"] == "cookie":
            inputs.skipped.append(f"cookie parameter {wire!r}")
            continue
        place: Place = p["in"]
        arg = wire if sum(1 for q in params if q["name"] == wire) == 1 else f"{place}_{wire}"
        required = place == "path" or p.get("required") is True
        inputs.add(Argument(name=arg, wire_name=wire, place=place, required=required, style=p.get("style"),
                            explode=p.get("explode", p.get("style", "form") == "form")),
                   doc.schema(_param_schema(p), inputs.defs), p.get("description"))
    body_type, flat = None, False
    body = doc.deref(operation.get("requestBody"))
    if isinstance(body, Mapping):
        body_type, schema = _body(doc, body, inputs.defs)
        if body_type is None:
            inputs.skipped.append(f"request body of type {sorted(body.get('content') or {})} (no supported type)")
        elif not inputs.arguments and (fields := _flat_fields(schema, inputs.defs, body)) is not None:
            flat = True  # the body's fields are the tool's arguments
            inputs.properties, inputs.required = fields
        else:
            arg = "request_body" if any(p["name"] == "body" for p in params) else "body"
            inputs.add(Argument(name=arg, wire_name=arg, place="body", required=body.get("required") is True),
                       schema, body.get("description"))
    return Operation(name=name, method=method, path=path, description=_describe(operation, method, path),
                     input_schema=inputs.schema(), arguments=tuple(inputs.arguments), body_type=body_type,
                     flat_body=flat, permission=permission_of(method, operation),
                     security=tuple(operation.get("security", doc.doc.get("security")) or ()),
                     tags=frozenset(str(t) for t in operation.get("tags") or ()), skipped=tuple(inputs.skipped))


def _flat_fields(schema: Mapping[str, Any], defs: Mapping[str, Any], body: Mapping[str, Any]
                 ) -> tuple[dict[str, Any], list[str]] | None:
    """The properties and required names of a JSON object body that can be the tool's arguments themselves:
    an object schema (or one reference to one) with properties, no other keywords that would be lost, required
    as a whole or with no required field."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and len(schema) == 1 and ref.startswith("#/$defs/"):
        schema = defs.get(ref.removeprefix("#/$defs/"), {})
    allowed = {"type", "properties", "required", "title", "description", "additionalProperties", "examples"}
    props = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(props, Mapping) or not props or set(schema) - allowed:
        return None
    required = [str(r) for r in schema.get("required") or []]
    if required and body.get("required") is not True:
        return None
    return dict(props), required


def _parameters(doc: Document, shared: list[Any], own: list[Any]) -> list[dict[str, Any]]:
    """The operation's parameters, its own replacing the path item's of the same name and place."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for raw in [*shared, *own]:
        p = doc.deref(raw)
        if not isinstance(p, Mapping) or not isinstance(p.get("name"), str) or p.get("in") not in (
                "path", "query", "header", "cookie"):
            raise DefinitionError(f"a parameter needs a name and 'in' (path, query, header, cookie): {raw!r:.120}")
        merged[(p["name"], p["in"])] = dict(p)
    return list(merged.values())


def _param_schema(p: Mapping[str, Any]) -> Any:
    if "schema" in p:
        return p["schema"]
    content = p.get("content")
    if isinstance(content, Mapping) and content:
        return next(iter(content.values())).get("schema", {})
    return {"type": "string"}


def _body(doc: Document, body: Mapping[str, Any], defs: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    content = body.get("content") or {}
    for media in _BODY_TYPES:
        for key, value in content.items():
            if key.split(";")[0].strip().lower() == media:
                schema = value.get("schema", {}) if isinstance(value, Mapping) else {}
                if media in ("application/octet-stream", "text/plain"):
                    schema = {"type": "string"}  # sent as the body text
                return media, doc.schema(schema, defs)
    for key, value in content.items():  # application/vnd.x+json and friends
        if key.split(";")[0].strip().lower().endswith("+json"):
            return key, doc.schema(value.get("schema", {}) if isinstance(value, Mapping) else {}, defs)
    return None, {}


def _describe(operation: Mapping[str, Any], method: str, path: str) -> str:
    summary = str(operation.get("summary") or "").strip()
    detail = str(operation.get("description") or "").strip()
    text = summary if not detail or detail == summary else (f"{summary}\n\n{detail}" if summary else detail)
    return text or f"{method.upper()} {path}"
