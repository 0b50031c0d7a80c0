"""Runs Python source inside the sandbox and replies with JSON data (never a pickle).

Started as ``python -I -S -u runner.py CODE_PATH CONFIG`` (standard library only; the source is
a read-only file). The code runs as ``__main__``; when its last statement is an expression,
that expression's value is the reply's ``value`` (as JSON, or its ``repr`` when it has no JSON
form). An exception becomes its type name, message and traceback text. The reply goes to the
private channel named by ``$TOOLRIG_REPLY`` (``fd:N`` or ``file:PATH``); what the code prints goes
to stdout and stderr as usual. The host treats the reply as untrusted data (the code runs in
this same process and could forge it): it only ever parses it as JSON, size-capped.
"""

from __future__ import annotations

import ast
import json
import linecache
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

_MAX_VALUE = 8 << 20
_MAX_TEXT = 20_000
_FILENAME = "<sandbox>"


def _channel() -> Callable[[bytes], None]:
    spec = os.environ.pop("TOOLRIG_REPLY", "")
    if spec.startswith("fd:"):
        fd = int(spec[3:])
        os.set_inheritable(fd, False)

        def send(data: bytes) -> None:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.close(fd)

        return send
    if spec.startswith("file:"):
        path = spec[5:]

        def write(data: bytes) -> None:
            with open(path, "wb") as handle:
                handle.write(data)

        return write
    return lambda data: None


def _value(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return {"has_value": True, "repr": _safe_repr(value)}
    if len(text) > _MAX_VALUE:
        return {"has_value": True, "repr": _safe_repr(value)[:_MAX_TEXT]}
    return {"has_value": True, "value_json": text}


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)[:_MAX_TEXT]
    except Exception as exc:  # a __repr__ that raises
        return f"<unrepresentable {type(value).__name__}: {type(exc).__name__}>"


def _error(exc: BaseException) -> dict[str, Any]:
    kind = type(exc)
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != _FILENAME:  # drop the runner's own frames
        tb = tb.tb_next
    text = "".join(traceback.format_exception(kind, exc, tb or exc.__traceback__))
    return {"type": f"{kind.__module__}.{kind.__qualname__}", "message": str(exc)[:_MAX_TEXT],
            "traceback": text[-_MAX_TEXT:]}


def _run(source: str, namespace: dict[str, Any]) -> Any:
    linecache.cache[_FILENAME] = (len(source), None, source.splitlines(True), _FILENAME)  # source in tracebacks
    tree = ast.parse(source, filename=_FILENAME)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body[-1].value)
        tree.body.pop()
    exec(compile(tree, _FILENAME, "exec"), namespace)
    if last is None:
        return None
    return eval(compile(last, _FILENAME, "eval"), namespace)


def main() -> None:
    """Run the code file named by the first argument; reply on the private channel."""
    send = _channel()
    runner_pid = os.getpid()
    config = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    sys.path[:0] = [str(p) for p in config.get("path", [])]
    with open(sys.argv[1], encoding="utf-8") as handle:
        source = handle.read()
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    code = 0
    try:
        reply: dict[str, Any] = {"ok": True, **_value(_run(source, namespace))}
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        reply = {"ok": True, "exit": code}
    except BaseException as exc:  # everything the code raises is reported, KeyboardInterrupt included
        reply = {"ok": False, "error": _error(exc)}
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120
    if os.getpid() != runner_pid:  # a child the code forked fell through to here: only the runner replies
        os._exit(code)
    send(json.dumps(reply, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    sys.exit(code)


if __name__ == "__main__":
    main()
