"""The per-call context and injected parameters.

The current :class:`CallContext` travels in a :class:`contextvars.ContextVar`, so concurrent
calls (threads or tasks) never see each other's state. A parameter annotated
``Injected[T]`` is hidden from the model and filled from that context at call time.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field, fields
from types import MappingProxyType, UnionType
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from toolrig._records import RecordPlan
from toolrig.errors import InjectionError

__all__ = [
    "CallContext",
    "Injected",
    "InjectionError",
    "ProgressCallback",
    "current_context",
    "use_context",
]

T = TypeVar("T")

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None] | None]
"""``(progress, total, message)``; may be sync or async."""


class _InjectedMarker:
    """Metadata marker placed in ``Annotated`` by :data:`Injected`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "INJECTED"


INJECTED = _InjectedMarker()


Injected = Annotated[T, INJECTED]
"""``Injected[T]``: a parameter filled from the call context, never shown to the model.

A generic alias of ``Annotated[T, INJECTED]``, so type checkers see a plain ``T``.
Resolution, in order: a parameter typed :class:`CallContext` gets the context itself; a
name found in ``context.state`` gets that value; else a unique value in ``context.state``
that is an instance of ``T``; ``context.deps`` if it is an instance of ``T``; else the
parameter's default.
"""


@dataclass(frozen=True, kw_only=True)
class CallContext:
    """Who is calling, on whose behalf, and what the call may use.

    Attributes:
        user: the end user on whose behalf the agent acts.
        agent: the agent (or model) that asked for the call.
        session: a conversation or run identifier.
        call_id: the id of the tool call being executed.
        tool_name: the tool being executed.
        tool_version: its version (set once the runtime resolved the tool).
        approved: a human approved this very call (set by the approval stage after an explicit yes).
        roles: roles of the user, for policies.
        state: values for ``Injected`` parameters, by parameter name.
        deps: one dependency object for ``Injected`` parameters, matched by type.
        metadata: anything else (request ids, tenant, ...).
        progress: receives progress reports from the tool.
        run_id: the workflow run this call is a step of (:mod:`toolrig.workflows`; kept in its audit row).
        step_id: the step of that run (kept in the audit row too).
        approver: asked instead of the runtime's approval handler when this call needs approval (the same
            ``(call, context, reason)`` signature; e.g. a workflow step approved in the queue before it resumed).
    """

    user: str | None = None
    agent: str | None = None
    session: str | None = None
    call_id: str | None = None
    tool_name: str | None = None
    tool_version: str | None = None
    approved: bool = False
    roles: frozenset[str] = frozenset()
    state: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    deps: Any = None
    metadata: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    progress: ProgressCallback | None = None
    run_id: str | None = None
    step_id: str | None = None
    approver: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        # Private read-only copies: whoever built the context cannot change it behind a running call.
        if isinstance(self.roles, str):
            raise TypeError(f"roles must be a collection of role names, not one string: roles={{{self.roles!r}}}")
        object.__setattr__(self, "roles", frozenset(self.roles))
        object.__setattr__(self, "state", MappingProxyType(dict(self.state)))
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))

    def __reduce__(self) -> tuple[Any, ...]:
        kwargs = {f.name: getattr(self, f.name) for f in fields(self)}
        kwargs["state"], kwargs["metadata"] = dict(self.state), dict(self.metadata)
        return (_make_context, (kwargs,))

    def derive(self, **changes: Any) -> CallContext:
        """A copy with some fields changed (contexts are never mutated; cheaply: :mod:`toolrig._records`)."""
        return _PLAN.derive(self, changes)

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress to whoever runs the call (no-op when nobody listens)."""
        if self.progress is None:
            return
        result = self.progress(progress, total, message)
        if inspect.isawaitable(result):
            await result

    def resolve(self, name: str, annotation: Any, default: Any = inspect.Parameter.empty) -> Any:
        """Find the value of an injected parameter (see :class:`Injected`)."""
        if isinstance(annotation, type) and issubclass(annotation, CallContext):
            return self
        if name in self.state:
            return self.state[name]
        kind = _runtime_type(annotation)
        if kind is not None:
            matches = [v for v in self.state.values() if isinstance(v, kind)]
            if len(matches) == 1:
                return matches[0]
            if self.deps is not None and isinstance(self.deps, kind):
                return self.deps
        if default is not inspect.Parameter.empty:
            return default
        raise InjectionError(
            f"injected parameter {name!r} has no value: pass it in CallContext(state={{{name!r}: ...}})"
        )


_PLAN = RecordPlan(CallContext, normalized=("roles", "state", "metadata"),
                   factories={"state": lambda: MappingProxyType({}), "metadata": lambda: MappingProxyType({})})


def _make_context(kwargs: dict[str, Any]) -> CallContext:
    return CallContext(**kwargs)


def _runtime_type(annotation: Any) -> type | tuple[type, ...] | None:
    """What ``isinstance`` can check for an annotation: ``dict[str, int]`` -> dict, ``A | B`` -> (A, B)."""
    if isinstance(annotation, type) and get_origin(annotation) is None:
        return annotation
    origin = get_origin(annotation)
    if origin is Union or origin is UnionType:
        kinds = [_runtime_type(arg) for arg in get_args(annotation)]
        flat = tuple(t for k in kinds if k is not None for t in (k if isinstance(k, tuple) else (k,)))
        return flat if len(kinds) == len(flat) and all(k is not None for k in kinds) else None
    return origin if isinstance(origin, type) else None


EMPTY_CONTEXT = CallContext()
_current: ContextVar[CallContext] = ContextVar("toolrig_call_context", default=EMPTY_CONTEXT)


def current_context() -> CallContext:
    """The context of the call running in this task or thread (an empty one outside calls)."""
    return _current.get()


class _ContextScope(AbstractContextManager[CallContext]):
    """What :func:`use_context` returns: a plain class, cheaper per call than a generator manager."""

    __slots__ = ("_ctx", "_token")

    def __init__(self, ctx: CallContext) -> None:
        self._ctx = ctx
        self._token: Token[CallContext] | None = None

    def __enter__(self) -> CallContext:
        if self._token is not None:
            raise RuntimeError("use_context(...) cannot be entered twice at once")
        self._token = _current.set(self._ctx)
        return self._ctx

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None
        token, self._token = self._token, None
        _current.reset(token)


def use_context(ctx: CallContext) -> AbstractContextManager[CallContext]:
    """Make ``ctx`` the current context inside the ``with`` block."""
    return _ContextScope(ctx)
