"""Stage: cache the results of tools marked ``cacheable`` (TTL + LRU, shared on Redis).

The key is the tool's ``name@version`` and a digest of everything the tool can see: its validated
arguments as canonical JSON, the values of its ``Injected`` parameters (a whole
:class:`~toolrig.CallContext` when it takes one: user, agent, session, roles, state, metadata) and,
by scope, who calls:

``scope="user"`` (default)
    the user is part of the key, so one user never gets another's result;
``scope="session"``
    user and session;
``scope="global"``
    shared by every caller (for results that depend on the arguments alone); injected values
    still count.

A tool may choose its own scope with ``metadata={"cache_scope": "global"}``. A call whose
arguments or injected values have no stable JSON form is not cached (never a guessed key).
Only successful outcomes are stored; hits come back with ``meta["cache"] = "hit"``. With
``stale_on_error=True`` a failing call (execution error, timeout, open circuit, ...) is answered
with the last good result, marked ``meta["stale"] = True`` and a note in its content.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

from toolrig._context import CallContext
from toolrig._define import BaseTool
from toolrig._outcome import ErrorKind, ToolOutcome
from toolrig._results import ToolResult
from toolrig.errors import ArgumentsError, ModelRetry
from toolrig.runtime._chain import CallNext, Stage
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._services import Services
from toolrig.state import KeyValueStore, StateAccess, StateBackend, StateUnavailable, canonical_arguments, digest

__all__ = ["CacheScope", "CacheStage", "result_from_dict"]

CacheScope = Literal["user", "session", "global"]
"""Who shares cached results: each user (default), each user's session, or everyone."""

_STALE_KINDS = frozenset({ErrorKind.EXECUTION_ERROR, ErrorKind.TIMEOUT, ErrorKind.CIRCUIT_OPEN,
                          ErrorKind.UNAVAILABLE, ErrorKind.RATE_LIMITED})


def result_from_dict(data: Mapping[str, Any]) -> ToolResult:
    """Rebuild a cached :class:`ToolResult` (same as :meth:`ToolResult.from_dict`)."""
    return ToolResult.from_dict(data)


def _visible(value: Any) -> Any:
    """What a key needs of an injected value: a call context by its data fields, anything else as is."""
    if isinstance(value, CallContext):
        deps = value.deps
        return {"user": value.user, "agent": value.agent, "session": value.session,
                "roles": sorted(value.roles), "state": dict(value.state), "metadata": dict(value.metadata),
                "deps": None if deps is None else f"{type(deps).__module__}.{type(deps).__qualname__}"}
    return value


def _serves_stale(outcome: ToolOutcome) -> bool:
    error = outcome.error
    if error is None or error.kind not in _STALE_KINDS:
        return False
    return not isinstance(outcome.exception, ModelRetry | ArgumentsError)


