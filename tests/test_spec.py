"""ToolSpec: validation, JSON round trip, derived MCP annotations, status and stats."""

from __future__ import annotations

import copy
import json
import pickle
import threading

import pytest

from toolrig import (
    DefinitionError,
    Permission,
    RetryPolicy,
    ToolAnnotations,
    ToolSpec,
    ToolState,
    ToolStatus,
    TransientError,
    Trust,
    tool,
)
from toolrig._spec import check_name, freeze, thaw


def full_spec() -> ToolSpec:
    return ToolSpec(
        name="get_weather", description="Weather for a city.",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        output_schema={"type": "string"}, version="2.1.0-rc.1", author="me", tags=["weather", "read"],
        examples=[{"city": "Paris"}], permission="readonly", requires_approval=True, trust="external",
        timeout=2.5, retry=RetryPolicy(max_attempts=4, retry_on=(TransientError, ConnectionError)),
        rate_limit="10/minute;100/hour", cache_ttl=60, isolation="thread", deprecated="use get_forecast",
        metadata={"team": "geo", "limits": [1, 2]},
    )


# -- round trip ---------------------------------------------------------------------------------

def test_to_dict_is_plain_json_and_round_trips() -> None:
    spec = full_spec()
    data = json.loads(spec.to_json())
    assert data == spec.to_dict()
    again = ToolSpec.from_dict(data)
    assert again == spec
    assert again.to_dict() == data
    assert again.retry is not None and again.retry.retry_on == (TransientError, ConnectionError)
    assert again.tags == frozenset({"weather", "read"})
    assert again.permission is Permission.READONLY and again.trust is Trust.EXTERNAL


def test_to_dict_field_forms() -> None:
    data = full_spec().to_dict()
    assert data["tags"] == ["read", "weather"]
    assert data["permission"] == "readonly"
    assert data["retry"]["retry_on"] == ["toolrig.errors.TransientError", "builtins.ConnectionError"]
    assert data["annotations"] == {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True,
                                   "openWorldHint": True}
    assert data["cacheable"] is True and data["cache_ttl"] == 60


def test_from_dict_never_imports_modules_for_retry_types() -> None:
    data = ToolSpec(name="t").to_dict()
    data["retry"] = {"max_attempts": 2, "retry_on": ["not_a_loaded_module.Boom", "builtins.TimeoutError",
                                                    "builtins.len"]}
    spec = ToolSpec.from_dict(data)
    assert spec.retry is not None and spec.retry.retry_on == (TimeoutError,)


def test_default_spec_values() -> None:
    spec = ToolSpec(name="t")
    assert spec.version == "1.0.0"
    assert spec.permission is Permission.WRITE  # undeclared = write
    assert spec.trust is Trust.INTERNAL
    assert spec.timeout is None and spec.retry is None and spec.rate_limit is None
    assert spec.cacheable is False and spec.cache_ttl is None
    assert spec.key == "t@1.0.0"
    assert spec.input_schema == {"type": "object", "properties": {}}


def test_spec_is_frozen_deeply() -> None:
    spec = full_spec()
    with pytest.raises(AttributeError):
        spec.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError, match="frozen"):
        spec.input_schema["properties"]["x"] = {}  # type: ignore[index]
    with pytest.raises(TypeError, match="frozen"):
        spec.input_schema["required"].append("x")  # type: ignore[union-attr]
    with pytest.raises(TypeError, match="frozen"):
        spec.metadata["team"] = "x"  # type: ignore[index]
    mutable = thaw(spec.input_schema)
    mutable["properties"]["x"] = {"type": "integer"}
    assert "x" not in spec.input_schema["properties"]


def test_spec_copies_pickles_and_hashes() -> None:
    spec = full_spec()
    assert copy.deepcopy(spec) == spec
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert hash(spec) == hash(ToolSpec.from_dict(spec.to_dict()))
    assert {spec, ToolSpec.from_dict(spec.to_dict())} == {spec}


def test_input_given_as_mutable_dict_is_copied() -> None:
    schema = {"type": "object", "properties": {}}
    spec = ToolSpec(name="t", input_schema=schema)
    schema["properties"]["sneaky"] = {"type": "string"}
    assert spec.input_schema == {"type": "object", "properties": {}}


