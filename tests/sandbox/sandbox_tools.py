"""Tools the sandbox executor tests run (module level, importable in the sandbox: tests/sandbox is on sys.path)."""

from __future__ import annotations

import os
import time

from pydantic import BaseModel

from toolrig import Injected, ModelRetry, Tool, tool


class Point(BaseModel):
    x: int
    y: int


@tool(isolation="sandbox")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(isolation="sandbox")
def norm(p: Point, scale: float = 1.0) -> dict[str, float]:
    """The point's coordinates, scaled."""
    return {"x": p.x * scale, "y": p.y * scale}


@tool(isolation="sandbox")
def boom(message: str) -> str:
    """Raise a ValueError."""
    raise ValueError(message)


class CustomError(Exception):
    """Not a class the host knows."""


@tool(isolation="sandbox")
def custom(message: str) -> str:
    """Raise an exception of a type only this module defines."""
    raise CustomError(message)


@tool(isolation="sandbox")
def retry_please() -> str:
    """Ask the model to try again."""
    raise ModelRetry("use another argument")


@tool(isolation="sandbox")
def sleepy(seconds: float) -> str:
    """Sleep, ignoring SIGTERM."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(seconds)
    return "woke"


@tool(isolation="sandbox")
def write_host(path: str) -> str:
    """Try to write a file on the host."""
    try:
        with open(path, "w") as handle:
            handle.write("escaped")
    except OSError as exc:
        return f"refused: {type(exc).__name__}"
    return "written (inside the sandbox only)"


@tool(isolation="sandbox")
def whoami(user: Injected[str] = "nobody-injected") -> dict[str, object]:
    """Who runs this body, and the injected user."""
    return {"uid": os.getuid(), "user": user, "env": sorted(os.environ)}


@tool(isolation="sandbox")
def crash() -> str:
    """Die without answering."""
    os._exit(3)


class Greeter(Tool):
    """Greet someone."""

    isolation = "sandbox"

    def run(self, name: str) -> str:
        return f"hello {name}"
