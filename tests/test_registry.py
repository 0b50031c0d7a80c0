from __future__ import annotations

import itertools
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import (
    BaseTool,
    CombinedToolset,
    DefinitionError,
    FunctionToolset,
    Registry,
    RegistryError,
    ToolNotFoundError,
    Toolset,
    VersionConflictError,
    tool,
)


def make(name: str, version: str = "1.0.0", **options: Any) -> BaseTool:
    def fn() -> str:
        """Say which tool ran."""
        return f"{name}@{version}"

    return tool(name=name, version=version, **options)(fn)


def keys(tools: list[BaseTool]) -> list[str]:
    return [t.spec.key for t in tools]


# -- registering and looking up -----------------------------------------------------------
def test_registry_is_a_toolset() -> None:
    registry = Registry([make("a"), make("b")])
    assert isinstance(registry, Toolset)
    assert registry.names() == ["a", "b"]
    assert "a" in registry
    assert registry.prefixed("r").names() == ["r_a", "r_b"]
    combined = CombinedToolset([registry, FunctionToolset([make("c")])])
    assert combined.names() == ["a", "b", "c"]


def test_register_returns_the_tool_and_works_as_decorator() -> None:
    registry = Registry()

    @registry.register
    def greet(name: str) -> str:
        """Greet someone."""
        return f"hi {name}"

    assert greet("bo") == "hi bo"
    assert registry.get("greet") is greet

    @registry.register(replace=True)
    def greet(name: str) -> str:
        """Greet someone loudly."""
        return f"HI {name}"

    assert registry.require("greet").spec.description == "Greet someone loudly."
    assert registry.register(make("plain")) is registry.get("plain")


def test_get_has_require() -> None:
    registry = Registry([make("search_web"), make("search_files"), make("send_mail")])
    assert registry.has("search_web")
    assert not registry.has("search")
    assert registry.get("nope") is None
    with pytest.raises(ToolNotFoundError) as info:
        registry.require("serch_web")
    assert "did you mean" in str(info.value) and "search_web" in str(info.value)
    assert isinstance(info.value, KeyError)  # still a KeyError for callers that expect one
    with pytest.raises(ToolNotFoundError, match="no tool named 'zzzzzz'"):
        registry.require("zzzzzz")


def test_same_version_twice_needs_replace() -> None:
    registry = Registry([make("t", "1.0.0")])
    with pytest.raises(VersionConflictError, match=r"t@1\.0\.0 is already registered.*replace=True"):
        registry.register(make("t", "1.0.0"))
    with pytest.raises(VersionConflictError):
        registry.register(make("t", "1.0"))  # the same version, spelled differently
    newer_code = make("t", "1.0.0", description="Replacement.")
    registry.register(newer_code, replace=True)
    assert registry.get("t") is newer_code
    assert registry.versions("t") == ["1.0.0"]


def test_lower_version_never_replaces_a_higher_one() -> None:
    registry = Registry()
    high = registry.register(make("t", "2.0.0"))
    low = registry.register(make("t", "1.5.0"))
    assert registry.get("t") is high
    assert registry.versions("t") == ["1.5.0", "2.0.0"]
    assert registry.get("t@1") is low
    low_again = registry.register(make("t", "1.5.0"), replace=True)
    assert registry.get("t") is high and registry.get("t@1.5.0") is low_again


def test_version_selectors() -> None:
    registry = Registry([make("t", v) for v in ["1.0.0", "1.2.0", "1.2.7", "1.10.1", "2.0.0", "3.0.0b1"]])
    assert registry.require("t").spec.version == "2.0.0"
    assert registry.require("t@1").spec.version == "1.10.1"
    assert registry.require("t@1.2").spec.version == "1.2.7"
    assert registry.require("t@1.2.0").spec.version == "1.2.0"
    assert registry.require("t@>=1.2,<1.3").spec.version == "1.2.7"
    assert registry.require("t@>=1.2,<2").spec.version == "1.10.1"
    assert registry.require("t@^1.2").spec.version == "1.10.1"
    assert registry.require("t@3.0.0b1").spec.version == "3.0.0b1"
    assert registry.require("t@>=3.0.0a1").spec.version == "3.0.0b1"
    assert registry.get("t@4") is None
    assert registry.get("t@1.3") is None
    assert registry.get("t@!!") is None
    with pytest.raises(ToolNotFoundError, match="invalid version"):
        registry.require("t@!!")
    with pytest.raises(ToolNotFoundError, match=r"registered: 1\.0\.0 \(active\)"):
        registry.require("t@7")


