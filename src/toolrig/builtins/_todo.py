"""``todo_write`` / ``todo_read``: the agent's task list for the current session (the shape agents already use).

``todo_write(items)`` replaces the whole list; each item is ``{id, text, status}`` with status ``pending``,
``in_progress`` or ``done``, and at most one item is ``in_progress``. A list belongs to the call's user, agent
and session (from the :class:`~toolrig.CallContext`), lives in a :class:`toolrig.state.KeyValueStore` (this
process by default, or e.g. ``RedisState(url).kv("todo", ...)`` shared by replicas) and expires after ``ttl``.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolrig import BaseTool, ModelRetry, Tool, current_context
from toolrig.state import KeyValueStore, MemoryKeyValueStore, digest, make_state

__all__ = ["TodoItem", "TodoRead", "TodoWrite", "todo_tools"]

Status = Literal["pending", "in_progress", "done"]


class TodoItem(BaseModel):
    """One task of the list."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, Field(min_length=1, max_length=64, description="a short stable id, e.g. '1' or 'tests'")]
    text: Annotated[str, Field(min_length=1, max_length=500, description="what to do")]
    status: Annotated[Status, Field(description="pending, in_progress (at most one) or done")] = "pending"


class _Lists:
    def __init__(self, store: KeyValueStore, *, max_items: int, ttl: float) -> None:
        self.store, self.max_items, self.ttl = store, max_items, ttl

    def key(self) -> str:
        ctx = current_context()
        return "todo:" + digest(json.dumps([ctx.user, ctx.agent, ctx.session]))

    async def read(self) -> list[dict[str, Any]]:
        value = await self.store.get(self.key())
        return list(value["items"]) if isinstance(value, dict) else []


def _summary(items: list[dict[str, Any]]) -> dict[str, Any]:
    counts = Counter(i["status"] for i in items)
    return {"items": items, "pending": counts["pending"], "in_progress": counts["in_progress"],
            "done": counts["done"]}


class TodoWrite(Tool):
    """Write the task list of this session (replaces it whole): plan multi-step work and track progress.

    Mark a task in_progress before starting it (only one at a time) and done as soon as it is finished.

    Args:
        items: every task, in order, e.g. [{"id": "1", "text": "run the tests", "status": "in_progress"}].
    """

    name = "todo_write"
    permission = "write"
    tags = frozenset({"todo", "builtin"})
    metadata: ClassVar[dict[str, Any]] = {"breaker": False}

    def __init__(self, lists: _Lists) -> None:
        self.lists = lists

    async def run(self, items: list[TodoItem]) -> dict[str, Any]:
        if len(items) > self.lists.max_items:
            raise ModelRetry(f"at most {self.lists.max_items} tasks; merge or drop some")
        ids = Counter(i.id for i in items)
        twice = sorted(k for k, n in ids.items() if n > 1)
        if twice:
            raise ModelRetry(f"task ids must be unique; repeated: {', '.join(twice)}")
        active = [i.id for i in items if i.status == "in_progress"]
        if len(active) > 1:
            raise ModelRetry(f"at most one task may be in_progress, not {len(active)} ({', '.join(active)}): "
                             "finish one first")
        stored = [i.model_dump() for i in items]
        await self.lists.store.set(self.lists.key(), {"items": stored, "updated": time.time()}, ttl=self.lists.ttl)
        return _summary(stored)


class TodoRead(Tool):
    """Read the task list of this session (empty until todo_write writes one)."""

    name = "todo_read"
    permission = "readonly"
    tags = frozenset({"todo", "builtin"})
    metadata: ClassVar[dict[str, Any]] = {"breaker": False}

    def __init__(self, lists: _Lists) -> None:
        self.lists = lists

    async def run(self) -> dict[str, Any]:
        return _summary(await self.lists.read())


def todo_tools(store: KeyValueStore | str | None = None, *, max_items: int = 100, ttl: float = 7 * 24 * 3600.0,
               max_sessions: int = 10_000) -> list[BaseTool]:
    """The task-list tools: ``todo_write(items)`` (write) and ``todo_read()`` (readonly), one list per session.

    Args:
        store: where the lists live: a :class:`~toolrig.state.KeyValueStore`, a ``redis://`` URL (shared by
            replicas), or None: this process, the ``max_sessions`` most recent lists.
        max_items: the most tasks in one list.
        ttl: seconds a list is kept after its last write.
        max_sessions: lists kept by the default in-process store.
    """
    if isinstance(store, str):
        store = make_state(store, prefix="toolrig:todo").kv("todo", max_entries=max_sessions)
    lists = _Lists(store if store is not None else MemoryKeyValueStore(max_entries=max_sessions),
                   max_items=max_items, ttl=ttl)
    return [TodoWrite(lists), TodoRead(lists)]
