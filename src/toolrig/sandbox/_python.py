"""The host half of ``Sandbox.run_python``: the runner's command line, and its JSON reply read back."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from toolrig.sandbox._result import PythonError, PythonResult, SandboxResult

__all__ = ["CODE_PATH", "RUNNER_PATH", "python_files", "python_result", "runner_argv"]

RUNNER_PATH = "/run/toolrig/runner.py"
CODE_PATH = "/run/toolrig/code.py"
_RUNNER = Path(__file__).with_name("_pyrunner.py")
_MAX_TEXT = 20_000


def runner_argv(python: str, path: tuple[str, ...] = ()) -> tuple[str, ...]:
    """``python -I -S -u runner.py code.py CONFIG``: isolated mode, no site, unbuffered output."""
    return (python, "-I", "-S", "-u", RUNNER_PATH, CODE_PATH, json.dumps({"path": list(path)}))


def python_files(code: str) -> dict[str, bytes]:
    """The read-only files a Python run needs inside the sandbox."""
    return {RUNNER_PATH: _RUNNER.read_bytes(), CODE_PATH: code.encode("utf-8", "surrogatepass")}


def _text(value: Any) -> str:
    return value[:_MAX_TEXT] if isinstance(value, str) else ""


def _error(data: Any) -> PythonError | None:
    if not isinstance(data, dict):
        return None
    return PythonError(type=_text(data.get("type"))[:300] or "builtins.Exception", message=_text(data.get("message")),
                       traceback=_text(data.get("traceback")))


def python_result(result: SandboxResult, reply: bytes | None) -> PythonResult:
    """Combine a run and the runner's reply (untrusted: parsed as JSON only, every field checked)."""
    fields = asdict(result)
    try:
        message = json.loads(reply) if reply else {}
    except (ValueError, RecursionError):
        message = {}
    if not isinstance(message, dict):
        message = {}
    value, has_value, value_repr = None, bool(message.get("has_value") is True), _text(message.get("repr"))
    if has_value and isinstance(message.get("value_json"), str):
        try:
            value = json.loads(message["value_json"])
        except (ValueError, RecursionError):
            value, value_repr = None, value_repr or "<unreadable value>"
    error = _error(message.get("error")) if message.get("ok") is False else None
    return PythonResult(**fields, value=value, has_value=has_value, value_repr=value_repr, error=error)