def test_deprecated_versions_lose_unless_asked_for() -> None:
    registry = Registry([make("t", "1.0.0"), make("t", "2.0.0", deprecated="broken, use 1.x")])
    assert registry.require("t").spec.version == "1.0.0"
    assert registry.require("t@2").spec.version == "2.0.0"
    stats = registry.stats()
    assert stats["t"]["version"] == "1.0.0"
    assert registry.stats(all_versions=True)["t@2.0.0"]["deprecated"] == "broken, use 1.x"
    assert keys(registry.list()) == ["t@1.0.0"]


# -- status, listing, stats ---------------------------------------------------------------
def test_disable_enable_and_status_filter() -> None:
    registry = Registry([make("a"), make("b")])
    registry.disable("a")
    assert registry.get("a") is None
    assert registry.names() == ["b"]
    assert keys(registry.list(status="disabled")) == ["a@1.0.0"]
    assert keys(registry.list(status="all")) == ["a@1.0.0", "b@1.0.0"]
    with pytest.raises(ToolNotFoundError, match="disabled"):
        registry.require("a")
    registry.enable("a")
    assert registry.names() == ["a", "b"]
    registry.set_status("b", "error", error="backend down")
    assert registry.stats()["b"]["status"] == "error"
    assert registry.stats()["b"]["error"] == "backend down"
    assert registry.names() == ["a"]
    with pytest.raises(ToolNotFoundError):
        registry.disable("zzz")
    with pytest.raises(ValueError):
        registry.set_status("a", "sleepy")


def test_disabling_one_version_falls_back_to_another() -> None:
    registry = Registry([make("t", "1.0.0"), make("t", "2.0.0")])
    registry.disable("t@2")
    assert registry.require("t").spec.version == "1.0.0"
    assert keys(registry.list()) == ["t@1.0.0"]
    registry.disable("t")
    assert registry.get("t") is None
    assert keys(registry.list(status="disabled", all_versions=True)) == ["t@1.0.0", "t@2.0.0"]


def test_list_filters_and_versions() -> None:
    registry = Registry([
        make("read", tags=["fs"], permission="readonly"),
        make("write", tags=["fs"], permission="write"),
        make("fetch", tags=["net"], permission="readonly"),
        make("fetch", "2.0.0", tags=["net"], permission="readonly"),
    ])
    assert keys(registry.list()) == ["fetch@2.0.0", "read@1.0.0", "write@1.0.0"]
    assert keys(registry.list(tag="fs")) == ["read@1.0.0", "write@1.0.0"]
    assert keys(registry.list(permission="readonly")) == ["fetch@2.0.0", "read@1.0.0"]
    assert keys(registry.list(tag="net", all_versions=True)) == ["fetch@1.0.0", "fetch@2.0.0"]
    assert registry.versions("fetch") == ["1.0.0", "2.0.0"]
    assert registry.versions("nothing") == []


def test_stats_reports_state() -> None:
    registry = Registry([make("t", "1.0.0"), make("t", "1.1.0")])
    current = registry.require("t")
    current.state.record(10.0, ok=True)
    current.state.record(30.0, ok=False)
    entry = registry.stats()["t"]
    assert entry["version"] == "1.1.0" and entry["status"] == "active" and entry["available"] is True
    assert entry["calls"] == 2 and entry["errors"] == 1
    assert entry["mean_latency_ms"] == 20.0 and entry["max_latency_ms"] == 30.0
    assert entry["versions"] == ["1.0.0", "1.1.0"]
    assert set(registry.stats(all_versions=True)) == {"t@1.0.0", "t@1.1.0"}
    registry.disable("t")
    assert registry.stats()["t"]["status"] == "disabled"


def test_check_fn_hides_tools_and_is_cached_for_its_ttl() -> None:
    calls = itertools.count()
    up = {"value": True}

    def check() -> bool:
        next(calls)
        return up["value"]

    flaky = make("flaky", check_fn=check)
    flaky.check_ttl = 3600.0
    registry = Registry([flaky])
    assert registry.get("flaky") is flaky
    assert registry.has("flaky") and registry.names() == ["flaky"]
    assert next(calls) == 1  # one evaluation for all those lookups
    up["value"] = False
    assert registry.get("flaky") is flaky  # still the cached answer
    flaky.check_ttl = 0.0  # expire the cache
    assert registry.get("flaky") is None
    assert registry.names() == []
    assert registry.stats()["flaky"]["available"] is False
    with pytest.raises(ToolNotFoundError, match="check_fn failed"):
        registry.require("flaky")