class CacheStage(Stage):
    """Serves repeated calls of cacheable tools from the cache.

    Args:
        ttl: seconds a result stays fresh when the tool sets no ``cache_ttl``.
        max_entries: LRU bound of the in-memory cache (Redis entries are bounded by their expiry).
        scope: who shares entries (see the module docstring); a tool's ``metadata["cache_scope"]`` wins.
        stale_on_error: answer a failing call with the last good result, marked stale.
        stale_ttl: seconds an expired result is kept for ``stale_on_error``.
        namespace: name of the store in the state backend (stages sharing it share entries).
        state: a backend for this stage only (default: the runtime's).
    """

    name = "cache"

    def __init__(self, *, ttl: float = 300.0, max_entries: int = 1024, scope: CacheScope = "user",
                 stale_on_error: bool = False, stale_ttl: float = 86_400.0, namespace: str = "cache",
                 state: StateBackend | None = None) -> None:
        if not ttl > 0 or not stale_ttl >= 0 or max_entries < 1:
            raise ValueError("ttl must be positive, stale_ttl >= 0 and max_entries >= 1")
        self.ttl = ttl
        self.max_entries = max_entries
        if scope not in get_args(CacheScope):
            raise ValueError(f"cache scope must be one of {get_args(CacheScope)}, not {scope!r}")
        self.scope = scope
        self.stale_on_error = stale_on_error
        self.stale_ttl = stale_ttl
        self.namespace = namespace
        self._access = StateAccess(state, stage=self.name)
        self._seen: dict[int, StateBackend] = {}
        self._stats = {"hits": 0, "misses": 0, "stale": 0, "stores": 0, "bypassed": 0, "errors": 0}

    decides = False

    def applies(self, tool: BaseTool, services: Services, stages: Sequence[Stage]) -> bool:
        """Only cacheable tools."""
        return tool.spec.cacheable

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        assert inv.tool is not None and inv.values is not None
        spec = inv.tool.spec
        if not spec.cacheable:
            return await call_next(inv)
        key = self._key(inv)
        if key is None:  # an argument or injected value without a stable JSON form: never guess a key
            self._stats["bypassed"] += 1
            return await call_next(inv)
        store = self._store(inv)
        clock = inv.services.clock
        entry = await self._get(store, key, spec.name, inv.services)
        if entry is not None and clock.time() < entry["expires_at"]:
            self._stats["hits"] += 1
            return self._answer(inv, entry, {"cache": "hit", "cache_age": clock.time() - entry["stored_at"]})
        self._stats["misses"] += 1
        outcome = await call_next(inv)
        if outcome.ok and outcome.result is not None:
            await self._put(store, key, outcome.result, now=clock.time(), ttl=spec.cache_ttl or self.ttl,
                            tool=spec.name, services=inv.services)
            return outcome.derive(meta={**outcome.meta, "cache": "miss"})
        if self.stale_on_error and entry is not None and _serves_stale(outcome):
            self._stats["stale"] += 1
            return self._stale(inv, entry, outcome, clock.time())
        return outcome

    def _key(self, inv: Invocation) -> str | None:
        assert inv.tool is not None and inv.values is not None
        spec = inv.tool.spec
        canonical = canonical_arguments(inv.values)
        if canonical is None:
            return None
        ctx = inv.context
        seen = inv.tool.injected_values(ctx)
        injected = canonical_arguments({k: _visible(v) for k, v in seen.items()}) if seen else ""
        if injected is None:
            return None
        scope = spec.metadata.get("cache_scope", self.scope)
        user = "" if scope == "global" else ctx.user or ""
        session = ctx.session or "" if scope == "session" else ""
        return f"{spec.key}:{digest(user, session, injected, canonical)}"

    # -- store access -----------------------------------------------------------------------------
    def _store(self, inv: Invocation) -> KeyValueStore:
        backend = self._access.backend(inv.services)
        if id(backend) not in self._seen and len(self._seen) < 16:
            self._seen[id(backend)] = backend
        return backend.kv(self.namespace, max_entries=self.max_entries)

    async def _get(self, store: KeyValueStore, key: str, tool: str, services: Any) -> Any:
        try:
            entry = await store.get(key)
        except StateUnavailable as exc:
            self._stats["errors"] += 1
            self._access.unavailable(exc, tool, services)
            return None
        self._access.answered(services)
        return entry if isinstance(entry, dict) and "expires_at" in entry and "result" in entry else None

    async def _put(self, store: KeyValueStore, key: str, result: ToolResult, *, now: float, ttl: float,
                   tool: str, services: Any = None) -> None:
        entry = {"result": result.to_dict(), "stored_at": now, "expires_at": now + ttl}
        keep = ttl + (self.stale_ttl if self.stale_on_error else 0.0)
        try:
            await store.set(key, entry, ttl=keep)
        except StateUnavailable as exc:
            self._stats["errors"] += 1
            self._access.unavailable(exc, tool, services)
            return
        self._stats["stores"] += 1

    # -- outcomes -----------------------------------------------------------------------------------
    @staticmethod
    def _answer(inv: Invocation, entry: Mapping[str, Any], meta: dict[str, Any], content: str | None = None
                ) -> ToolOutcome:
        result = result_from_dict(entry["result"])
        extra = {} if content is None else {"content": content}
        return ToolOutcome.success(inv.call.id, inv.name, result, attempts=0, repairs=inv.repairs, meta=meta,
                                   **extra)

    def _stale(self, inv: Invocation, entry: Mapping[str, Any], failed: ToolOutcome, now: float) -> ToolOutcome:
        assert failed.error is not None
        age = max(0, round(now - entry["stored_at"]))
        text = result_from_dict(entry["result"]).text
        note = (f"[note: {inv.name} failed just now ({failed.error.kind.value}: {failed.error.message}); "
                f"this is its last good result, from {age} seconds ago, and may be out of date]")
        meta = {"cache": "stale", "stale": True, "stale_age": now - entry["stored_at"],
                "error": failed.error.to_dict()}
        return self._answer(inv, entry, meta, content=f"{text}\n\n{note}" if text else note)

    # -- management ------------------------------------------------------------------------------------
    def stats(self) -> dict[str, float]:
        """Counters of this stage (this process): hits, misses, stale answers, stores, hit rate."""
        looked = self._stats["hits"] + self._stats["misses"]
        return {**self._stats, "hit_rate": self._stats["hits"] / looked if looked else 0.0}

    async def invalidate(self, tool_name: str | None = None, *, state: StateBackend | None = None) -> int:
        """Drop cached results of ``tool_name`` (every version), or of every tool; return how many.

        Args:
            tool_name: the tool whose entries go; None drops the whole cache.
            state: the backend to clear (default: this stage's, else every backend it has used).
        """
        prefix = "" if tool_name is None else f"{tool_name}@"
        backends = [state] if state is not None else (
            [self._access.state] if self._access.state is not None else list(self._seen.values()))
        dropped = 0
        for backend in backends:
            dropped += await backend.kv(self.namespace, max_entries=self.max_entries).delete_prefix(prefix)
        return dropped
