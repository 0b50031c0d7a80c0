"""What the agent loop gets back from every call: :class:`ToolOutcome`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from toolrig._records import RecordPlan
from toolrig._results import ToolResult

__all__ = ["ErrorKind", "ToolError", "ToolOutcome"]


class ErrorKind(StrEnum):
    """Why a call failed. Every failure at the tool boundary has exactly one kind."""

    NOT_FOUND = "not_found"
    INVALID_ARGUMENTS = "invalid_arguments"
    DENIED = "denied"
    APPROVAL_REQUIRED = "approval_required"
    APPROVAL_DENIED = "approval_denied"
    APPROVAL_TIMEOUT = "approval_timeout"
    """Nobody approved or refused the call in time (not a refusal: a person may approve it when asked again)."""
    RATE_LIMITED = "rate_limited"
    CIRCUIT_OPEN = "circuit_open"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    EXECUTION_ERROR = "execution_error"
    RETRY_REQUESTED = "retry_requested"
    """The tool asked the model to call again differently (it raised :class:`~toolrig.ModelRetry`)."""
    LOOP_DETECTED = "loop_detected"
    OUTPUT_TOO_LARGE = "output_too_large"
    UNAVAILABLE = "unavailable"
    INTERNAL_ERROR = "internal_error"
    REPLAY_MISS = "replay_miss"
    """A replaying recorder (:mod:`toolrig.replay`) holds no recording of this call; nothing ran."""


_RETRYABLE = frozenset({ErrorKind.RATE_LIMITED, ErrorKind.TIMEOUT, ErrorKind.CIRCUIT_OPEN, ErrorKind.RETRY_REQUESTED})


@dataclass(frozen=True, kw_only=True)
class ToolError:
    """A structured failure: its kind, a message for the model, and details for code."""

    kind: ErrorKind
    message: str
    retryable: bool = False
    details: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, kind: ErrorKind | str, message: str, *, retryable: bool | None = None,
           **details: Any) -> ToolError:
        """Build an error; ``retryable`` defaults by kind."""
        kind = ErrorKind(kind)
        return cls(kind=kind, message=message,
                   retryable=kind in _RETRYABLE if retryable is None else retryable, details=details)

    def to_dict(self) -> dict[str, Any]:
        """Plain form."""
        return {"kind": self.kind.value, "message": self.message, "retryable": self.retryable,
                "details": dict(self.details)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolError:
        """The error :meth:`to_dict` gave ``data`` for.

        Raises:
            ValueError: ``data`` is not that form (an unknown kind, a field of the wrong type).
        """
        details = data.get("details") or {}
        if not isinstance(data.get("message"), str) or not isinstance(details, Mapping):
            raise ValueError("an error needs a string message and an object of details")
        return cls(kind=ErrorKind(str(data.get("kind"))), message=data["message"],
                   retryable=data.get("retryable") is True, details=dict(details))


@dataclass(frozen=True, kw_only=True)
class ToolOutcome:
    """The result of one call through the runtime: success or a structured error, never raised.

    Attributes:
        content: the text the model sees (fenced, truncated and redacted as configured). A success made without
            one is the result's text, rendered on first read (a caller that only wants ``structured`` never
            pays for the rendering).
        result: the tool's result parts (None when the tool never ran).
        repairs: argument repairs applied before validation, one line each.
        meta: anything stages add (cache hit, stale, version, ...).
    """

    call_id: str
    name: str
    ok: bool
    content: str = ""
    result: ToolResult | None = None
    error: ToolError | None = None
    attempts: int = 0
    duration_ms: float = 0.0
    truncated: bool = False
    repairs: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)
    exception: BaseException | None = field(default=None, repr=False, compare=False)
    """The exception behind an error, kept for stages that decide by type (never serialised)."""

    @classmethod
    def success(cls, call_id: str, name: str, result: ToolResult, **kw: Any) -> ToolOutcome:
        """A successful outcome whose content defaults to the result's text (rendered on first read)."""
        if cls is ToolOutcome and kw.keys() <= _SUCCESS_EXTRA:  # the record filled directly, as _PLAN.make would
            made: ToolOutcome = object.__new__(ToolOutcome)
            state = made.__dict__
            state.update(_PLAN.defaults, meta={}, call_id=call_id, name=name, ok=not result.is_error, result=result)
            if kw:
                state.update(kw)
            return made
        if cls is not ToolOutcome and "content" not in kw:  # the lazy content is this class's own
            kw["content"] = result.text
        return cls._make(kw, call_id=call_id, name=name, ok=not result.is_error, result=result)

    @classmethod
    def failure(cls, call_id: str, name: str, error: ToolError, **kw: Any) -> ToolOutcome:
        """A failed outcome whose content defaults to a model-readable error line."""
        if "content" not in kw:
            kw["content"] = (f"Please try again: {error.message}" if error.kind is ErrorKind.RETRY_REQUESTED
                             else f"Error ({error.kind.value}): {error.message}")
        return cls._make(kw, call_id=call_id, name=name, ok=False, error=error)

    @classmethod
    def _make(cls, kw: dict[str, Any], **fixed: Any) -> ToolOutcome:
        if cls is not ToolOutcome or not kw.keys().isdisjoint(fixed):
            return cls(**fixed, **kw)  # the dataclass reports unknown or repeated fields
        kw.update(fixed)
        made: ToolOutcome = _PLAN.make(kw)
        return made

    @property
    def structured(self) -> Any:
        """The structured value of the result, if any."""
        return None if self.result is None else self.result.structured

    def derive(self, **changes: Any) -> ToolOutcome:
        """A copy with some fields changed (``dataclasses.replace``, cheaply: :mod:`toolrig._records`)."""
        if "result" in changes and "content" not in changes and "content" not in self.__dict__:
            changes["content"] = self.content  # the content stays that of the result it was made from
        return _PLAN.derive(self, changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {
            "call_id": self.call_id, "name": self.name, "ok": self.ok, "content": self.content,
            "result": None if self.result is None else self.result.to_dict(),
            "error": None if self.error is None else self.error.to_dict(),
            "attempts": self.attempts, "duration_ms": round(self.duration_ms, 3),
            "truncated": self.truncated, "repairs": list(self.repairs), "meta": dict(self.meta),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolOutcome:
        """The outcome :meth:`to_dict` gave ``data`` for (without its exception, which is never serialised).

        Raises:
            ValueError: ``data`` is not that form.
        """
        if not isinstance(data, Mapping) or not isinstance(data.get("name"), str):
            raise ValueError("an outcome must be an object with a string name")
        result, error, meta = data.get("result"), data.get("error"), data.get("meta") or {}
        repairs = data.get("repairs") or ()
        if not isinstance(meta, Mapping) or not isinstance(repairs, list | tuple):
            raise ValueError("an outcome's meta must be an object and its repairs a list")
        return cls(call_id=str(data.get("call_id", "")), name=data["name"], ok=data.get("ok") is True,
                   content=str(data.get("content", "")),
                   result=None if result is None else ToolResult.from_dict(result),
                   error=None if error is None else ToolError.from_dict(error),
                   attempts=int(data.get("attempts") or 0), duration_ms=float(data.get("duration_ms") or 0.0),
                   truncated=data.get("truncated") is True, repairs=tuple(str(r) for r in repairs), meta=dict(meta))


class _LazyContent:
    """``ToolOutcome.content`` of a success made without one: its result's text, rendered on first read and kept.

    A non-data descriptor: once the instance holds its content (given, or rendered), the instance's value is read.
    """

    def __get__(self, outcome: ToolOutcome | None, owner: type | None = None) -> str:
        if outcome is None:
            return ""  # the field's default, as the class attribute was
        result = outcome.result
        text = "" if result is None else result.text
        outcome.__dict__["content"] = text
        return text


_PLAN = RecordPlan(ToolOutcome, factories={"meta": dict}, lazy=("content",))
_SUCCESS_EXTRA = _PLAN.plain - {"call_id", "name", "ok", "result"}
"""The fields :meth:`ToolOutcome.success` may be given besides its own (a repeated one goes to the constructor)."""
assert _PLAN.required <= {"call_id", "name", "ok"} and _PLAN.factories.keys() == {"meta"}
ToolOutcome.content = _LazyContent()  # type: ignore[assignment]