def test_freeze_and_thaw_keep_json_equality() -> None:
    value = {"a": [1, {"b": (2, 3)}]}
    frozen = freeze(value)
    assert frozen == {"a": [1, {"b": [2, 3]}]}
    assert json.dumps(frozen) == '{"a": [1, {"b": [2, 3]}]}'
    assert type(thaw(frozen)["a"]) is list


# -- permission, annotations ---------------------------------------------------------------------

@pytest.mark.parametrize(("permission", "expected"), [
    ("readonly", {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True}),
    ("write", {"readOnlyHint": False, "destructiveHint": False}),
    ("destructive", {"readOnlyHint": False, "destructiveHint": True}),
    ("system", {"readOnlyHint": False, "destructiveHint": True}),
])
def test_annotations_follow_permission(permission: str, expected: dict[str, bool]) -> None:
    spec = ToolSpec(name="t", permission=permission)
    assert spec.annotations is not None
    assert spec.annotations.to_mcp() == expected
    assert spec.idempotent is (permission == "readonly")
    assert spec.read_only is (permission == "readonly")


def test_external_trust_marks_open_world() -> None:
    spec = ToolSpec(name="t", trust="external")
    assert spec.annotations is not None and spec.annotations.open_world_hint is True


def test_explicit_annotations_win() -> None:
    given = ToolAnnotations(title="Delete", read_only_hint=False, destructive_hint=False, idempotent_hint=True)
    spec = ToolSpec(name="t", permission="destructive", annotations=given)
    assert spec.annotations == given
    assert spec.idempotent is True
    assert spec.replace(permission="readonly").annotations == given


def test_replace_rederives_annotations_from_new_permission() -> None:
    # Before the fix the copy kept readOnlyHint=True while claiming to be destructive.
    spec = ToolSpec(name="t", permission="readonly")
    changed = spec.replace(permission="destructive")
    assert changed.annotations == ToolAnnotations.for_permission(Permission.DESTRUCTIVE)
    assert changed.idempotent is False
    assert spec.replace(trust="external").annotations.open_world_hint is True  # type: ignore[union-attr]
    explicit = ToolSpec(name="t", permission="readonly", idempotent=False)
    assert explicit.replace(permission="write").idempotent is False


def test_replace_rederives_after_from_dict() -> None:
    spec = ToolSpec.from_dict(ToolSpec(name="t", permission="readonly").to_dict())
    assert spec.replace(permission="system").annotations.destructive_hint is True  # type: ignore[union-attr]


def test_annotations_mcp_round_trip() -> None:
    ann = ToolAnnotations(title="T", read_only_hint=True, open_world_hint=False)
    assert ToolAnnotations.from_mcp(ann.to_mcp()) == ann
    assert ann.to_mcp() == {"title": "T", "readOnlyHint": True, "openWorldHint": False}


# -- validation --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["a", "get_weather", "Tool-2", "x" * 64, "_", "-"])
def test_legal_names(name: str) -> None:
    assert check_name(name) == name
    assert ToolSpec(name=name).name == name


@pytest.mark.parametrize("name", ["", "x" * 65, "a.b", "a b", "café", "a/b", "ab\n", "\nab", "a:b", "名前"])
def test_illegal_names_say_what_is_allowed(name: str) -> None:
    with pytest.raises(DefinitionError) as info:
        ToolSpec(name=name)
    message = str(info.value)
    assert repr(name) in message
    assert "1-64 letters, digits, '_' or '-'" in message


def test_illegal_name_from_decorator() -> None:
    with pytest.raises(DefinitionError, match="illegal tool name 'get weather'"):
        @tool(name="get weather")
        def f() -> None:
            """Doc."""


@pytest.mark.parametrize("version", ["1.0.0", "0.1", "2.0.0-rc.1", "1.2.3.post4"])
def test_versions(version: str) -> None:
    spec = ToolSpec(name="t", version=version)
    assert spec.key == f"t@{version}"
    assert spec.parsed_version >= ToolSpec(name="t", version="0.0.1").parsed_version


@pytest.mark.parametrize("version", ["abc", "1.x", "", "latest"])
def test_bad_versions(version: str) -> None:
    with pytest.raises(DefinitionError, match=r"semantic version such as '1\.2\.3'"):
        ToolSpec(name="t", version=version)


def test_version_ordering_is_semantic() -> None:
    assert ToolSpec(name="t", version="1.10.0").parsed_version > ToolSpec(name="t", version="1.9.0").parsed_version