def test_unavailable_highest_version_falls_back() -> None:
    registry = Registry([make("t", "1.0.0"), make("t", "2.0.0", check_fn=lambda: False)])
    assert registry.require("t").spec.version == "1.0.0"


# -- unregistering ------------------------------------------------------------------------
def test_unregister_by_name_key_or_object() -> None:
    registry = Registry([make("t", v) for v in ["1.0.0", "1.1.0", "2.0.0"]])
    removed = registry.unregister("t@1.1.0")
    assert keys(removed) == ["t@1.1.0"]
    two = registry.require("t@2")
    assert registry.unregister(two) == [two]
    with pytest.raises(ToolNotFoundError):
        registry.unregister(two)
    assert keys(registry.unregister("t")) == ["t@1.0.0"]
    assert registry.versions("t") == []
    with pytest.raises(ToolNotFoundError):
        registry.unregister("t")


# -- hooks --------------------------------------------------------------------------------
def test_hooks_fire_in_order_and_can_veto() -> None:
    registry = Registry()
    seen: list[str] = []
    for event in ("before_register", "after_register", "before_unregister", "after_unregister"):
        registry.on(event, lambda t, e=event: seen.append(f"{e}:{t.name}"))  # type: ignore[misc]

    @registry.on("before_register")
    def no_shell(t: BaseTool) -> None:
        if t.name.startswith("shell"):
            raise RegistryError("shell tools are not allowed here")

    registry.register(make("ok"))
    with pytest.raises(RegistryError, match="not allowed"):
        registry.register(make("shell_exec"))
    assert registry.get("shell_exec") is None
    registry.unregister("ok")
    assert seen == ["before_register:ok", "after_register:ok", "before_register:shell_exec",
                    "before_unregister:ok", "after_unregister:ok"]


def test_before_unregister_veto_keeps_the_tool() -> None:
    registry = Registry([make("keep")])

    def protect(t: BaseTool) -> None:
        raise PermissionError(f"{t.name} is protected")

    registry.on("before_unregister", protect)
    with pytest.raises(PermissionError):
        registry.unregister("keep")
    assert registry.has("keep")
    registry.off("before_unregister", protect)
    registry.unregister("keep")
    assert not registry.has("keep")


def test_hooks_may_use_the_registry_and_bad_events_fail() -> None:
    registry = Registry()
    registry.on("after_register", lambda t: registry.disable(t.name) if "beta" in t.spec.tags else None)
    registry.register(make("fresh", tags=["beta"]))
    assert registry.get("fresh") is None
    assert registry.list(status="disabled")[0].name == "fresh"
    with pytest.raises(RegistryError, match="unknown registry event"):
        registry.on("before_call", print)  # type: ignore[arg-type]


# -- named toolsets -----------------------------------------------------------------------
def toolset_registry() -> Registry:
    names = ["fs_read", "fs_write", "git_log", "git_push", "web_fetch", "calc"]
    return Registry([make(n) for n in names])


def test_define_and_resolve_with_globs_and_includes() -> None:
    registry = toolset_registry()
    registry.define_toolset("files", ["fs_*"])
    registry.define_toolset("git", ["git_log", "git_push"])
    registry.define_toolset("dev", ["calc"], includes=["files", "git"])
    assert registry.resolve_toolset("files") == ["fs_read", "fs_write"]
    assert registry.resolve_toolset("dev") == ["calc", "fs_read", "fs_write", "git_log", "git_push"]
    everything = sorted(["fs_read", "fs_write", "git_log", "git_push", "web_fetch", "calc"])
    assert registry.resolve_toolset("all") == everything
    assert registry.resolve_toolset("*") == everything
    registry.define_toolset("wide", ["all"])
    assert registry.resolve_toolset("wide") == everything


def test_diamond_includes_yield_each_tool_once() -> None:
    registry = toolset_registry()
    registry.define_toolset("base", ["calc"])
    registry.define_toolset("left", ["fs_read"], includes=["base"])
    registry.define_toolset("right", ["git_log"], includes=["base"])
    registry.define_toolset("top", includes=["left", "right"])
    assert registry.resolve_toolset("top") == ["calc", "fs_read", "git_log"]
    assert registry.toolset("top").names() == ["calc", "fs_read", "git_log"]


