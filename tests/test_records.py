"""The cheap construction and derivation of call-path records (toolrig._records) equal the plain ways."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from toolrig import CallContext, ToolCall, ToolOutcome, to_result
from toolrig._outcome import ErrorKind, ToolError
from toolrig._records import RecordPlan
from toolrig.audit import AuditRecord
from toolrig.runtime import Invocation, Runtime


def _same(a: Any, b: Any) -> None:
    assert type(a) is type(b)
    assert vars(a) == vars(b)
    assert a == b and repr(a) == repr(b)


def _services() -> Any:
    return Runtime([], audit=False).services


@pytest.mark.parametrize("changes", [{}, {"content": "x"}, {"meta": {"a": 1}, "attempts": 3},
                                     {"ok": False, "error": ToolError.of(ErrorKind.TIMEOUT, "late")}])
def test_outcomes(changes: dict[str, Any]) -> None:
    made = ToolOutcome.success("c1", "t", to_result({"a": [1]}), attempts=1)
    plain = ToolOutcome(call_id="c1", name="t", ok=True, content=made.content, result=made.result, attempts=1)
    _same(made, plain)
    _same(made.derive(**changes), dataclasses.replace(made, **changes))
    assert vars(made.derive(**changes)) is not vars(made) and made.content == plain.content  # the original unchanged
    assert made.derive().meta is not ToolOutcome.success("c", "t", to_result(1)).meta  # fresh dicts


@pytest.mark.parametrize("kw", [{}, {"attempts": 2, "repairs": ("r",)}, {"content": "given"}, {"meta": {"m": 1}},
                                {"duration_ms": 1.5, "truncated": True, "exception": ValueError("x")}])
@pytest.mark.parametrize("value", [{"a": [1]}, "text", None])
def test_success_filled_directly_equals_the_constructor(kw: dict[str, Any], value: Any) -> None:
    result = to_result(value)
    made = ToolOutcome.success("c1", "t", result, **kw)
    assert "content" not in vars(made) or "content" in kw  # still rendered on first read
    plain = ToolOutcome(call_id="c1", name="t", ok=True, result=result, **{"content": result.text, **kw})
    assert made.content == plain.content  # rendered now
    _same(made, plain)
    assert made.meta is not ToolOutcome.success("c1", "t", result, **kw).meta or "meta" in kw  # fresh dicts


def test_success_of_an_error_result_and_repeated_fields() -> None:
    made = ToolOutcome.success("c1", "t", to_result(1).__class__(parts=(), is_error=True))
    assert made.ok is False
    with pytest.raises(TypeError):
        ToolOutcome.success("c1", "t", to_result(1), name="other")  # a repeated field: the constructor refuses
    with pytest.raises(TypeError):
        ToolOutcome.success("c1", "t", to_result(1), colour="red")  # an unknown one too


@pytest.mark.parametrize("changes", [{}, {"user": "ann", "tool_version": "1.0"}, {"roles": ["a", "b"]},
                                     {"state": {"k": 1}}, {"metadata": {"m": 2}, "session": "s"}])
def test_contexts(changes: dict[str, Any]) -> None:
    base = CallContext(user="u", roles={"r"}, state={"x": 1})
    derived, plain = base.derive(**changes), dataclasses.replace(base, **changes)
    _same(derived, plain)
    assert isinstance(derived.roles, frozenset)  # normalised fields take the plain way
    assert vars(derived) is not vars(base) and vars(base) == vars(CallContext(user="u", roles={"r"}, state={"x": 1}))


def test_invocations() -> None:
    services = _services()
    call, ctx = ToolCall(name="t", arguments="{}", id="c"), CallContext()
    started = Invocation.start(call, ctx, services)
    plain = Invocation(call=call, context=ctx, services=services, started=started.started)
    _same(started, plain)
    for changes in ({"attempt": 2}, {"arguments": {"a": 1}, "values": {"a": 1}, "repairs": ("r",)}):
        _same(started.derive(**changes), dataclasses.replace(started, **changes))
    with pytest.raises(TypeError):
        started.derive(nope=1)


def test_audit_records() -> None:
    values = {f.name: None for f in dataclasses.fields(AuditRecord)}
    values.update(id="r", call_id="c", time=1.0, tool="t", status="completed", repairs=(), meta={"a": 1})
    plan = RecordPlan(AuditRecord, factories={"meta": dict})
    _same(plan.make(dict(values)), AuditRecord(**values))


def test_a_plan_refuses_to_guess_factories() -> None:
    with pytest.raises(TypeError, match="factories"):
        RecordPlan(ToolOutcome)


@pytest.mark.parametrize("changes", [{}, {"duration_ms": 2.0}, {"meta": {"version": "1"}, "attempts": 2},
                                     {"content": "new", "call_id": "c9"}])
def test_derive_gives_the_merge_of_the_state_and_the_changes_in_its_order(changes: dict[str, Any]) -> None:
    """``derive`` copies the record's ``__dict__`` and updates it: the same items, in the same order, as a merge."""
    for record in (ToolOutcome.success("c1", "t", to_result({"a": [1]}), attempts=1),
                   ToolOutcome.failure("c1", "t", ToolError.of(ErrorKind.TIMEOUT, "late"))):
        derived = record.derive(**changes)
        merged = {**vars(record), **changes}
        assert list(vars(derived).items()) == list(merged.items())
        assert vars(derived) is not vars(record)
    context = CallContext(user="u")
    derived_context = context.derive(call_id="c", tool_name="t")
    assert list(vars(derived_context).items()) == list({**vars(context), "call_id": "c", "tool_name": "t"}.items())
