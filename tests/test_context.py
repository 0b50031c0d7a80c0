"""The call context and Injected[T]: resolution rules, isolation under concurrency, progress."""

from __future__ import annotations

import pickle
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import FrozenInstanceError, dataclass
from typing import Any

import anyio
import pytest

from toolrig import CallContext, Injected, Tool, current_context, tool
from toolrig._context import EMPTY_CONTEXT, InjectionError, use_context


@dataclass
class Database:
    name: str


def ctx_for(i: int) -> CallContext:
    return CallContext(user=f"user{i}", session=f"s{i}", state={"request_id": i, "db": Database(f"db{i}")})


# -- isolation under concurrency ----------------------------------------------------------------

@pytest.mark.anyio
async def test_many_tasks_each_see_only_their_own_context() -> None:
    started = 0
    everyone_in = anyio.Event()
    n = 200

    @tool
    async def whoami(tag: int, request_id: Injected[int], db: Injected[Database], ctx: CallContext) -> tuple[Any, ...]:
        """Who is calling."""
        nonlocal started
        started += 1
        if started == n:
            everyone_in.set()
        await everyone_in.wait()  # all calls are in flight at once before anyone reads again
        now = current_context()
        return tag, request_id, db.name, ctx.user, now.user, now.state["request_id"]

    results: dict[int, tuple[Any, ...]] = {}

    async def one(i: int) -> None:
        results[i] = await whoami.invoke(whoami.validate({"tag": i}), ctx_for(i))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(one, i)
    assert results == {i: (i, i, f"db{i}", f"user{i}", f"user{i}", i) for i in range(n)}
    assert current_context() is EMPTY_CONTEXT


def test_many_threads_each_see_only_their_own_context() -> None:
    n = 16
    barrier = threading.Barrier(n, timeout=10)

    @tool
    def whoami(tag: int, request_id: Injected[int], ctx: CallContext) -> tuple[Any, ...]:
        """Who is calling."""
        barrier.wait()  # every thread is inside a call at the same time
        return tag, request_id, ctx.user, current_context().user

    def one(i: int) -> tuple[Any, ...]:
        out: tuple[Any, ...] = whoami.invoke_sync({"tag": i}, ctx_for(i))
        return out

    with ThreadPoolExecutor(max_workers=n) as pool:
        results = list(pool.map(one, range(n)))
    assert results == [(i, i, f"user{i}", f"user{i}") for i in range(n)]