def test_include_cycle_raises_a_definition_error_naming_the_cycle() -> None:
    registry = toolset_registry()
    registry.define_toolset("a", ["calc"], includes=["b"])
    registry.define_toolset("b", ["fs_read"], includes=["c"])
    registry.define_toolset("c", ["git_log"], includes=["a"])
    with pytest.raises(DefinitionError, match=r"include cycle: a -> b -> c -> a"):
        registry.resolve_toolset("a")
    with pytest.raises(DefinitionError, match=r"include cycle: b -> c -> a -> b"):
        registry.resolve_toolset("b", strict=False)
    with pytest.raises(DefinitionError, match=r"include cycle: a -> b -> c -> a"):
        registry.toolset("a").list()  # the live view does not hide it either
    registry.define_toolset("self", ["web_fetch"], includes=["self"])
    with pytest.raises(DefinitionError, match=r"include cycle: self -> self"):
        registry.resolve_toolset("self")
    registry.define_toolset("entry", ["web_fetch"], includes=["b"])  # reaches the cycle from outside it
    with pytest.raises(DefinitionError, match=r"include cycle: b -> c -> a -> b"):
        registry.resolve_toolset("entry")


def test_include_cycle_of_empty_toolsets_is_not_silently_empty() -> None:
    """The reported symptom: two toolsets including each other, with no tools of their own, resolved to []."""
    registry = toolset_registry()
    registry.define_toolset("ping", includes=["pong"])
    registry.define_toolset("pong", includes=["ping"])
    with pytest.raises(DefinitionError, match=r"ping -> pong -> ping"):
        registry.resolve_toolset("ping")
    registry.define_toolset("pong", ["calc"], replace=True)  # fixing the definition fixes the resolution
    assert registry.resolve_toolset("ping") == ["calc"]


def test_deep_diamond_lattice_is_not_a_cycle() -> None:
    registry = toolset_registry()
    registry.define_toolset("l0", ["calc"])
    for level in range(1, 40):  # each level includes the one below twice over: many paths, no cycle
        registry.define_toolset(f"x{level}", includes=[f"l{level - 1}"])
        registry.define_toolset(f"y{level}", includes=[f"l{level - 1}", f"x{level}"])
        registry.define_toolset(f"l{level}", includes=[f"x{level}", f"y{level}"])
    assert registry.resolve_toolset("l39") == ["calc"]


@st.composite
def include_graphs(draw: st.DrawFn) -> dict[str, list[str]]:
    n = draw(st.integers(min_value=1, max_value=7))
    names = [f"t{i}" for i in range(n)]
    return {name: draw(st.lists(st.sampled_from(names), max_size=4, unique=True)) for name in names}


def _has_cycle_from(start: str, graph: dict[str, list[str]]) -> bool:
    """Independent oracle: some toolset reachable from ``start`` reaches itself again."""
    def reach(node: str) -> set[str]:
        seen: set[str] = set()
        stack = list(graph[node])
        while stack:
            current = stack.pop()
            if current not in seen:
                seen.add(current)
                stack.extend(graph[current])
        return seen

    return any(node in reach(node) for node in reach(start) | {start})


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(graph=include_graphs(), data=st.data())
def test_generated_include_graphs_raise_exactly_when_a_cycle_is_reachable(
        graph: dict[str, list[str]], data: st.DataObject) -> None:
    registry = toolset_registry()
    tools = ["fs_read", "fs_write", "git_log", "git_push", "web_fetch", "calc"]
    for i, (name, includes) in enumerate(graph.items()):
        registry.define_toolset(name, [tools[i % len(tools)]], includes=includes)
    start = data.draw(st.sampled_from(sorted(graph)))
    if _has_cycle_from(start, graph):
        with pytest.raises(DefinitionError, match="include cycle") as raised:
            registry.resolve_toolset(start)
        named = str(raised.value).split("include cycle: ", 1)[1].split(" (", 1)[0].split(" -> ")
        assert named[0] == named[-1] and len(set(named[:-1])) == len(named) - 1  # a simple cycle ...
        assert all(b in graph[a] for a, b in itertools.pairwise(named))  # ... made of real includes
    else:
        members: set[str] = set()
        stack, seen = [start], set()
        while stack:
            current = stack.pop()
            if current not in seen:
                seen.add(current)
                members.add(tools[list(graph).index(current) % len(tools)])
                stack.extend(graph[current])
        assert registry.resolve_toolset(start) == sorted(members)


