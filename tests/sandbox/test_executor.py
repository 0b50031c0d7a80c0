"""The sandbox as a runtime executor: ``isolation="sandbox"`` tools run in a fresh sandbox per call."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import anyio
import pytest
import sandbox_tools as st

from toolrig import CallContext, ToolCall, ToolOutcome
from toolrig.errors import CallTimeoutError, ExecutorUnavailable, WorkerDiedError
from toolrig.runtime import Executor, Executors, RemoteResult, Runtime, minimal_stages
from toolrig.sandbox import BubblewrapBackend, Sandbox, SandboxExecutor, SandboxUnavailable


@pytest.fixture(scope="module")
def executor(sandbox: Sandbox) -> SandboxExecutor:
    return SandboxExecutor(sandbox)


def call(executor: Executor, tool: Any, arguments: dict[str, Any], context: CallContext | None = None,
         timeout: float | None = None) -> ToolOutcome:
    async def main() -> ToolOutcome:
        rt = Runtime([tool], stages=minimal_stages(), executors=Executors(sandbox=executor), audit=False)
        if timeout is not None:
            tool_ = tool.with_spec(timeout=timeout)
            rt = Runtime([tool_], stages=minimal_stages(), executors=Executors(sandbox=executor), audit=False)
        return await rt.call(ToolCall(name=tool.name, arguments=arguments), context)

    return anyio.run(main)


def test_it_is_an_executor(executor: SandboxExecutor) -> None:
    assert isinstance(executor, Executor) and executor.name == "sandbox"


def test_a_tool_runs_in_the_sandbox(executor: SandboxExecutor) -> None:
    outcome = call(executor, st.add, {"a": 2, "b": "3"})
    assert outcome.ok, outcome
    assert outcome.result.text == "5"
    assert outcome.meta.get("sandbox_backend") == "bubblewrap"
    ctx = CallContext(user="ada", state={"user": "ada"})
    who = call(executor, st.whoami, {}, ctx)
    assert who.ok, who
    assert '"uid": 65534' in who.result.text and '"user": "ada"' in who.result.text


def test_models_and_classes_travel_as_json(executor: SandboxExecutor) -> None:
    assert "2.0" in call(executor, st.norm, {"p": {"x": 1, "y": 2}, "scale": 2}).result.text
    assert call(executor, st.Greeter(), {"name": "bo"}).result.text == "hello bo"


def test_execute_returns_data_and_raises_known_types(executor: SandboxExecutor) -> None:
    async def main() -> None:
        meta: dict[str, Any] = {}
        value = await executor.execute(st.add, {"a": 1, "b": 2}, CallContext(), timeout=None, meta=meta)
        assert isinstance(value, RemoteResult) and value.result.text == "3"
        with pytest.raises(ValueError, match="bad input"):
            await executor.execute(st.boom, {"message": "bad input"}, CallContext(), timeout=None, meta={})
        with pytest.raises(Exception) as info:  # rebuilt as its nearest known base, its type name kept
            await executor.execute(st.custom, {"message": "odd"}, CallContext(), timeout=None, meta={})
        assert not isinstance(info.value, st.CustomError)
        assert "CustomError: odd" in str(info.value)
        assert info.value.remote_type == "sandbox_tools.CustomError"  # type: ignore[attr-defined]
        with pytest.raises(WorkerDiedError):
            await executor.execute(st.crash, {}, CallContext(), timeout=None, meta={})

    anyio.run(main)


def test_failures_become_outcomes(executor: SandboxExecutor) -> None:
    boom = call(executor, st.boom, {"message": "nope"})
    assert not boom.ok and boom.error is not None and "nope" in boom.error.message
    retry = call(executor, st.retry_please, {})
    assert retry.error is not None and retry.error.kind == "retry_requested"


def test_timeout_kills_the_sandbox(executor: SandboxExecutor) -> None:
    async def main() -> None:
        with pytest.raises(CallTimeoutError) as info:
            await executor.execute(st.sleepy, {"seconds": 60}, CallContext(), timeout=1.0, meta={})
        assert info.value.seconds == 1.0

    anyio.run(main)
    outcome = call(executor, st.sleepy, {"seconds": 60}, timeout=1.0)
    assert outcome.error is not None and outcome.error.kind == "timeout"


def test_a_sandboxed_tool_cannot_write_the_host(executor: SandboxExecutor, tmp_path: Path) -> None:
    target = tmp_path / f"escape-{secrets.token_hex(4)}"
    outcome = call(executor, st.write_host, {"path": str(target)})
    assert outcome.ok and not target.exists()


def test_no_sandbox_means_unavailable_never_unsandboxed(tmp_path: Path) -> None:
    box = Sandbox(backend=BubblewrapBackend(bwrap=str(tmp_path / "missing")))
    target = tmp_path / "ran"
    outcome = call(SandboxExecutor(box), st.write_host, {"path": str(target)})
    assert outcome.error is not None and outcome.error.kind == "unavailable"
    assert not target.exists()

    async def direct() -> None:
        with pytest.raises(SandboxUnavailable):
            await SandboxExecutor(box).execute(st.add, {"a": 1, "b": 1}, CallContext(), timeout=None, meta={})

    anyio.run(direct)


def test_a_closed_executor_refuses(sandbox: Sandbox) -> None:
    ex = SandboxExecutor(sandbox)

    async def main() -> None:
        await ex.aclose()
        with pytest.raises(ExecutorUnavailable):
            await ex.execute(st.add, {"a": 1, "b": 1}, CallContext(), timeout=None, meta={})

    anyio.run(main)
    assert ex.stats() == {"calls": 0, "running": 0}
