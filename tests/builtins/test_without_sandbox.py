"""Where no adequate sandbox exists, shell, python and sandboxed bundle tools refuse with the reason."""

from __future__ import annotations

from pathlib import Path

from builtin_helpers import Approvals, call

from toolrig import ErrorKind, Runtime
from toolrig.builtins import python_tool, shell_tool
from toolrig.sandbox import Sandbox


class Refusing:
    """A backend that is never available here (like bubblewrap missing), so nothing may run."""

    name = "refusing"

    def unavailable_reason(self) -> str | None:
        return "this test's backend is never available"

    def mechanisms(self) -> dict[str, str]:
        return {}

    def python(self) -> tuple[str, tuple[str, ...]]:
        raise AssertionError("never asked: nothing runs")

    async def run(self, spec: object) -> object:
        raise AssertionError("never asked: nothing runs")


def test_tools_refuse_rather_than_run_unsandboxed(tmp_path: Path) -> None:
    backend = Refusing()  # stands in for a machine without bubblewrap or Docker
    marker = tmp_path / "ran"
    box = Sandbox(backend=backend)  # type: ignore[arg-type]
    tools = [shell_tool(tmp_path, sandbox=box), python_tool(sandbox=box)]
    with Runtime(tools, audit=False, approval=Approvals(True)) as rt:
        shell = call(rt, "shell", command=f"touch {marker}")
        python = call(rt, "python", code=f"open({str(marker)!r}, 'w')")
    for outcome in (shell, python):
        assert outcome.error is not None and outcome.error.kind is ErrorKind.UNAVAILABLE, outcome.content
        assert "no adequate sandbox" in outcome.error.message and "never available" in outcome.error.message
    assert not marker.exists()
