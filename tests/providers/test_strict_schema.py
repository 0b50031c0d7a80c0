from __future__ import annotations

import inspect
import itertools
import json
from typing import Annotated, Any, Literal, Optional

import jsonschema_rs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_samples import Color, build_tree, keyword_tool, place_order, tag_counts, walk
from pydantic import Field, create_model

from toolrig import schema_tool, tool
from toolrig._define import BaseTool
from toolrig.providers import check, drop_strict_nulls, to_strict_schema
from toolrig.providers._strict import STRICT_KEYWORDS, accepts_null


def assert_strict_invariants(original: dict[str, Any], strict: dict[str, Any]) -> None:
    """All properties required, additionalProperties false everywhere, only strict keywords, no $ref siblings."""
    jsonschema_rs.validator_for(strict)  # still a valid JSON Schema
    for path, node in walk(strict):
        assert set(node) <= STRICT_KEYWORDS, (path, set(node) - STRICT_KEYWORDS)
        if "$ref" in node:
            assert set(node) == {"$ref"}, path
        if node.get("type") == "object" or "properties" in node or (
                isinstance(node.get("type"), list) and "object" in node["type"]):
            assert node["additionalProperties"] is False, path
            assert node["required"] == list(node["properties"]), path
    for path, node in walk(original):
        if not isinstance(node.get("properties"), dict) or "/allOf/" in path or "/oneOf/" in path:
            continue  # merged or renamed away: checked by the structural asserts above
        target = _at(strict, path)
        for name in node["properties"]:
            if name not in (node.get("required") or []):
                assert accepts_null(target["properties"][name]), f"{path}/properties/{name} not nullable"


def _at(schema: dict[str, Any], path: str) -> dict[str, Any]:
    """The strict node at an original JSON pointer (a wrapped property is looked up in its anyOf)."""
    node: Any = schema
    for part in [p for p in path.split("/") if p]:
        if part not in node and "anyOf" in node:
            node = next(a for a in node["anyOf"] if a.get("type") != "null")
        node = node[part]
    if "properties" not in node and "anyOf" in node:
        node = next(a for a in node["anyOf"] if "properties" in a)
    return node  # type: ignore[no-any-return]


