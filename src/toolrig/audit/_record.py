"""One audit row: :class:`AuditRecord`, and how it is built from a call and its outcome.

Building a record (redaction, JSON encoding) happens in the background writer thread, never on
the call path: the audit stage only hands over references to the frozen call, context and outcome.
"""

from __future__ import annotations

import functools
import json
import os
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, ParamSpec

from toolrig._calls import ToolCall
from toolrig._context import CallContext
from toolrig._outcome import ErrorKind, ToolOutcome
from toolrig._records import RecordPlan
from toolrig._shown import shown_name
from toolrig.audit._loads import loads
from toolrig.redact import Redactor

__all__ = ["COMPLETED", "STARTED", "AuditRecord", "CallEntry", "call_entry", "completed_record", "entry_fallback",
           "entry_record", "fallback_record", "new_row_id", "record_from_dict", "reduced_record", "started_record"]

STARTED = "started"
"""Status of a row written before the tool ran (strict mode) and not completed yet."""

COMPLETED = "completed"
"""Status of a row whose call finished (successfully or not)."""

_META_KEYS = ("cache", "stale", "fence", "fallback")
P = ParamSpec("P")


@dataclass(frozen=True, kw_only=True)
class AuditRecord:
    """What the audit log keeps about one call.

    Attributes:
        id: unique row id (a call id from a model may repeat across sessions).
        call_id: the tool call's id.
        time: when the call entered the runtime (seconds since the epoch).
        user: the end user, from the call context.
        agent: the agent, from the call context.
        session: the session, from the call context.
        tool: the tool name (the resolved name when the call was resolved).
        version: the tool's version, when it was resolved.
        arguments: the arguments as the model sent them, after redaction.
        decision: the policy decision (verdict, reason, source), when one was made.
        status: ``"started"`` (strict mode, call not finished) or ``"completed"``.
        ok: whether the call succeeded (None while started).
        kind: ``"ok"`` or the error kind (None while started).
        error: the error message, after redaction.
        duration_ms: time spent in the runtime.
        attempts: attempts made (retries included).
        run_id: the workflow run the call was a step of (from the call context), else None.
        step_id: the step of that run, else None.
        repairs: argument repairs applied.
        meta: a few outcome facts (``cache``, ``stale``, ``fence``, ``fallback``, ``truncated``), and
            ``client_name``: the name an MCP client gave itself (``clientInfo.name``; self-declared, so
            recorded apart from ``agent``).
    """

    id: str
    call_id: str
    time: float
    tool: str
    user: str | None = None
    agent: str | None = None
    session: str | None = None
    version: str | None = None
    arguments: Any = None
    decision: Mapping[str, Any] | None = None
    status: str = COMPLETED
    ok: bool | None = None
    kind: str | None = None
    error: str | None = None
    duration_ms: float | None = None
    attempts: int | None = None
    repairs: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)
    run_id: str | None = None
    step_id: str | None = None
    arguments_json: str | None = field(default=None, compare=False, repr=False)
    """``arguments`` as JSON text when already known (the text the model sent, when redaction changed
    nothing), so a sink need not encode it again; None otherwise. Not part of equality or :meth:`to_dict`."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        out = asdict(self)
        del out["arguments_json"]
        out["repairs"] = list(self.repairs)
        return out


_PLAN = RecordPlan(AuditRecord, factories={"meta": dict})
_EVERY_FIELD = frozenset(AuditRecord.__dataclass_fields__)


def _build(values: dict[str, Any]) -> AuditRecord:
    """An :class:`AuditRecord` from a value for every field (cheaply: :mod:`toolrig._records`)."""
    made: AuditRecord = _PLAN.make(values)
    return made


def _build_whole(values: dict[str, Any]) -> AuditRecord:
    """:func:`_build` of ``values`` that name every field, once each (the writer's rows: a literal of every field).

    ``RecordPlan.make`` checks which fields were given and fills the rest from defaults: two set operations per
    row (~2 µs, a fifth of building the row). With every field given there is nothing to fill, so the record's
    ``__dict__`` is ``values`` itself; anything else takes :func:`_build`.
    """
    if len(values) != len(_EVERY_FIELD) or values.keys() != _EVERY_FIELD:
        return _build(values)
    new: AuditRecord = object.__new__(AuditRecord)
    new.__dict__.update(values)
    return new


class _Duplicates(dict[str, Any]):
    """A JSON object whose text repeated a key: its text says more than its value (the last one wins)."""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    return out if len(out) == len(pairs) else _Duplicates(out)


_DECODE = json.JSONDecoder(object_pairs_hook=_object).decode
"""``json.loads`` (same values, same errors) that marks objects with repeated keys."""


MAX_DEPTH = 64
"""Deeper parts of stored values are replaced by a marker (redaction stops nowhere short of it)."""

MAX_ARGUMENTS = 100_000
"""Characters of argument text kept when arguments cannot be stored as JSON (marked as capped)."""

MAX_NAME = 128
"""Characters of a requested tool name or call id kept in a row (they come from the model)."""

TOO_DEEP = f"[toolrig: nested deeper than {MAX_DEPTH} levels; not stored]"
CIRCULAR = "[toolrig: circular reference; not stored]"


def _arguments(call: ToolCall, redactor: Redactor) -> tuple[Any, str | None]:
    """:func:`_arguments_of` the call's arguments."""
    return _arguments_of(call.arguments, redactor)


def _arguments_of(args: Any, redactor: Redactor) -> tuple[Any, str | None]:
    """The redacted arguments, and the text the model sent when it encodes exactly that value (else None).

    The text stands for the value only when redaction changed nothing and no object in it repeated a
    key (a repeated key could hide a secret the parsed value no longer shows). Never raises: what
    cannot be decoded or encoded is stored as capped, redacted text, marked as such.
    """
    sent = None
    if isinstance(args, str) and len(args) <= MAX_ARGUMENTS and not redactor.may_redact(args):
        try:  # nothing in the text can be redacted: store it as sent, parsed once for the record
            parsed = loads(args) if args.strip() else {}
            return (None, None) if parsed is None else (parsed, args if args.strip() else "{}")
        except (ValueError, RecursionError):
            pass  # not JSON: the general way below stores it as capped text
    if isinstance(args, str):
        try:
            if args.strip():
                sent, args = args, _DECODE(args)
            else:
                args = {}
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's recursion limit
            capped = _capped_text(args, redactor)
            return capped, None if isinstance(capped, str) else _ENCODE(capped)
    plain = _plain(args, 0, set())
    value = redactor.value(plain)
    if value is None:
        return None, None
    text = sent if value is plain and plain is args else None
    if text is None:
        try:
            text = _ENCODE(value)
        except (TypeError, ValueError, RecursionError) as exc:  # _plain makes this unreachable; never lose the row
            text = _ENCODE({"toolrig_unstored": f"the arguments could not be encoded ({type(exc).__name__})"})
    if len(text) > MAX_ARGUMENTS:
        capped = _capped_text(text, redactor)
        return capped, _ENCODE(capped)
    return value, text


_ENCODE = json.JSONEncoder(ensure_ascii=False, default=str).encode


def _capped_text(text: str, redactor: Redactor) -> Any:
    if len(text) <= MAX_ARGUMENTS:
        return redactor.text(text)
    return {"toolrig_unstored": f"{len(text):,} characters of arguments, over what a row keeps; the first "
                                f"{MAX_ARGUMENTS:,} are kept", "text": redactor.text(text[:MAX_ARGUMENTS])}


def _plain(value: Any, depth: int, path: set[int]) -> Any:
    """A JSON-encodable form (unknown objects become their repr, bytes their size); plain data is returned as is.

    Past :data:`MAX_DEPTH` levels a subtree becomes :data:`TOO_DEEP`; a container met again on its own
    path becomes :data:`CIRCULAR` (so the result is always finite and encodable).
    """
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if isinstance(value, Mapping | list | tuple):
        if depth >= MAX_DEPTH:
            return TOO_DEEP
        if id(value) in path:
            return CIRCULAR
        path.add(id(value))
        try:
            return _container(value, depth, path)
        finally:
            path.discard(id(value))
    if isinstance(value, str | int | float):
        return value
    if isinstance(value, bytes | bytearray):
        return f"<{len(value)} bytes>"
    return repr(value)[:1000]


def _container(value: Any, depth: int, path: set[int]) -> Any:
    if type(value) is dict and all(type(k) is str for k in value):
        items = {k: _plain(v, depth + 1, path) for k, v in value.items()}
        return value if all(items[k] is v for k, v in value.items()) else items
    if isinstance(value, Mapping):
        return {str(k)[:1000]: _plain(v, depth + 1, path) for k, v in value.items()}
    listed = [_plain(v, depth + 1, path) for v in value]
    return value if type(value) is list and all(a is b for a, b in zip(listed, value, strict=True)) else listed


def _name(text: Any) -> str:
    """A tool name or call id as stored: a string, capped at :data:`MAX_NAME` characters, redacted."""
    return shown_name(text, MAX_NAME)


@functools.lru_cache(maxsize=1024)
def _tool_name(text: str) -> str:
    """:func:`_name` of a tool name (the same few names recur on every row: computed once each)."""
    return shown_name(text, MAX_NAME)


def _client_facts(ctx: CallContext) -> dict[str, Any]:
    """``{"client_name": ...}`` when the caller's client named itself (capped and redacted), else nothing."""
    name = ctx.metadata.get("client_name") if ctx.metadata else None
    return {} if name is None else {"client_name": _name(name)}


_random = random.Random()  # private: seeded from os.urandom, unaffected by random.seed() in user code
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_random.seed)  # a forked child must not repeat its parent's bits
_bits = _random.getrandbits
_now_ns = time.time_ns