def test_unknown_names_in_toolsets() -> None:
    registry = toolset_registry()
    registry.define_toolset("typo", ["fs_raed"])
    with pytest.raises(ToolNotFoundError, match=r"fs_raed.*closest: fs_read"):
        registry.resolve_toolset("typo")
    assert registry.resolve_toolset("typo", strict=False) == []
    registry.define_toolset("dangling", includes=["nowhere"])
    with pytest.raises(RegistryError, match=r"unknown toolset 'nowhere'.*included by 'dangling'"):
        registry.resolve_toolset("dangling")
    with pytest.raises(RegistryError, match=r"unknown toolset 'typ'.*closest: typo"):
        registry.resolve_toolset("typ")
    with pytest.raises(RegistryError, match="unknown toolset"):
        registry.toolset("missing")


def test_toolset_definition_rules() -> None:
    registry = toolset_registry()
    with pytest.raises(RegistryError, match="reserved"):
        registry.define_toolset("all", ["calc"])
    registry.define_toolset("x", ["calc"])
    with pytest.raises(RegistryError, match="already defined"):
        registry.define_toolset("x", ["fs_read"])
    registry.define_toolset("x", ["fs_read"], replace=True)
    assert registry.resolve_toolset("x") == ["fs_read"]


def test_toolset_view_is_live() -> None:
    registry = toolset_registry()
    view = registry.define_toolset("git", ["git_*"])
    assert isinstance(view, Toolset)
    assert view.names() == ["git_log", "git_push"]
    registry.disable("git_push")
    assert view.names() == ["git_log"]
    assert view.get("git_push") is None
    assert view.get("calc") is None
    registry.register(make("git_diff"))
    assert view.names() == ["git_diff", "git_log"]
    assert view.get("git_diff@1") is not None
    assert view.prefixed("vcs").names() == ["vcs_git_diff", "vcs_git_log"]


# -- concurrency --------------------------------------------------------------------------
def test_many_threads_register_get_unregister() -> None:
    registry = Registry()
    workers, per_worker = 8, 45

    def work(worker: int) -> None:
        for i in range(per_worker):
            name = f"w{worker}_t{i}"
            registry.register(make(name, "1.0.0"))
            registry.register(make(name, "2.0.0"))
            assert registry.require(name).spec.version == "2.0.0"
            registry.list()
            if i % 3 == 0:
                registry.unregister(name)
            elif i % 3 == 1:
                registry.unregister(f"{name}@2.0.0")
            if i % 10 == 0:
                registry.stats()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for future in [pool.submit(work, w) for w in range(workers)]:
            future.result()

    expected = set()
    for w in range(workers):
        for i in range(per_worker):
            name = f"w{w}_t{i}"
            if i % 3 == 1:
                expected.add(f"{name}@1.0.0")
            elif i % 3 == 2:
                expected |= {f"{name}@1.0.0", f"{name}@2.0.0"}
    assert set(keys(registry.list(all_versions=True))) == expected
    assert len(registry.list()) == workers * per_worker * 2 // 3


def test_racing_registrations_of_one_key_admit_exactly_one() -> None:
    registry = Registry()
    barrier = threading.Barrier(8)
    candidates = [make("race", "1.0.0") for _ in range(8)]

    def attempt(t: BaseTool) -> bool:
        barrier.wait(timeout=10)
        try:
            registry.register(t)
        except VersionConflictError:
            return False
        return True

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(attempt, candidates))
    assert outcomes.count(True) == 1
    assert registry.get("race") is candidates[outcomes.index(True)]


def test_status_flips_while_listing_stay_consistent() -> None:
    registry = Registry([make(f"t{i}") for i in range(50)])
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            for i in range(50):
                registry.disable(f"t{i}")
                registry.enable(f"t{i}")

    with ThreadPoolExecutor(max_workers=2) as pool:
        flipper = pool.submit(flip)
        for _ in range(200):
            names = registry.names()
            assert len(names) == len(set(names)) and set(names) <= {f"t{i}" for i in range(50)}
        stop.set()
        flipper.result()
    assert len(registry.names()) == 50
