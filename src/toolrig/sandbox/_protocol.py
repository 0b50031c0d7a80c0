"""The sandboxed tool worker's messages: JSON data both ways, never a pickle.

host -> sandbox (stdin, once)::

    {"tool": {"module": M, "qualname": Q}, "values": {...JSON...}, "context": {...JSON...}, "path": [...]}

sandbox -> host (the private reply channel, once)::

    {"kind": "ok", "result": ToolResult.to_dict()} | {"kind": "error", "error": {type, message, traceback, bases}}

Results and errors use the process workers' data forms (``toolrig.runtime.executors._wire``; the one
place this package names that module): the host rebuilds an exception only from classes it
already knows, everything else becomes a ``RemoteToolError`` that keeps the original type name.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from toolrig.runtime.executors import decode_reply, exception_from_data, exception_to_data, result_from_data

__all__ = ["decode_reply", "exception_from_data", "result_from_data", "run_request"]


def _load(ref: Mapping[str, Any]) -> Any:
    from toolrig import BaseTool, as_tool

    obj: Any = importlib.import_module(str(ref["module"]))
    for part in str(ref["qualname"]).split("."):
        obj = getattr(obj, part)
    return obj if isinstance(obj, BaseTool) else as_tool(obj)


def run_request(request: Mapping[str, Any]) -> dict[str, Any]:
    """Inside the sandbox: load the tool, validate the values again, run it, convert its result."""
    try:
        from toolrig import CallContext

        tool = _load(request["tool"])
        values = tool.validate(request.get("values") or {})
        fields = dict(request.get("context") or {})
        fields["roles"] = frozenset(fields.get("roles") or ())
        result = tool.to_result(tool.invoke_sync(values, CallContext(**fields)))
        return {"kind": "ok", "result": result.to_dict()}
    except BaseException as exc:  # everything the tool raises goes back as data, even SystemExit
        return {"kind": "error", "error": exception_to_data(exc)}