def new_row_id() -> str:
    """A unique row id that sorts by creation time (nanoseconds, then 32 random bits)."""
    return f"{_now_ns():016x}{_bits(32):08x}"


def _optional(text: str | None) -> str | None:
    """A workflow run or step id as stored (capped like names), None outside workflow runs."""
    return None if text is None else _name(text)


def _carries_run(build: Callable[P, AuditRecord]) -> Callable[P, AuditRecord]:
    """``build`` (a record builder whose fourth argument is the call's context) with the record also carrying the
    context's workflow run and step, when it has them."""

    @functools.wraps(build)
    def built(*args: P.args, **kwargs: P.kwargs) -> AuditRecord:
        record = build(*args, **kwargs)
        ctx = kwargs.get("ctx", args[3] if len(args) > 3 else None)
        if not isinstance(ctx, CallContext) or (ctx.run_id is None and ctx.step_id is None):
            return record
        return replace(record, run_id=_optional(ctx.run_id), step_id=_optional(ctx.step_id))

    return built


@_carries_run
def started_record(row_id: str, started: float, call: ToolCall, ctx: CallContext,
                   redactor: Redactor) -> AuditRecord:
    """The row written before the tool runs (strict mode)."""
    arguments, text = _arguments(call, redactor)
    return AuditRecord(id=row_id, call_id=_name(call.id), time=started, tool=_name(call.name), user=ctx.user,
                       agent=ctx.agent, session=ctx.session, arguments=arguments, status=STARTED,
                       meta=_client_facts(ctx), arguments_json=text)


