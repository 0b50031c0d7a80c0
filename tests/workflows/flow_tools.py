"""Tools the workflow tests call, and counters that prove how often each body ran (files: across processes too).

Every tool appends one line to ``$WF_COUNTERS/<tool>.count`` when its body runs (when ``WF_COUNTERS`` is set).
``settle`` waits on :data:`RELEASE`, an event the test sets; ``halt`` kills its own process with SIGKILL when
``WF_KILL`` names it. Importable by a subprocess (this folder is put on its ``sys.path``).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import anyio

from toolrig import tool

RELEASE: dict[str, anyio.Event] = {}
"""The events ``settle`` waits on, by name; a test creates and sets them."""


def _count(name: str) -> None:
    folder = os.environ.get("WF_COUNTERS")
    if folder:
        with (Path(folder) / f"{name}.count").open("a", encoding="utf-8") as file:
            file.write("1\n")
            file.flush()
            os.fsync(file.fileno())


def counted(folder: Path, name: str) -> int:
    """How many times the body of ``name`` ran."""
    file = folder / f"{name}.count"
    return len(file.read_text().splitlines()) if file.exists() else 0


def _maybe_die(name: str) -> None:
    if os.environ.get("WF_KILL") == name:
        os.kill(os.getpid(), signal.SIGKILL)


@tool(permission="readonly")
def search(city: str) -> dict[str, Any]:
    """Find places in a city.

    Args:
        city: the city.
    """
    _count("search")
    return {"count": 2, "items": [{"id": 1, "name": f"{city} museum"}, {"id": 2, "name": f"{city} park"}]}


@tool(permission="readonly")
def describe(place_id: int) -> str:
    """Describe a place.

    Args:
        place_id: the place.
    """
    _count("describe")
    return f"place {place_id}"


@tool(permission="readonly")
async def settle(name: str, value: int = 1) -> int:
    """Wait until the test releases ``name``, then return ``value``.

    Args:
        name: which release to wait for.
        value: what to return.
    """
    _count("settle")
    await RELEASE[name].wait()
    return value


@tool(permission="readonly")
def explode(reason: str = "boom") -> int:
    """Always fails.

    Args:
        reason: the message.
    """
    _count("explode")
    raise RuntimeError(reason)


@tool(permission="readonly")
def echo(text: str) -> str:
    """Echo the text.

    Args:
        text: the text.
    """
    _count("echo")
    return text


@tool(permission="readonly")
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: one.
        b: the other.
    """
    _count("add")
    return a + b


@tool(permission="write")
def book(place_id: int) -> dict[str, Any]:
    """Book a place (not idempotent: each call books again).

    Args:
        place_id: the place.
    """
    _count("book")
    _maybe_die("book")
    return {"booked": place_id}


@tool(permission="write", idempotent=True)
def store(key: str, value: int) -> dict[str, Any]:
    """Store a value under a key (idempotent: the same call twice stores the same).

    Args:
        key: the key.
        value: the value.
    """
    _count("store")
    _maybe_die("store")
    return {"stored": key, "value": value}


@tool(permission="write")
async def block(marker: str) -> str:
    """Write ``marker`` (a file path), then wait forever (a test kills the process while it waits).

    Args:
        marker: the file to create once running.
    """
    _count("block")
    Path(marker).write_text("running")
    await anyio.sleep_forever()
    return "never"


@tool(permission="destructive")
def wipe(target: str) -> str:
    """Delete a target (destructive: needs approval).

    Args:
        target: what to delete.
    """
    _count("wipe")
    return f"wiped {target}"


@tool(permission="readonly")
def publish(text: str) -> str:
    """Publish text (a policy may deny it).

    Args:
        text: the text.
    """
    _count("publish")
    return f"published {text}"


TOOLS = [search, describe, settle, explode, echo, add, book, store, block, wipe, publish]
