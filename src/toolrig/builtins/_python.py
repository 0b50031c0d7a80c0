"""``python``: Python code run in the OS sandbox; stdout, stderr and the value of the last expression.

Each call gets a fresh sandbox (:meth:`toolrig.sandbox.Sandbox.run_python`): the host's interpreter in
isolated mode, a throwaway size-capped work dir, no network by default, no host files but the
interpreter's own, limits on memory, processes, CPU, file size and open files, and a wall-clock timeout
that kills everything the code started. Nothing it does survives the call. Where no adequate sandbox
exists the tool refuses (``unavailable``); it never runs code unsandboxed.
"""

from __future__ import annotations

from typing import Any, ClassVar

from toolrig import ModelRetry, Tool, ToolAnnotations
from toolrig.sandbox import PythonResult, Sandbox, SandboxLimits

__all__ = ["PythonTool", "python_tool"]

_MAX_CODE = 100_000


def _cut(text: str, limit: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[:limit], True)


class PythonTool(Tool):
    """Run Python 3 code in a sandbox and get its stdout, stderr and the value of its last expression.

    Each call starts fresh: variables and files do not survive between calls. There is no network
    access; only the standard library is available. End the code with an expression to get its value
    back, e.g. "import math\\nmath.factorial(20)".

    Args:
        code: the Python source to run.
    """

    name = "python"
    permission = "readonly"
    annotations = ToolAnnotations(title="Python (sandboxed)", read_only_hint=True, destructive_hint=False,
                                  idempotent_hint=False, open_world_hint=False)
    idempotent = False
    tags = frozenset({"code", "builtin"})
    metadata: ClassVar[dict[str, Any]] = {"breaker": False}  # failing code is no outage

    def __init__(self, sandbox: Sandbox, *, run_timeout: float, max_output_chars: int) -> None:
        self.sandbox = sandbox
        self.run_timeout = run_timeout
        self.max_output_chars = max_output_chars

    async def run(self, code: str) -> dict[str, Any]:
        if not code.strip():
            raise ModelRetry("the code is empty")
        if len(code) > _MAX_CODE:
            raise ModelRetry(f"the code has {len(code):,} characters; at most {_MAX_CODE:,} are accepted")
        result = await self.sandbox.run_python(code, timeout=self.run_timeout)
        if result.timed_out:
            raise TimeoutError(f"the code did not finish within {self.run_timeout:g} s and was killed with "
                               "everything it started")
        return self._render(result)

    def _render(self, result: PythonResult) -> dict[str, Any]:
        half = self.max_output_chars // 2
        stdout, cut_out = _cut(result.text, half)
        stderr, cut_err = _cut(result.error_text, half)
        out: dict[str, Any] = {"stdout": stdout, "stderr": stderr}
        if result.has_value:
            out["result"] = result.value if result.value_repr == "" else result.value_repr
        if result.error is not None:
            name = result.error.type.rsplit(".", 1)[-1]
            out["error"] = f"{name}: {result.error.message}"[:2000]
            out["traceback"] = result.error.traceback[-4000:]
        elif result.killed or (result.exit_code not in (0, None)):
            out["error"] = f"the code {result.describe()}"
        if cut_out or cut_err or result.stdout_truncated or result.stderr_truncated:
            out["note"] = "output was cut; print less (a summary, a slice) to see it all"
        return out


def python_tool(*, sandbox: Sandbox | None = None, timeout: float = 30.0, limits: SandboxLimits | None = None,
                network: bool = False, max_output_chars: int = 20_000) -> PythonTool:
    """The ``python(code)`` tool, each call in a fresh sandbox.

    Args:
        sandbox: the sandbox (default: ``Sandbox(network=network, limits=limits)``).
        timeout: wall-clock seconds per call.
        limits: memory, processes, CPU, disk and output limits of each run.
        network: give the code the host's network (then its permission is ``system``: it can reach
            whatever the host can, including internal services).
        max_output_chars: stdout and stderr shown, together.
    """
    box = sandbox or Sandbox(network=network, limits=(limits or SandboxLimits()).with_changes(timeout=timeout))
    tool = PythonTool(box, run_timeout=timeout, max_output_chars=max_output_chars).with_spec(timeout=timeout + 30)
    if network:
        tool = tool.with_spec(permission="system", annotations=ToolAnnotations(
            title="Python (sandboxed, with network)", read_only_hint=False, destructive_hint=True,
            idempotent_hint=False, open_world_hint=True))
    return tool  # type: ignore[return-value]
