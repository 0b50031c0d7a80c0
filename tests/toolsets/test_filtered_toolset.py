from __future__ import annotations

import pytest
from toolset_helpers import make_tool

from toolrig import FunctionToolset
from toolrig.toolsets import FilteredToolset


def test_only_matching_tools_pass() -> None:
    ro = make_tool("read", permission="readonly")
    rw = make_tool("write", permission="write")
    view = FunctionToolset([ro, rw]).filtered(lambda t: t.spec.read_only)
    assert view.list() == [ro]
    assert view.get("read") is ro
    assert view.get("write") is None
    assert view.get("missing") is None


def test_filter_is_live() -> None:
    base = FunctionToolset([make_tool("a")])
    view = base.filtered(lambda t: "x" in t.spec.tags)
    assert view.list() == []
    tagged = base.add(make_tool("b", tags=["x"]))
    assert view.list() == [tagged]


def test_predicate_must_be_callable() -> None:
    with pytest.raises(TypeError, match="callable"):
        FilteredToolset(FunctionToolset(), "readonly")  # type: ignore[arg-type]


def test_wraps_only_toolsets() -> None:
    with pytest.raises(TypeError, match="wraps a Toolset"):
        FilteredToolset([make_tool("a")], bool)  # type: ignore[arg-type]
