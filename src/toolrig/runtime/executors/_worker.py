"""The child side of process isolation: a loop that runs the tool calls its host sends, one at a time.

The host starts ``python -c "...; main()"`` in a new session (see
:mod:`toolrig.runtime.executors._process_pool`). Every message is one frame: an 8-byte big-endian length,
then the payload. The host sends pickles (it trusts itself); the child answers with JSON data only
(:mod:`toolrig.runtime.executors._wire`), so nothing a tool does can make the host unpickle anything::

    child -> host   {"kind": "ready", "pid": N}                     once, after start-up
    host  -> child  pickle ("call", tool_or_ref, values, context_fields)
    child -> host   {"kind": "progress", "progress", "total", "message"}  any number of times, then
    child -> host   {"kind": "ok", "result": ToolResult.to_dict()} | {"kind": "error", "error": {...}}

The tool's result is converted here, by its own ``to_result`` (formatter included), so what
crosses is plain data.

Tools travel by reference (:class:`FunctionRef`: module + qualified name) or, for ``Tool``
instances, as :class:`InstanceRef` (the class by reference and the instance's own attributes,
without toolrig's live state such as stats and locks). Before the loop starts, the protocol moves to
private file descriptors: fd 0 becomes ``/dev/null`` and fd 1 a copy of stderr, so a tool's
``print()`` or ``input()`` cannot corrupt the protocol. End of input means "exit".
"""

from __future__ import annotations

import importlib
import os
import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from toolrig.runtime.executors._reaper import become_subreaper, reap_zombies
from toolrig.runtime.executors._wire import FRAME, encode_reply, exception_to_data

__all__ = ["FunctionRef", "InstanceRef", "load_reference", "main", "pack", "read_frame", "run_call"]


@dataclass(frozen=True, slots=True)
class FunctionRef:
    """A module-level function (or ``@tool`` object), named so another process can import it."""

    module: str
    qualname: str


def pack(message: object) -> bytes:
    """One host-to-child frame: the length prefix and the pickled ``message``."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return FRAME.pack(len(data)) + data


def read_frame(fd: int) -> bytes | None:
    """Read one frame's payload from a blocking descriptor; None at end of input."""
    head = _read_exactly(fd, FRAME.size)
    if head is None:
        return None
    return _read_exactly(fd, FRAME.unpack(head)[0])


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


@dataclass(frozen=True, slots=True)
class InstanceRef:
    """A tool object sent as its class (pickled by reference) and its own attributes."""

    cls: type
    attributes: dict[str, Any]

    def rebuild(self) -> Any:
        """A new instance of ``cls`` with the attributes, made without calling ``__init__``."""
        obj: Any = object.__new__(self.cls)
        obj.__dict__.update(self.attributes)
        return obj


_loaded: dict[FunctionRef, Any] = {}


def load_reference(ref: FunctionRef) -> Any:
    """Import the object ``ref`` names and make it a tool (cached per process)."""
    tool = _loaded.get(ref)
    if tool is None:
        from toolrig._define import BaseTool
        from toolrig._tool_class import as_tool

        obj: Any = importlib.import_module(ref.module)
        for part in ref.qualname.split("."):
            obj = getattr(obj, part)
        tool = obj if isinstance(obj, BaseTool) else as_tool(obj)
        _loaded[ref] = tool
    return tool


def _context(fields: Mapping[str, Any], emit: Callable[[bytes], None]) -> Any:
    from toolrig._context import CallContext

    values = dict(fields)
    wants_progress = values.pop("progress", False)

    def progress(done: float, total: float | None = None, message: str | None = None) -> None:
        emit(encode_reply({"kind": "progress", "progress": done, "total": total, "message": message}))

    return CallContext(**values, progress=progress if wants_progress else None)


def run_call(payload: bytes, emit: Callable[[bytes], None]) -> bytes:
    """Run one ``("call", ...)`` message and return the reply frame (JSON data)."""
    try:
        kind, tool, values, fields = pickle.loads(payload)
        if kind != "call":
            raise ValueError(f"unknown message {kind!r}")
        if isinstance(tool, FunctionRef):
            tool = load_reference(tool)
        elif isinstance(tool, InstanceRef):
            tool = tool.rebuild()
        result = tool.to_result(tool.invoke_sync(values, _context(fields, emit)))
        reply: dict[str, Any] = {"kind": "ok", "result": result.to_dict()}
    except BaseException as exc:  # everything the tool raises goes back to the host, even SystemExit
        reply = {"kind": "error", "error": exception_to_data(exc)}
    finally:
        reap_zombies()
    try:
        return encode_reply(reply)
    except Exception as exc:
        return encode_reply({"kind": "error", "error": exception_to_data(TypeError(
            f"the tool's result cannot be sent back from its process: {exc}"))})


def main() -> None:
    """Serve calls on the protocol descriptors until the host closes our input."""
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)

    def emit(frame: bytes) -> None:
        _write_all(proto_out, frame)

    become_subreaper()
    try:
        emit(encode_reply({"kind": "ready", "pid": os.getpid()}))
        while (payload := read_frame(proto_in)) is not None:
            emit(run_call(payload, emit))
    except (BrokenPipeError, KeyboardInterrupt):  # the host went away, or asked us to stop
        return
