from __future__ import annotations

import builtins

import pytest
from toolset_helpers import make_tool

from toolrig import BaseTool, CombinedToolset, DefinitionError, FunctionToolset, Toolset, ToolsetConflictError


def test_union_of_toolsets_and_plain_lists() -> None:
    a, b, c = make_tool("a"), make_tool("b"), make_tool("c")
    combined = CombinedToolset([FunctionToolset([a, b]), [c]])
    assert isinstance(combined, Toolset)
    assert combined.list() == [a, b, c]
    assert combined.get("c") is c
    assert combined.get("zzz") is None


def test_conflict_error_names_both_sources_and_hints_at_prefixed() -> None:
    first = FunctionToolset([make_tool("search")], name="github")
    second = FunctionToolset([make_tool("search")], name="jira")
    combined = CombinedToolset([first, second])
    with pytest.raises(ToolsetConflictError) as info:
        combined.list()
    message = str(info.value)
    assert "'search'" in message
    assert "FunctionToolset('github')" in message and "FunctionToolset('jira')" in message
    assert ".prefixed(" in message
    with pytest.raises(ToolsetConflictError):
        combined.get("search")


def test_prefixing_resolves_the_conflict() -> None:
    first = FunctionToolset([make_tool("search")], name="github")
    second = FunctionToolset([make_tool("search")], name="jira")
    combined = CombinedToolset([first.prefixed("gh"), second.prefixed("jira")])
    assert combined.names() == ["gh_search", "jira_search"]
    assert combined.get("jira_search").invoke_sync({}) == "search@1.0.0"  # type: ignore[union-attr]


def test_first_and_last_keep_one_tool() -> None:
    one, two = make_tool("dup", "1.0.0"), make_tool("dup", "2.0.0")
    sets = [FunctionToolset([one]), FunctionToolset([two, make_tool("other")])]
    first = CombinedToolset(sets, on_conflict="first")
    last = CombinedToolset(sets, on_conflict="last")
    assert [t.spec.key for t in first.list()] == ["dup@1.0.0", "other@1.0.0"]
    assert [t.spec.key for t in last.list()] == ["dup@2.0.0", "other@1.0.0"]
    assert first.get("dup") is one
    assert last.get("dup") is two


def test_bad_on_conflict_value() -> None:
    with pytest.raises(DefinitionError, match="on_conflict"):
        CombinedToolset([], on_conflict="merge")  # type: ignore[arg-type]


class Tracked(Toolset):
    def __init__(self, name: str, log: builtins.list[str], fail: bool = False) -> None:
        self.name, self.log, self.fail = name, log, fail

    def list(self) -> builtins.list[BaseTool]:
        return []

    async def __aenter__(self) -> Tracked:
        if self.fail:
            raise ConnectionError(self.name)
        self.log.append(f"enter {self.name}")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.log.append(f"exit {self.name}")


@pytest.mark.anyio
async def test_lifecycle_enters_all_and_exits_in_reverse() -> None:
    log: builtins.list[str] = []
    async with CombinedToolset([Tracked("a", log), Tracked("b", log)]):
        assert log == ["enter a", "enter b"]
    assert log == ["enter a", "enter b", "exit b", "exit a"]


@pytest.mark.anyio
async def test_lifecycle_failure_closes_what_was_opened() -> None:
    log: builtins.list[str] = []
    with pytest.raises(ConnectionError):
        async with CombinedToolset([Tracked("a", log), Tracked("b", log, fail=True)]):
            pass
    assert log == ["enter a", "exit a"]