def test_nested_models_get_strict_everywhere() -> None:
    original = dict(place_order.spec.input_schema)
    result = to_strict_schema(place_order.spec.input_schema)
    assert_strict_invariants(original, result.schema)
    defs = result.schema["$defs"]
    assert defs["Order"]["required"] == ["items", "ship_to", "gift"]
    assert defs["Order"]["properties"]["gift"] == {"type": ["boolean", "null"], "description": "Default: false."}
    # a model in a list in an Optional field: the list stays nullable, the model inside is strict
    assert defs["Order"]["properties"]["items"]["anyOf"][0]["items"] == {"$ref": "#/$defs/Item"}
    assert defs["Item"]["additionalProperties"] is False
    # Annotated constraints: lengths move into the description, numeric bounds stay
    sku = defs["Item"]["properties"]["sku"]
    assert sku == {"type": "string",
                   "description": "stock keeping unit. Maximum length: 12. Minimum length: 3."}
    assert defs["Item"]["properties"]["quantity"]["minimum"] == 1
    assert defs["Item"]["properties"]["quantity"]["maximum"] == 100
    props = result.schema["properties"]
    assert props["mode"] == {"type": ["string", "null"], "enum": ["express", None],
                             "description": 'Default: "express".'}  # Literal (const) -> enum, nullable
    assert props["priority"] == {"anyOf": [{"$ref": "#/$defs/Priority"}, {"type": "null"}],
                                 "description": "how urgent. Default: 1."}  # enum by $ref, with a default
    assert props["note"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert props["note"]["description"] == "a note for the courier."  # a null default needs no mention
    assert props["count"]["exclusiveMinimum"] == 0
    assert "Default: 3." in props["count"]["description"]


def test_recursive_model_keeps_its_ref() -> None:
    result = to_strict_schema(build_tree.spec.input_schema)
    assert_strict_invariants(dict(build_tree.spec.input_schema), result.schema)
    node = result.schema["$defs"]["Node"]
    assert node["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert result.unsupported == []


def test_inexpressible_parts_are_reported() -> None:
    result = to_strict_schema(tag_counts.spec.input_schema)
    assert result.unsupported == [
        "/properties/counts: free-form map (keys with values of a given schema); strict mode allows only "
        "declared properties",
        "/properties/pair: tuple ('prefixItems'): strict mode cannot type items by position",
        "/properties/extra: accepts any value (no type); strict mode needs a type",
    ]
    pair = result.schema["properties"]["pair"]
    assert pair["items"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert pair["minItems"] == pair["maxItems"] == 2
    assert "Items by position: integer, string." in pair["description"]


def test_unsupported_keywords_are_moved_never_lost() -> None:
    tool_ = keyword_tool()
    result = to_strict_schema(tool_.spec.input_schema)
    assert_strict_invariants(dict(tool_.spec.input_schema), result.schema)
    text = json.dumps(result.schema)
    for kept in ("^x-", "minimum", "multipleOf", "dependentRequired", "uri", "root"):
        assert kept in text, kept
    assert "/properties/kind: replaced 'oneOf' by 'anyOf' (exclusivity is not enforced)" in result.changes
    assert "/properties/shape: merged 'allOf' into a single schema" in result.changes
    assert any("patternProperties" in u for u in result.unsupported)


def test_transform_does_not_mutate_and_check_reuses_it() -> None:
    before = json.dumps(place_order.spec.to_dict(), sort_keys=True)
    result = to_strict_schema(place_order.spec.input_schema)
    assert json.dumps(place_order.spec.to_dict(), sort_keys=True) == before
    report = check(place_order, "openai-strict")
    assert report.changes == result.changes
    assert report.unsupported == result.unsupported


def test_ref_with_siblings_and_foreign_refs() -> None:
    t = schema_tool(name="refs", description="Refs.", input_schema={
        "type": "object",
        "$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
        "properties": {"p": {"$ref": "#/$defs/P", "description": "a point"},
                       "q": {"$ref": "#/properties/p"}},
        "required": ["p", "q"],
    })
    result = to_strict_schema(t.spec.input_schema)
    assert result.schema["properties"]["p"] == {"anyOf": [{"$ref": "#/$defs/P"}], "description": "a point"}
    assert result.unsupported == ["/properties/q: $ref '#/properties/p': strict mode resolves only '#' and "
                                  "'#/$defs/...'"]


# -- property-based ------------------------------------------------------------------------------------
NAMES = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
_models = itertools.count()


def _model(fields: list[tuple[str, Any, bool]]) -> Any:
    spec = {name: (tp, Field(default_factory=lambda: None) if optional else ...) for name, tp, optional in fields}
    return create_model(f"Model{next(_models)}", **spec)


def _types(*, exotic: bool) -> st.SearchStrategy[Any]:
    leaves = [str, int, float, bool, Color, Literal["a", "b"], Literal[1, 2], Literal["only"]]
    if exotic:
        leaves += [Annotated[int, Field(ge=0, lt=9)], Annotated[str, Field(min_length=2)], Any, tuple[int, str]]
    fields = st.lists(st.tuples(st.sampled_from(NAMES), st.deferred(lambda: inner), st.booleans()),
                      min_size=1, max_size=3, unique_by=lambda f: f[0])
    inner = st.recursive(
        st.sampled_from(leaves),
        lambda sub: st.one_of(sub.map(lambda t: list[t]), sub.map(lambda t: Optional[t]),  # noqa: UP045
                              sub.map(lambda t: dict[str, t]), fields.map(_model)),
        max_leaves=5,
    )
    return inner


def _instances(node: Any, root: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid under a strict schema (the small vocabulary strict schemas use)."""
    if "$ref" in node:
        return _instances(root["$defs"][node["$ref"].rsplit("/", 1)[-1]], root)
    if "anyOf" in node:
        return st.one_of([_instances(a, root) for a in node["anyOf"]])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    kinds = node["type"] if isinstance(node["type"], list) else [node["type"]]
    return st.one_of([_of_type(kind, node, root) for kind in kinds])


def _of_type(kind: str, node: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy[Any]:
    if kind == "object":
        return st.fixed_dictionaries({k: _instances(v, root) for k, v in node["properties"].items()})
    if kind == "array":
        return st.lists(_instances(node["items"], root), max_size=3)
    simple: dict[str, st.SearchStrategy[Any]] = {
        "null": st.none(), "string": st.text(max_size=5), "boolean": st.booleans(),
        "integer": st.integers(-10**6, 10**6), "number": st.floats(allow_nan=False, allow_infinity=False)}
    return simple[kind]


def _random_tool(params: list[tuple[str, Any, bool]]) -> BaseTool:
    def generated(**kwargs: Any) -> None:
        """A generated tool."""

    kinds = inspect.Parameter.KEYWORD_ONLY
    generated.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        inspect.Parameter(name, kinds, annotation=tp,
                          default=Field(default_factory=lambda: None) if optional else inspect.Parameter.empty)
        for name, tp, optional in params])
    generated.__annotations__ = {name: tp for name, tp, _ in params}
    return tool(generated)


def _signatures(*, exotic: bool) -> st.SearchStrategy[list[tuple[str, Any, bool]]]:
    return st.lists(st.tuples(st.sampled_from(NAMES), _types(exotic=exotic), st.booleans()),
                    min_size=1, max_size=4, unique_by=lambda p: p[0])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_signatures(exotic=True))
def test_random_signatures_keep_the_strict_invariants(params: list[tuple[str, Any, bool]]) -> None:
    t = _random_tool(params)
    frozen = json.dumps(t.spec.to_dict(), sort_keys=True)
    result = to_strict_schema(t.spec.input_schema)
    assert_strict_invariants(json.loads(json.dumps(t.spec.input_schema)), result.schema)
    assert json.dumps(t.spec.to_dict(), sort_keys=True) == frozen


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_signatures(exotic=False), st.data())
def test_strict_arguments_validate_against_the_original_tool(params: list[tuple[str, Any, bool]],
                                                             data: st.DataObject) -> None:
    t = _random_tool(params)
    strict = to_strict_schema(t.spec.input_schema).schema
    arguments = data.draw(_instances(strict, strict))
    t.validate(drop_strict_nulls(arguments, t.spec.input_schema))


def test_openapi_nullable_becomes_a_null_alternative() -> None:
    t = schema_tool(name="oas", description="OpenAPI style.", input_schema={
        "type": "object", "properties": {"a": {"type": "string", "nullable": True},
                                         "b": {"type": "integer", "nullable": False}}, "required": ["a", "b"]})
    props = to_strict_schema(t.spec.input_schema).schema["properties"]
    assert props == {"a": {"type": ["string", "null"]}, "b": {"type": "integer"}}
