"""The console's pure parts: forms from schemas (and back), the workflow graph's layout, the charts' numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrig.audit import AuditRecord
from toolrig.console._charts import chart, percentile, tool_stats
from toolrig.console._forms import field_errors, form_arguments, form_fields, input_name
from toolrig.console._graph import layout, render_graph
from toolrig.errors import ArgumentsError
from toolrig.loading import load_source
from toolrig.workflows import branch as branch_step
from toolrig.workflows import foreach, load, parallel, step

TOOLS = {t.name: t for t in load_source(str(Path(__file__).parent / "fixtures" / "console_tools.py"))}
SHIP = TOOLS["ship"]
SCHEMA = SHIP.spec.input_schema


def _by_name(fields: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields:
        out[f.name] = f
        out.update(_by_name(list(f.children)))
    return out


def test_a_nested_schema_gives_one_labelled_field_per_parameter() -> None:
    fields = _by_name(form_fields(SCHEMA))
    assert {n: (f.label, f.kind) for n, f in fields.items()} == {
        "arg/name": ("name", "text"), "arg/parcel": ("parcel", "object"),
        "arg/parcel/weight": ("weight", "number"), "arg/parcel/address": ("address", "object"),
        "arg/parcel/address/city": ("city", "text"), "arg/parcel/address/zip": ("zip", "integer"),
        "arg/mode": ("mode", "enum"), "arg/tags": ("tags", "lines"), "arg/express": ("express", "boolean"),
        "arg/count": ("count", "integer")}
    assert fields["arg/name"].required and not fields["arg/parcel/address/zip"].required
    assert fields["arg/parcel/address/city"].description == "the city"
    assert len({f.id for f in fields.values()}) == len(fields)


def test_a_filled_form_gives_the_arguments_the_validator_accepts() -> None:
    fields = form_fields(SCHEMA)
    arguments, problem = form_arguments(fields, {
        "arg/name": "ann", "arg/parcel/weight": "2.5", "arg/parcel/address/city": "Oslo", "arg/mode": '"sea"',
        "arg/tags": "a\n\nb\n", "arg/express": "true", "arg/count": "", "arg/parcel/address/zip": ""})
    assert problem is None
    assert arguments == {"name": "ann", "parcel": {"weight": 2.5, "address": {"city": "Oslo"}}, "mode": "sea",
                         "tags": ["a", "b"], "express": True}
    SHIP.validate(arguments)


def test_errors_land_on_their_fields() -> None:
    fields = form_fields(SCHEMA)
    arguments, _ = form_arguments(fields, {"arg/name": "ann", "arg/parcel/weight": "heavy"})
    with pytest.raises(ArgumentsError) as caught:
        SHIP.validate(arguments)
    by_field, loose = field_errors(caught.value.errors, fields)
    assert set(by_field) == {"arg/parcel/weight", "arg/parcel/address"} or set(by_field) == {
        "arg/parcel/weight", "arg/parcel/address/city"}
    assert loose == []
    assert field_errors([{"loc": ["nowhere"], "msg": "bad"}], fields) == ({}, ["nowhere: bad"])


def test_raw_json_stands_for_the_whole_call_and_what_a_form_cannot_express_is_json() -> None:
    fields = form_fields({"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "integer"}}}},
        "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "shape": {"anyOf": [{"type": "object"}, {"type": "integer"}]},
        "loop": {"$ref": "#/properties/loop"}}})
    kinds = {f.label: f.kind for f in fields}
    assert kinds == {"items": "json", "either": "choice", "shape": "json", "loop": "json"}
    values, _ = form_arguments(fields, {"arg/items": '[{"a": 1}]', "arg/either": "7", "arg/shape": "{}"})
    assert values == {"items": [{"a": 1}], "either": 7, "shape": {}}
    assert form_arguments(fields, {"arg/either": "seven"})[0] == {"either": "seven"}
    assert form_arguments(fields, {"raw_json": '{"x": 1}', "arg/either": "7"}) == ({"x": 1}, None)
    assert form_arguments(fields, {"raw_json": "{nope"})[1] is not None


def test_input_names_escape_slashes() -> None:
    assert input_name(["a/b", "c~d", 0]) == "arg/a~1b/c~0d/0"


@given(st.dictionaries(st.sampled_from(["arg/name", "arg/parcel/weight", "arg/parcel/address/city", "arg/mode",
                                        "arg/tags", "arg/express", "arg/count", "arg/parcel/address/zip",
                                        "raw_json", "arg/unknown"]), st.text(max_size=40)))
def test_any_submitted_form_is_read_without_crashing(values: dict[str, str]) -> None:
    arguments, problem = form_arguments(form_fields(SCHEMA), values)
    assert problem is not None or arguments is not None
    if isinstance(arguments, dict):
        try:
            SHIP.validate(arguments)
        except ArgumentsError as exc:
            field_errors(exc.errors, form_fields(SCHEMA))


def _overlap(a: Any, b: Any) -> bool:
    return a.x < b.x + b.w and b.x < a.x + a.w and a.y < b.y + b.h and b.y < a.y + a.h


def test_the_graph_is_laid_out_from_the_definition_without_overlaps() -> None:
    steps = [step("search", "find", q="${inputs.q}"),
             parallel("both", step("left", "shout", text="a"), step("right", "shout", text="b"), mode="settled"),
             branch_step("pick", ("steps.left.output == 'A'", [step("yes", "shout", text="y")]),
                         otherwise=[step("no", "shout", text="n")]),
             foreach("each", "${steps.search.output}", step("one", "shout", text="${item}"))]
    block = layout(steps)
    boxes = [n for n in block.nodes if n.kind not in ("frame", "bar")]
    assert {n.key for n in boxes} >= {"search", "both", "left", "right", "pick", "yes", "no", "each", "one"}
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not _overlap(a, b), (a.key, b.key)
    for n in block.nodes:
        assert n.x >= 0 and n.y >= 0 and n.x + n.w <= block.w + 32 and n.y + n.h <= block.h + 32
    left, right = next(n for n in boxes if n.key == "left"), next(n for n in boxes if n.key == "right")
    assert left.y == right.y and left.x < right.x  # branches side by side
    search, pick = next(n for n in boxes if n.key == "search"), next(n for n in boxes if n.key == "pick")
    assert search.y < left.y < pick.y  # in order, top to bottom
    svg = str(render_graph(steps, {"search": "ok", "left": "running", "each[0]/one": "error"}, name="x<y"))
    assert 'data-step="left" data-status="running"' in svg and 'data-step="one" data-status="error"' in svg
    assert 'aria-label="x&lt;y workflow graph"' in svg


def test_a_workflow_file_draws(tmp_path: Path) -> None:
    flow = load(Path(__file__).parent / "fixtures" / "two_steps.yaml")
    svg = str(render_graph(flow.steps, name=flow.name))
    assert svg.count("<g data-step=") == 2 and "wait_for_gate" in svg


def test_percentiles_and_per_tool_stats() -> None:
    assert percentile([], 0.5) is None
    assert percentile([5.0], 0.95) == 5.0
    assert percentile([float(i) for i in range(1, 101)], 0.5) == 50.0
    assert percentile([float(i) for i in range(1, 101)], 0.95) == 95.0
    rows = [AuditRecord(id=str(i), call_id=str(i), time=1000.0 + i, tool="a" if i % 3 else "b<i>",
                        ok=i % 5 != 0, kind="ok", duration_ms=float(i)) for i in range(60)]
    stats = {s.tool: s for s in tool_stats(rows, 1000.0, 1060.0)}
    assert stats["a"].calls == 40 and stats["b<i>"].calls == 20
    assert stats["a"].errors == sum(1 for i in range(60) if i % 3 and i % 5 == 0)
    assert sum(b.calls for b in stats["a"].buckets) == 40
    svg = str(chart(stats["b<i>"]))
    assert "b&lt;i&gt;" in svg and "<i>" not in svg and "style=" not in svg
