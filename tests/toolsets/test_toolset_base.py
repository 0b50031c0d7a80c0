from __future__ import annotations

import builtins

import pytest
from toolset_helpers import make_tool

from toolrig import BaseTool, Toolset
from toolrig.toolsets import FilteredToolset, PrefixedToolset, RenamedToolset


class ListOnly(Toolset):
    """A minimal toolset: only list() is written, the rest comes from the base class."""

    def __init__(self, tools: builtins.list[BaseTool]) -> None:
        self.tools = tools
        self.events: builtins.list[str] = []

    def list(self) -> builtins.list[BaseTool]:
        return builtins.list(self.tools)

    async def __aenter__(self) -> ListOnly:
        self.events.append("enter")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.events.append("exit")


def test_toolset_is_abstract() -> None:
    with pytest.raises(TypeError):
        Toolset()  # type: ignore[abstract]


def test_default_get_names_iter_and_contains() -> None:
    a, b = make_tool("alpha"), make_tool("beta", "2.1.0")
    ts = ListOnly([b, a])
    assert ts.get("alpha") is a
    assert ts.get("gamma") is None
    assert ts.names() == ["alpha", "beta"]
    assert builtins.list(ts) == [b, a]
    assert "beta" in ts and "gamma" not in ts and 42 not in ts


def test_default_get_understands_version_selectors() -> None:
    b = make_tool("beta", "2.1.0")
    ts = ListOnly([b])
    assert ts.get("beta@2") is b
    assert ts.get("beta@2.1.0") is b
    assert ts.get("beta@>=2,<3") is b
    assert ts.get("beta@1") is None
    assert ts.get("beta@not a version") is None


def test_fluent_methods_build_the_wrappers() -> None:
    ts = ListOnly([make_tool("alpha"), make_tool("beta")])
    assert isinstance(ts.filtered(lambda t: True), FilteredToolset)
    assert isinstance(ts.prefixed("x"), PrefixedToolset)
    assert isinstance(ts.renamed({"alpha": "a"}), RenamedToolset)
    chained = ts.filtered(lambda t: t.name == "alpha").prefixed("x").renamed({"x_alpha": "first"})
    assert chained.names() == ["first"]
    assert chained.label == "RenamedToolset({'x_alpha': 'first'}, PrefixedToolset('x', FilteredToolset(ListOnly)))"


@pytest.mark.anyio
async def test_wrappers_forward_the_lifecycle() -> None:
    inner = ListOnly([make_tool("alpha")])
    outer = inner.prefixed("p").filtered(lambda t: True)
    async with outer as entered:
        assert entered is outer
        assert inner.events == ["enter"]
    assert inner.events == ["enter", "exit"]
