from __future__ import annotations

import pytest
from toolset_helpers import make_tool

from toolrig import DefinitionError, FunctionToolset, Registry, Tool, ToolStatus


def test_names_get_the_prefix_and_code_still_runs() -> None:
    read = make_tool("read")
    view = FunctionToolset([read, make_tool("write")]).prefixed("gh")
    assert view.names() == ["gh_read", "gh_write"]
    aliased = view.get("gh_read")
    assert aliased is not None and aliased.name == "gh_read"
    assert aliased.spec.description == read.spec.description
    assert aliased.invoke_sync({"text": "!"}) == "read@1.0.0!"
    assert read.name == "read"  # the original is untouched
    assert view.get("read") is None
    assert view.get("gh_missing") is None


def test_aliases_are_stable_and_share_state_with_the_original() -> None:
    registry = Registry([make_tool("read")])
    view = registry.prefixed("gh")
    first = view.list()[0]
    assert view.list()[0] is first
    assert view.get("gh_read") is first
    first.state.record(12.0, ok=True)
    assert registry.stats()["read"]["calls"] == 1
    registry.disable("read")
    assert first.state.status is ToolStatus.DISABLED
    assert view.list() == []


def test_version_selector_passes_through() -> None:
    registry = Registry([make_tool("read", "1.0.0"), make_tool("read", "2.0.0")])
    view = registry.prefixed("gh")
    assert view.get("gh_read").spec.version == "2.0.0"  # type: ignore[union-attr]
    assert view.get("gh_read@1").spec.version == "1.0.0"  # type: ignore[union-attr]
    assert view.get("gh_read@3") is None


def test_custom_separator() -> None:
    view = FunctionToolset([make_tool("read")]).prefixed("gh", sep="-")
    assert view.names() == ["gh-read"]


def test_illegal_prefix_is_refused() -> None:
    with pytest.raises(DefinitionError, match="illegal tool name prefix"):
        FunctionToolset().prefixed("git hub")
    with pytest.raises(DefinitionError):
        FunctionToolset().prefixed("gh", sep=".")


def test_prefixed_name_too_long_is_a_definition_error() -> None:
    view = FunctionToolset([make_tool("r" * 60)]).prefixed("long")
    with pytest.raises(DefinitionError, match="illegal tool name"):
        view.list()


class Negate(Tool):
    """Negate a number."""

    def run(self, n: int) -> int:
        return -n


def test_tool_classes_are_renamed_too() -> None:
    view = FunctionToolset([Negate]).prefixed("m").renamed({"m_negate": "neg"})
    (aliased,) = view.list()
    assert aliased.name == aliased.spec.name == "neg"
    assert aliased.invoke_sync({"n": 3}) == -3
    assert Negate.name == "negate"