CallEntry = tuple[str | None, float, float, Any, Any, Any, Any, Any, Any, Any, Any, Any, Any, bool, Any, int,
                  tuple[str, ...], Mapping[str, Any], bool]
"""What the audit row of a finished call is built from, flat: ``(row_id or None, started, duration_ms, call id,
call name, arguments, user, agent, session, client name, run id, step id, outcome name, ok, error, attempts,
repairs, meta, truncated)`` — references only (:func:`call_entry`), so the call's objects and its outcome's
result are not kept alive (nor walked by the garbage collector) while the row waits for the writer."""


def call_entry(  # noqa: PLR0917 - the order of Entry (``call_entry(*entry)``); on the call path, positional
        row_id: str | None, started: float, call: ToolCall, ctx: CallContext, outcome: ToolOutcome,
        duration_ms: float) -> CallEntry:
    """The :data:`CallEntry` of a finished call (cheap: attribute reads, no copy, no encoding)."""
    metadata = ctx.metadata
    return (row_id, started, duration_ms, call.id, call.name, call.arguments, ctx.user, ctx.agent, ctx.session,
            metadata.get("client_name") if metadata else None, ctx.run_id, ctx.step_id, outcome.name, outcome.ok,
            outcome.error, outcome.attempts, outcome.repairs, outcome.meta, outcome.truncated)


def completed_record(row_id: str, started: float, call: ToolCall, ctx: CallContext, outcome: ToolOutcome, *,
                     duration_ms: float, redactor: Redactor) -> AuditRecord:
    """The final row of a call, from its outcome (with the context's workflow run and step, when it has them)."""
    return entry_record(call_entry(row_id, started, call, ctx, outcome, duration_ms), row_id, redactor)


def entry_record(entry: CallEntry, row_id: str, redactor: Redactor) -> AuditRecord:
    """The final row of a call, from its :data:`CallEntry` (``row_id`` given: the entry's may be None)."""
    (_, started, duration_ms, call_id, call_name, args, user, agent, session, client_name, run_id, step_id, name, ok,
     error, attempts, repairs, meta, truncated) = entry
    facts = {k: meta[k] for k in _META_KEYS if k in meta} if meta else {}
    if truncated:
        facts["truncated"] = True
    if client_name is not None:
        facts["client_name"] = _name(client_name)
    kind = error.kind.value if error is not None else "ok" if ok else ErrorKind.EXECUTION_ERROR.value
    version = meta.get("version")
    decision = meta.get("decision")
    arguments, text = _arguments_of(args, redactor)
    tool = name or call_name
    return _build_whole({
        "id": row_id, "call_id": _name(call_id), "time": started,
        "tool": _tool_name(tool) if type(tool) is str else _name(tool),
        "user": user, "agent": agent, "session": session, "version": None if version is None else str(version),
        "arguments": arguments,
        "decision": redactor.value(_plain(decision, 0, set())) if decision is not None else None,
        "status": COMPLETED,
        "ok": ok, "kind": kind, "error": None if error is None else redactor.text(error.message),
        "duration_ms": duration_ms, "attempts": attempts, "repairs": tuple(repairs), "meta": facts,
        "arguments_json": text, "run_id": _optional(run_id), "step_id": _optional(step_id)})


