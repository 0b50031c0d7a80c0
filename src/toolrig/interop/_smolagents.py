"""smolagents both ways: :func:`from_smolagents` (``Tool`` s) and :func:`to_smolagents`.

smolagents describes inputs as ``{name: {"type", "description", "nullable"?, "enum"?}}`` with its own type names
(``string``, ``integer``, ``number``, ``boolean``, ``array``, ``object``, ``any``, ``image``, ``audio``, ``null``).
Imported: each input becomes a JSON Schema property (``nullable`` ones optional and accepting null; ``any``,
``image`` and ``audio`` accept any value), validated by toolrig before ``forward`` runs (on a worker thread: the
tools are synchronous). Exported: each property becomes an input of the nearest smolagents type (a union of plain
types a list of them, anything else ``any``); optional properties are ``nullable``; the runtime validates the
real schema.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import anyio.to_thread

from toolrig._context import CallContext
from toolrig._define import BaseTool
from toolrig._schematool import SchemaTool
from toolrig.interop._bridge import Exported, exported, foreign_tool, require, toolset_of
from toolrig.providers import drop_strict_nulls
from toolrig.runtime import Runtime
from toolrig.toolsets import FunctionToolset

__all__ = ["from_smolagents", "to_smolagents"]

_ANY = frozenset({"any", "image", "audio"})
_PLAIN = frozenset({"string", "integer", "number", "boolean", "array", "object", "null"})


def from_smolagents(tools: Any, **options: Any) -> FunctionToolset:
    """smolagents tools as a toolrig toolset.

    Args:
        tools: a ``smolagents.Tool`` or an iterable of them.
        **options: spec options for every imported tool (``permission=``, ``timeout=`` ...).
    """
    smol = require("smolagents")
    items: Iterable[Any] = [tools] if isinstance(tools, smol.Tool) else list(tools)
    made = []
    for item in items:
        if not isinstance(item, smol.Tool):
            raise TypeError(f"from_smolagents takes smolagents Tools, got {type(item).__name__}")
        made.append(_import_one(item, options))
    return toolset_of(made, "smolagents")


def _property(spec: Mapping[str, Any]) -> dict[str, Any]:
    kinds = spec.get("type")
    names = [kinds] if isinstance(kinds, str) else list(kinds or [])
    out: dict[str, Any] = {k: v for k, v in spec.items() if k not in ("type", "nullable")}
    if not any(n in _ANY for n in names) and names:
        out["type"] = names[0] if len(names) == 1 else names
    if spec.get("nullable") and "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = types if "null" in types else [*types, "null"]
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    return out


def input_schema(inputs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The JSON Schema of a smolagents ``inputs`` table."""
    return {"type": "object", "properties": {n: _property(s) for n, s in inputs.items()},
            "required": [n for n, s in inputs.items() if not s.get("nullable")]}


def _import_one(tool: Any, options: Mapping[str, Any]) -> SchemaTool:
    def run(values: dict[str, Any]) -> Any:
        return tool(**values)

    async def handler(values: dict[str, Any], ctx: CallContext) -> Any:
        return await anyio.to_thread.run_sync(run, dict(values))

    return foreign_tool(name=tool.name, description=tool.description or "", schema=input_schema(tool.inputs),
                        handler=handler, origin="smolagents", options=options)


def _smol_type(schema: Any) -> str | list[str]:
    if not isinstance(schema, Mapping):
        return "any"
    kind = schema.get("type")
    if isinstance(kind, str) and kind in _PLAIN:
        return kind
    if isinstance(kind, list) and all(k in _PLAIN for k in kind):
        return list(kind)
    branches = schema.get("anyOf")
    if isinstance(branches, list):
        kinds = [_smol_type(b) for b in branches]
        flat = [k for k in kinds if isinstance(k, str) and k != "any"]
        if len(flat) == len(kinds):
            return flat[0] if len(flat) == 1 else flat
    if "$ref" in schema or "properties" in schema:
        return "object"
    return "any"


def smol_inputs(schema: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A smolagents ``inputs`` table for a JSON Schema of type object (the nearest types)."""
    required = set(schema.get("required") or ())
    out: dict[str, dict[str, Any]] = {}
    for name, prop in (schema.get("properties") or {}).items():
        entry: dict[str, Any] = {"type": _smol_type(prop),
                                 "description": (prop.get("description") if isinstance(prop, Mapping) else None)
                                 or name}
        if isinstance(prop, Mapping) and isinstance(prop.get("enum"), list):
            entry["enum"] = list(prop["enum"])
        if name not in required:
            entry["nullable"] = True
        out[name] = entry
    return out


def to_smolagents(tools: Any = None, runtime: Runtime | None = None, *,
                  context: CallContext | None = None) -> list[Any]:
    """toolrig tools as smolagents ``Tool`` s whose every call goes through a toolrig :class:`Runtime`.

    A call returns the outcome's content (what the model should read; an error line for a failed call).

    Args:
        tools: the tools to export; None: every tool ``runtime`` offers.
        runtime: the runtime calls go through (default: ``Runtime(tools)``).
        context: the base context of every call (default: :func:`toolrig.current_context` at call time).
    """
    smol = require("smolagents")
    chosen, via = exported(tools, runtime, context, "smolagents")
    return [_export_one(tool, via, smol) for tool in chosen]


def _export_one(tool: BaseTool, via: Exported, smol: Any) -> Any:
    name, schema = tool.name, tool.spec.input_schema

    def forward(self: Any, **kwargs: Any) -> str:
        outcome = via.call_sync(name, drop_strict_nulls(kwargs, schema))
        return outcome.content

    namespace = {"name": name.replace("-", "_"),  # a smolagents name is a Python identifier
                 "description": tool.spec.description or name, "inputs": smol_inputs(schema),
                 "output_type": "string", "skip_forward_signature_validation": True, "forward": forward}
    cls = type(f"Toolrig_{name}", (smol.Tool,), namespace)
    return cls()
