from __future__ import annotations

import pytest
from toolset_helpers import make_tool

from toolrig import DefinitionError, FunctionToolset, ToolsetConflictError


def test_rename_some_and_pass_others_through() -> None:
    view = FunctionToolset([make_tool("old"), make_tool("kept")]).renamed({"old": "new"})
    assert view.names() == ["kept", "new"]
    new = view.get("new")
    assert new is not None and new.invoke_sync({}) == "old@1.0.0"
    assert view.get("old") is None
    assert view.get("kept") is not None
    assert view.get("new") is new  # cached alias


def test_swap_names() -> None:
    view = FunctionToolset([make_tool("a"), make_tool("b")]).renamed({"a": "b", "b": "a"})
    assert view.get("a").invoke_sync({}) == "b@1.0.0"  # type: ignore[union-attr]
    assert view.get("b").invoke_sync({}) == "a@1.0.0"  # type: ignore[union-attr]
    assert view.names() == ["a", "b"]


def test_illegal_or_duplicate_new_names() -> None:
    base = FunctionToolset([make_tool("a"), make_tool("b")])
    with pytest.raises(DefinitionError, match="illegal tool name"):
        base.renamed({"a": "not legal!"})
    with pytest.raises(DefinitionError, match="same new name"):
        base.renamed({"a": "c", "b": "c"})


def test_rename_onto_an_existing_name_conflicts() -> None:
    view = FunctionToolset([make_tool("a"), make_tool("b")]).renamed({"a": "b"})
    with pytest.raises(ToolsetConflictError, match="two tools named 'b'"):
        view.list()


def test_selector_after_rename() -> None:
    view = FunctionToolset([make_tool("a", "1.4.0")]).renamed({"a": "z"})
    assert view.get("z@1.4") is not None
    assert view.get("z@2") is None