@pytest.mark.parametrize(("field", "value", "words"), [
    ("permission", "admin", "'admin' is not a valid Permission"),
    ("trust", "maybe", "'maybe' is not a valid Trust"),
    ("isolation", "vm", "'vm' is not a valid Isolation"),
    ("timeout", 0, "timeout must be a positive, finite number of seconds"),
    ("timeout", -1, "timeout must be a positive"),
    ("timeout", "5", "timeout must be a positive"),
    ("timeout", True, "timeout must be a positive"),
    ("timeout", float("inf"), "timeout must be a positive, finite"),
    ("timeout", float("nan"), "timeout must be a positive"),
    ("cache_ttl", 0, "cache_ttl must be a positive"),
    ("cache_ttl", float("nan"), "cache_ttl must be a positive"),
    ("requires_approval", "no", "requires_approval must be True or False"),
    ("cacheable", 1, "cacheable must be True or False"),
    ("idempotent", "yes", "idempotent must be True or False"),
    ("tags", "weather", "tags must be a list of strings"),
    ("tags", [1, 2], "tags must be a list of strings"),
    ("description", None, "description must be a string"),
    ("author", 42, "author must be a string"),
    ("rate_limit", "ten per minute", "not in the limits syntax, e.g. '10/minute'"),
    ("rate_limit", "10/fortnight", "not in the limits syntax"),
    ("retry", 3, "retry must be a RetryPolicy"),
    ("annotations", {"readOnlyHint": True}, "annotations must be ToolAnnotations"),
    ("metadata", {"f": object()}, "metadata must be plain JSON data"),
    ("metadata", {1: "a"}, "metadata must be plain JSON data"),
    ("examples", [{"x": float("nan")}], "examples must be plain JSON data"),
    ("input_schema", {"type": "object", "default": float("nan")}, "input_schema must be plain JSON data"),
    ("output_schema", {"type": "string", "default": b"x"}, "output_schema must be plain JSON data"),
])
def test_bad_field_values_are_definition_errors(field: str, value: object, words: str) -> None:
    with pytest.raises(DefinitionError) as info:
        ToolSpec(name="t", **{field: value})
    assert words in str(info.value)
    assert "'t'" in str(info.value)


def test_rate_limit_syntax_accepted() -> None:
    assert ToolSpec(name="t", rate_limit="10/minute").rate_limit == "10/minute"
    assert ToolSpec(name="t", rate_limit="5 per second; 100/day").rate_limit == "5 per second; 100/day"


def test_cache_ttl_implies_cacheable() -> None:
    assert ToolSpec(name="t", cache_ttl=30).cacheable is True
    assert ToolSpec(name="t", cacheable=True).cache_ttl is None


def test_retry_policy() -> None:
    policy = RetryPolicy(initial_delay=0.5, multiplier=3, max_delay=4)
    assert [policy.delay(n) for n in (1, 2, 3)] == [0.5, 1.5, 4.0]
    with pytest.raises(DefinitionError, match="max_attempts must be >= 1"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(DefinitionError, match="multiplier >= 1"):
        RetryPolicy(multiplier=0.5)


def test_tool_options_reach_the_spec() -> None:
    @tool(name="wx", description="Weather.", permission="readonly", tags=["a"], version="1.2.0", timeout=3,
          requires_approval=True, trust="external", rate_limit="1/second", cacheable=True, cache_ttl=9,
          author="x", metadata={"k": 1})
    def f(city: str) -> str:
        return city

    spec = f.spec
    assert (spec.name, spec.description, spec.permission, spec.version, spec.timeout) == (
        "wx", "Weather.", Permission.READONLY, "1.2.0", 3)
    assert spec.tags == {"a"} and spec.requires_approval and spec.trust is Trust.EXTERNAL
    assert spec.rate_limit == "1/second" and spec.cacheable and spec.cache_ttl == 9
    assert spec.metadata == {"k": 1} and spec.author == "x"


def test_unknown_tool_option_lists_known_ones() -> None:
    with pytest.raises(DefinitionError, match=r"unknown option\(s\) \['permision'\]; known options: .*permission"):
        @tool(permision="readonly")
        def f() -> None:
            """Doc."""


# -- status and stats ---------------------------------------------------------------------------

def test_state_lives_beside_the_spec() -> None:
    @tool
    def f() -> None:
        """Doc."""

    state = f.state
    assert state is f.state
    assert state.status is ToolStatus.ACTIVE and state.error is None
    state.record(10.0, ok=True)
    state.record(30.0, ok=False)
    assert state.stats.to_dict() == {"calls": 2, "errors": 1, "mean_latency_ms": 20.0, "max_latency_ms": 30.0}
    state.set_status("error", "backend down")
    assert (state.status, state.error) == (ToolStatus.ERROR, "backend down")
    assert f.with_spec(name="g").state.stats.calls == 0  # a renamed copy counts on its own


def test_state_records_are_thread_safe() -> None:
    state = ToolState()
    start = threading.Barrier(8)

    def work() -> None:
        start.wait()
        for _ in range(500):
            state.record(1.0, ok=True)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state.stats.calls == 4000
    assert state.stats.total_latency_ms == 4000.0


def test_bad_status_is_refused() -> None:
    with pytest.raises(ValueError, match="'paused' is not a valid ToolStatus"):
        ToolState().set_status("paused")


# -- the cheap JSON check never accepts what a JSON round trip would change ---------------------------------
import enum  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from toolrig._frozen import _plain_json  # noqa: E402


class _Level(enum.IntEnum):
    LOW = 1


class _Text(str):
    pass


_leaves = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5)
           | st.sampled_from([_Level.LOW, _Text("x"), b"x", -0.0, 10**30, float("nan"), float("inf")]))