@pytest.mark.anyio
async def test_tasks_and_worker_threads_together() -> None:
    n = 40
    barrier = threading.Barrier(n // 2, timeout=10)

    @tool
    def sync_who(request_id: Injected[int]) -> tuple[int, str | None]:
        """Sync."""
        barrier.wait()
        return request_id, current_context().user

    @tool
    async def async_who(request_id: Injected[int]) -> tuple[int, str | None]:
        """Async."""
        await anyio.sleep(0)
        return request_id, current_context().user

    results: dict[int, Any] = {}

    async def via_thread(i: int) -> None:
        results[i] = await anyio.to_thread.run_sync(sync_who.invoke_sync, {}, ctx_for(i))

    async def via_task(i: int) -> None:
        results[i] = await async_who.invoke({}, ctx_for(i))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(via_thread if i % 2 else via_task, i)
    assert results == {i: (i, f"user{i}") for i in range(n)}


@pytest.mark.anyio
async def test_context_reaches_threads_started_inside_a_tool() -> None:
    def helper() -> str | None:
        return current_context().user

    @tool
    async def outer() -> str | None:
        """Outer."""
        return await anyio.to_thread.run_sync(helper)

    assert await outer.invoke({}, CallContext(user="ann")) == "ann"


# -- where injected values come from ------------------------------------------------------------

def test_resolution_order() -> None:
    @tool
    def f(ctx: CallContext, by_name: Injected[str], db: Injected[Database], deps: Injected[dict[str, int]],
          fallback: Injected[int] = 7) -> tuple[Any, ...]:
        """Doc."""
        return ctx.user, by_name, db.name, deps, fallback

    ctx = CallContext(user="u", state={"by_name": "hello", "any_key": Database("main")}, deps={"k": 1})
    assert f.invoke_sync({}, ctx) == ("u", "hello", "main", {"k": 1}, 7)
    assert f.invoke_sync({}, ctx.derive(state={**ctx.state, "fallback": 9}))[-1] == 9


def test_deps_object_matched_by_type() -> None:
    @tool
    def f(db: Injected[Database]) -> str:
        """Doc."""
        return db.name

    assert f.invoke_sync({}, CallContext(deps=Database("from-deps"))) == "from-deps"


def test_ambiguous_type_match_falls_back_to_default() -> None:
    @tool
    def f(db: Injected[Database | None] = None, other: Injected[Database] = Database("default")) -> str:
        """Doc."""
        return other.name

    ctx = CallContext(state={"a": Database("a"), "b": Database("b")})
    assert f.invoke_sync({}, ctx) == "default"


def test_missing_injected_value_says_how_to_provide_it() -> None:
    @tool
    def f(api_key: Injected[str]) -> str:
        """Doc."""
        return api_key

    with pytest.raises(InjectionError, match=r"injected parameter 'api_key' has no value: pass it in "
                                             r"CallContext\(state=\{'api_key': \.\.\.\}\)"):
        f.invoke_sync({}, CallContext())


def test_context_subclass_is_injected() -> None:
    @dataclass(frozen=True, kw_only=True)
    class TenantContext(CallContext):
        tenant: str = "acme"

    @tool
    def f(ctx: TenantContext) -> str:
        """Doc."""
        return ctx.tenant

    assert f.spec.input_schema["properties"] == {}
    assert f.invoke_sync({}, TenantContext(tenant="globex")) == "globex"


def test_injected_parameter_can_still_be_passed_directly() -> None:
    @tool
    def f(x: int, user: Injected[str]) -> str:
        """Doc."""
        return f"{user}:{x}"

    assert f(1, "direct") == "direct:1"


@pytest.mark.anyio
async def test_invoke_without_context_uses_the_current_one() -> None:
    # Before the fix invoke() without ctx used an empty context, ignoring the ambient one.
    @tool
    def f(user_id: Injected[int]) -> tuple[int, str | None]:
        """Doc."""
        return user_id, current_context().user

    ambient = CallContext(user="amb", state={"user_id": 5})
    with use_context(ambient):
        assert await f.invoke({}) == (5, "amb")
        assert f.invoke_sync({}) == (5, "amb")
        assert f.bind({}) == ([], {"user_id": 5})
    with pytest.raises(InjectionError):
        await f.invoke({})


def test_tool_class_with_injected() -> None:
    class Whoami(Tool):
        """Who."""

        def run(self, greeting: str, user: Injected[str]) -> str:
            return f"{greeting} {user}"

    assert list(Whoami.spec.input_schema["properties"]) == ["greeting"]
    assert Whoami().invoke_sync({"greeting": "hi"}, CallContext(state={"user": "bo"})) == "hi bo"


def test_context_is_restored_after_the_call_even_on_error() -> None:
    @tool
    def boom() -> None:
        """Doc."""
        assert current_context().user == "x"
        raise ValueError("boom")

    before = current_context()
    with pytest.raises(ValueError, match="boom"):
        boom.invoke_sync({}, CallContext(user="x"))
    assert current_context() is before


# -- the context object -------------------------------------------------------------------------

def test_context_is_frozen_and_copies_its_inputs() -> None:
    state = {"a": 1}
    ctx = CallContext(state=state, roles=["admin", "dev"], metadata={"tenant": "t"})
    state["a"] = 2  # changing the caller's dict later must not reach a running call
    assert ctx.state == {"a": 1}
    assert ctx.roles == frozenset({"admin", "dev"})
    with pytest.raises(TypeError):
        ctx.state["b"] = 3  # type: ignore[index]
    with pytest.raises(FrozenInstanceError):
        ctx.user = "eve"  # type: ignore[misc]
    with pytest.raises(TypeError, match="roles must be a collection of role names"):
        CallContext(roles="admin")  # type: ignore[arg-type]


def test_derive_and_pickle() -> None:
    ctx = CallContext(user="u", roles={"r"}, state={"k": [1]}, metadata={"m": 1})
    child = ctx.derive(call_id="c1", tool_name="t")
    assert (child.user, child.call_id, child.tool_name, child.state) == ("u", "c1", "t", {"k": [1]})
    assert ctx.call_id is None
    again = pickle.loads(pickle.dumps(child))
    assert again == child and again.roles == frozenset({"r"})


@pytest.mark.anyio
async def test_progress_reports_sync_and_async() -> None:
    seen: list[tuple[Any, ...]] = []

    def sync_cb(progress: float, total: float | None, message: str | None) -> None:
        seen.append(("sync", progress, total, message))

    async def async_cb(progress: float, total: float | None, message: str | None) -> None:
        seen.append(("async", progress, total, message))

    @tool
    async def work(steps: int) -> int:
        """Work."""
        for i in range(steps):
            await current_context().report_progress(i + 1, steps, f"step {i + 1}")
        return steps

    await work.invoke({"steps": 2}, CallContext(progress=sync_cb))
    await work.invoke({"steps": 1}, CallContext(progress=async_cb))
    await work.invoke({"steps": 1}, CallContext())  # nobody listens: no-op
    assert seen == [("sync", 1, 2, "step 1"), ("sync", 2, 2, "step 2"), ("async", 1, 1, "step 1")]
