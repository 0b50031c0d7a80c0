"""Any object schema survives toolrig → framework → toolrig unchanged (generated schemas, every framework)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("langchain_core")
pytest.importorskip("pydantic_ai")
pytest.importorskip("agents")

from toolrig import Runtime, schema_tool
from toolrig.interop import (
    from_langchain,
    from_openai_agents,
    from_pydantic_ai,
    to_langchain,
    to_openai_agents,
    to_pydantic_ai,
)

NAMES = st.sampled_from(["city", "limit", "mode", "tags", "when", "nested", "unit", "x"])
LEAF = st.one_of(
    st.sampled_from([{"type": "string"}, {"type": "integer", "minimum": 0}, {"type": "number"}, {"type": "boolean"},
                     {"type": "string", "format": "date"}, {"type": ["string", "null"]}]),
    st.lists(st.text(max_size=5), min_size=1, max_size=4, unique=True).map(lambda e: {"enum": e}),
)


def node(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        children.map(lambda c: {"type": "array", "items": c}),
        st.lists(children, min_size=2, max_size=3).map(lambda cs: {"anyOf": cs}),
        st.dictionaries(NAMES, children, min_size=1, max_size=3).flatmap(
            lambda props: st.sets(st.sampled_from(sorted(props))).map(
                lambda req: {"type": "object", "properties": props, "required": sorted(req)})),
    )


SCHEMAS = st.recursive(LEAF, node, max_leaves=8)
OBJECTS = st.dictionaries(NAMES, SCHEMAS, max_size=5).flatmap(
    lambda props: st.sets(st.sampled_from(sorted(props) or ["x"])).map(
        lambda req: {"type": "object", "properties": props, "required": sorted(r for r in req if r in props)}))


@settings(max_examples=40)
@given(OBJECTS, st.booleans())
def test_schemas_come_back_unchanged(schema: dict[str, Any], closed: bool) -> None:
    if closed:
        schema = {**schema, "additionalProperties": False}
    tool = schema_tool(name="probe", description="Probe the schema.", input_schema=schema, handler=lambda v: "ok")
    with Runtime([tool], audit=False) as runtime:
        back = [
            from_langchain(to_langchain(runtime=runtime)).get("probe"),
            from_pydantic_ai(to_pydantic_ai(runtime=runtime)).get("probe"),
            from_openai_agents(to_openai_agents(runtime=runtime, strict=False)).get("probe"),
        ]
    for imported in back:
        assert imported is not None
        assert imported.spec.input_schema == tool.spec.input_schema
        assert imported.spec.description == tool.spec.description