def fallback_record(row_id: str, started: float, call: ToolCall, ctx: CallContext, outcome: ToolOutcome | None,
                    *, problem: BaseException) -> AuditRecord:
    """The row written when the usual row could not be built: what is certain, and why the rest is missing."""
    if outcome is not None:
        return entry_fallback(call_entry(row_id, started, call, ctx, outcome, 0.0), row_id, problem=problem)
    metadata = ctx.metadata
    return _fallback(row_id, started, call_id=call.id, call_name=call.name, user=ctx.user, agent=ctx.agent,
                     session=ctx.session, client_name=metadata.get("client_name") if metadata else None,
                     run_id=ctx.run_id, step_id=ctx.step_id, finished=False, ok=None, kind=None, problem=problem)


def entry_fallback(entry: CallEntry, row_id: str, *, problem: BaseException) -> AuditRecord:
    """:func:`fallback_record` of a finished call, from its :data:`CallEntry`."""
    (_, started, _, call_id, call_name, _, user, agent, session, client_name, run_id, step_id, _, ok, error,
     *_) = entry
    kind = "ok" if ok else (error.kind.value if error is not None else ErrorKind.EXECUTION_ERROR.value)
    return _fallback(row_id, started, call_id=call_id, call_name=call_name, user=user, agent=agent, session=session,
                     client_name=client_name, run_id=run_id, step_id=step_id, finished=True, ok=ok, kind=kind,
                     problem=problem)


def _fallback(row_id: str, started: float, *, call_id: Any, call_name: Any, user: Any, agent: Any, session: Any,
              client_name: Any, run_id: str | None, step_id: str | None, finished: bool, ok: bool | None,
              kind: str | None, problem: BaseException) -> AuditRecord:
    client = {} if client_name is None else {"client_name": _name(client_name)}
    return AuditRecord(id=row_id, call_id=_name(call_id), time=started, tool=_name(call_name),
                       user=_name(user) if user is not None else None,
                       agent=_name(agent) if agent is not None else None,
                       session=_name(session) if session is not None else None,
                       arguments={"toolrig_unstored": f"the arguments could not be stored ({type(problem).__name__})"},
                       status=COMPLETED if finished else STARTED, ok=ok, kind=kind,
                       meta={"audit_problem": type(problem).__name__, **client},
                       run_id=_optional(run_id), step_id=_optional(step_id))


def record_from_dict(data: Mapping[str, Any]) -> AuditRecord:
    """The record :meth:`AuditRecord.to_dict` gave ``data`` for (a journal line read back).

    Raises:
        KeyError, TypeError, ValueError: ``data`` is not such a dict.
    """
    values = {f: data[f] for f in _FIELDS if f in data}
    values["repairs"] = tuple(values.get("repairs") or ())
    values["meta"] = dict(values.get("meta") or {})
    for required in ("id", "call_id", "time", "tool"):
        if not isinstance(values[required], str | float | int):
            raise TypeError(f"audit record field {required!r} is {type(values[required]).__name__}")
    return AuditRecord(**values)


_FIELDS = tuple(f for f in AuditRecord.__dataclass_fields__ if f != "arguments_json")


def _clean(text: str | None) -> str | None:
    """``text`` without what stores refuse in text (NUL, unpaired surrogates)."""
    if text is None:
        return None
    return str(text).encode("utf-8", "replace").decode("utf-8").replace("\x00", "\ufffd")


def reduced_record(record: AuditRecord, problem: BaseException) -> AuditRecord:
    """``record`` cut down to what any store accepts (ids, time, names, outcome), for a row the store refused."""
    return AuditRecord(id=str(_clean(record.id)), call_id=str(_clean(record.call_id)), time=float(record.time),
                       tool=str(_clean(record.tool)), user=_clean(record.user), agent=_clean(record.agent),
                       session=_clean(record.session), version=_clean(record.version),
                       arguments={"toolrig_unstored": f"the store refused this row ({type(problem).__name__})"},
                       status=record.status, ok=record.ok, kind=_clean(record.kind), duration_ms=record.duration_ms,
                       attempts=record.attempts, meta={"audit_problem": type(problem).__name__})