_values = st.recursive(_leaves, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
                       | st.dictionaries(st.text(max_size=3) | st.integers() | st.booleans(), inner, max_size=4),
                       max_leaves=20)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_values)
def test_plain_json_accepts_only_what_a_round_trip_gives_back(value: object) -> None:
    for candidate in (value, freeze(value)):
        if _plain_json(candidate):
            assert json.loads(json.dumps(candidate, allow_nan=False)) == candidate


def test_a_spec_still_refuses_what_json_would_change() -> None:
    for bad in ({"a": float("nan")}, {1: "x"}, {"a": {1, 2}}, {"a": b"x"}, {"a": [_Text("x"), {2: 1}]}):
        with pytest.raises(DefinitionError):
            ToolSpec(name="t", description="d", input_schema={"type": "object"}, metadata=bad)


def test_deep_values_are_decided_by_the_round_trip() -> None:
    deep: object = "x"
    for _ in range(60):  # deeper than the walk goes (120 containers): the round trip accepts it
        deep = {"a": [deep]}
    assert not _plain_json(deep)
    assert ToolSpec(name="t", description="d", metadata={"deep": deep}).metadata["deep"] == deep
    with pytest.raises(DefinitionError):
        ToolSpec(name="t", description="d", metadata={"deep": {"a": [deep, float("nan")]}})


# -- parts shared between specs are frozen: one spec's cannot change another's ------------------------------
def test_empty_metadata_is_one_frozen_dict_that_no_spec_can_change() -> None:
    a, b = ToolSpec(name="a", description="d"), ToolSpec(name="b", description="d", metadata={})
    assert a.metadata is b.metadata and a.metadata == {}
    with pytest.raises(TypeError):
        a.metadata["x"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        a.metadata.update(x=1)  # type: ignore[attr-defined]
    exported = a.to_dict()["metadata"]
    exported["x"] = 1
    assert b.metadata == {} and b.to_dict()["metadata"] == {}
    assert freeze({}) == {} and thaw(freeze({})) == {} and thaw(freeze({})) is not thaw(freeze({}))


def test_derived_annotations_are_shared_and_frozen() -> None:
    import dataclasses

    a, b = ToolSpec(name="a", description="d"), ToolSpec(name="b", description="d")
    assert a.annotations is b.annotations
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.annotations.title = "x"  # type: ignore[misc, union-attr]
    external = ToolSpec(name="c", description="d", permission="readonly", trust="external")
    assert external.annotations == ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                                   open_world_hint=True)
    assert ToolAnnotations.for_permission(Permission.WRITE, title="T").title == "T"
    assert a.replace(permission="readonly").annotations == ToolAnnotations.for_permission(Permission.READONLY)


def test_versions_are_parsed_once_and_bad_ones_still_refused() -> None:
    from toolrig._spec import parse_version

    assert parse_version("1.2.3") is parse_version("1.2.3")
    for bad in ("one", ["1"], None, 1.5):
        with pytest.raises(DefinitionError):
            parse_version(bad)  # type: ignore[arg-type]
