"""What a model (and a policy) knows about a tool: the frozen :class:`ToolSpec`.

The spec is plain data, JSON-serialisable, and never holds the callable. Live status and
statistics sit beside it in :class:`ToolVitals`.
"""

from __future__ import annotations

import functools
import json
import math
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from toolrig._alternatives import check_alternatives
from toolrig._frozen import check_json as _check_json
from toolrig._frozen import freeze, thaw
from toolrig.errors import DefinitionError

if TYPE_CHECKING:
    from packaging.version import Version

__all__ = [
    "NAME_PATTERN", "Isolation", "Permission", "Retry", "RetryPolicy", "ToolAnnotations", "ToolSpec", "ToolStatus",
    "Trust", "check_name", "freeze", "parse_version", "thaw",
]

NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
"""Tool names valid for every provider (OpenAI, Anthropic, Gemini, MCP)."""


class Permission(StrEnum):
    """How much a tool can change the world; drives default policy and MCP hints."""

    READONLY = "readonly"
    WRITE = "write"
    DESTRUCTIVE = "destructive"
    SYSTEM = "system"


class Trust(StrEnum):
    """Whether a tool's output can be trusted (``external`` output is fenced for the model)."""

    INTERNAL = "internal"
    EXTERNAL = "external"


class Isolation(StrEnum):
    """Where the tool body runs (the runtime picks the executor of that name).

    ``inline``: async bodies in the event loop, sync bodies on a worker thread of the runtime;
    ``thread``: a bounded pool of threads for heavy blocking work; ``process``: a warm worker
    process (the only place a running body can be stopped); ``sandbox``: an OS sandbox
    (:mod:`toolrig.sandbox`), refusing to run where no adequate sandbox exists.
    """

    INLINE = "inline"
    THREAD = "thread"
    PROCESS = "process"
    SANDBOX = "sandbox"


class ToolStatus(StrEnum):
    """Runtime availability of a registered tool."""

    ACTIVE = "active"
    DISABLED = "disabled"
    ERROR = "error"


def check_name(name: str, *, what: str = "tool name") -> str:
    """Return ``name`` if it is a legal tool name, else raise :class:`DefinitionError`."""
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise DefinitionError(
            f"illegal {what} {name!r}: use 1-64 letters, digits, '_' or '-' "
            "(e.g. 'get_weather'), so that every provider accepts it"
        )
    return name


def parse_version(version: str) -> Version:
    """Parse a semver-like version string (``1.2.3``, ``1.2.3-rc.1``).

    The answer is shared between equal strings (a Version does not change): most tools have the same few.
    """
    try:
        return _parse_version_cached(version)
    except TypeError:  # unhashable: not a version either (raises DefinitionError)
        return _parse_version(version)


def _parse_version(version: str) -> Version:
    from packaging.version import InvalidVersion, Version  # on first use: a cheap `import toolrig`

    try:
        return Version(version)
    except (InvalidVersion, TypeError) as exc:
        raise DefinitionError(f"version {version!r} is not a semantic version such as '1.2.3'") from exc


_parse_version_cached = functools.lru_cache(maxsize=256)(_parse_version)


@dataclass(frozen=True, kw_only=True)
class Retry:
    """How the retry stage retries a failing call (``@tool(retry=Retry(max_attempts=3))``).

    Its older name, :data:`RetryPolicy`, is kept as an alias: "policy" means :class:`toolrig.Policy` (who may
    call what).

    Attributes:
        max_attempts: total attempts, the first included.
        initial_delay: delay before the second attempt, in seconds.
        multiplier: growth of the delay per attempt.
        max_delay: cap on any single delay.
        jitter: random extra delay, as a fraction of the computed delay (0 disables).
        retry_on: exception types worth retrying (matched by type, never by message).
        retry_non_idempotent: retry even when the tool is not idempotent (declared safe).
    """

    max_attempts: int = 3
    initial_delay: float = 0.1
    multiplier: float = 2.0
    max_delay: float = 10.0
    jitter: float = 0.1
    retry_on: tuple[type[BaseException], ...] = (TimeoutError, ConnectionError)
    retry_non_idempotent: bool = False

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise DefinitionError("Retry.max_attempts must be >= 1")
        if self.initial_delay < 0 or self.max_delay < 0 or self.multiplier < 1 or self.jitter < 0:
            raise DefinitionError("Retry delays must be >= 0, multiplier >= 1, jitter >= 0")

    def delay(self, attempt: int) -> float:
        """Base delay (without jitter) after failed attempt number ``attempt`` (1-based)."""
        return float(min(self.max_delay, self.initial_delay * self.multiplier ** (attempt - 1)))

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (exception types by qualified name)."""
        return {
            "max_attempts": self.max_attempts,
            "initial_delay": self.initial_delay,
            "multiplier": self.multiplier,
            "max_delay": self.max_delay,
            "jitter": self.jitter,
            "retry_on": [f"{t.__module__}.{t.__qualname__}" for t in self.retry_on],
            "retry_non_idempotent": self.retry_non_idempotent,
        }


RetryPolicy = Retry
"""The older name of :class:`Retry` (kept as an alias)."""


@dataclass(frozen=True, kw_only=True)
class ToolAnnotations:
    """MCP tool annotations (hints for clients; never a security boundary)."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None

    @classmethod
    def for_permission(
        cls, permission: Permission, *, title: str | None = None, open_world: bool | None = None
    ) -> ToolAnnotations:
        """Annotations implied by a permission level."""
        read_only = permission is Permission.READONLY
        return cls(
            title=title,
            read_only_hint=read_only,
            destructive_hint=permission in (Permission.DESTRUCTIVE, Permission.SYSTEM),
            idempotent_hint=True if read_only else None,
            open_world_hint=open_world,
        )

    def to_mcp(self) -> dict[str, Any]:
        """The MCP wire form (camelCase keys; unset hints omitted)."""
        pairs = {
            "title": self.title,
            "readOnlyHint": self.read_only_hint,
            "destructiveHint": self.destructive_hint,
            "idempotentHint": self.idempotent_hint,
            "openWorldHint": self.open_world_hint,
        }
        return {k: v for k, v in pairs.items() if v is not None}

    @classmethod
    def from_mcp(cls, data: Mapping[str, Any]) -> ToolAnnotations:
        """Read the MCP wire form."""
        return cls(
            title=data.get("title"),
            read_only_hint=data.get("readOnlyHint"),
            destructive_hint=data.get("destructiveHint"),
            idempotent_hint=data.get("idempotentHint"),
            open_world_hint=data.get("openWorldHint"),
        )


_DERIVED: dict[tuple[Permission, bool | None], ToolAnnotations] = {}
"""The annotations each permission implies (with each open-world hint), shared by the specs that derive them."""


@dataclass(frozen=True, kw_only=True, eq=False, slots=True)
class ToolSpec:
    """Everything known about a tool except its code. Frozen; ``to_dict()`` is JSON-ready.

    Its fields live in slots (no ``__dict__``): one object per tool, no dict beside it.
    """

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    output_schema: Mapping[str, Any] | None = None
    version: str = "1.0.0"
    author: str | None = None
    tags: frozenset[str] = frozenset()
    examples: tuple[Mapping[str, Any], ...] = ()
    permission: Permission = Permission.WRITE
    requires_approval: bool = False
    trust: Trust = Trust.INTERNAL
    timeout: float | None = None
    retry: Retry | None = None
    rate_limit: str | None = None
    cacheable: bool = False
    cache_ttl: float | None = None
    isolation: Isolation = Isolation.INLINE
    idempotent: bool | None = None
    deprecated: str | None = None
    annotations: ToolAnnotations | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    alternatives: tuple[Mapping[str, Any], ...] = ()
    """Tools that do the same job, tried in order when a runtime with ``fallback=`` finds this one failing:
    names, or ``{"tool": name, "arguments": {their_parameter: our_parameter}}`` to rename arguments."""

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        check_name(self.name)
        parse_version(self.version)
        try:  # (a member already is itself: not converted again)
            if type(self.permission) is not Permission:
                set_(self, "permission", Permission(self.permission))
            if type(self.trust) is not Trust:
                set_(self, "trust", Trust(self.trust))
            if type(self.isolation) is not Isolation:
                set_(self, "isolation", Isolation(self.isolation))
        except ValueError as exc:
            raise DefinitionError(f"tool {self.name!r}: {exc}") from exc
        set_(self, "tags", _check_tags(self.name, self.tags))
        _check_types(self)
        if self.cache_ttl is not None:
            set_(self, "cacheable", True)
        if self.rate_limit is not None:
            _check_rate_limit(self.name, self.rate_limit)
        if self.annotations is None:
            set_(self, "annotations", self._derived_annotations())
        if self.idempotent is None and self.annotations is not None:
            set_(self, "idempotent", bool(self.annotations.idempotent_hint))
        for name in ("input_schema", "output_schema", "metadata"):
            value = getattr(self, name)
            if value is not None:
                set_(self, name, _check_json(self.name, name, freeze(value)))
        set_(self, "examples", tuple(_check_json(self.name, "examples", freeze(e)) for e in self.examples))
        if type(self.alternatives) is not tuple or self.alternatives:  # () is checked already
            set_(self, "alternatives", check_alternatives(self.name, self.alternatives))

    def _derived_annotations(self) -> ToolAnnotations:
        key = (self.permission, self.trust is Trust.EXTERNAL or None)
        found = _DERIVED.get(key)  # frozen: one per permission and open-world hint, shared by the specs
        if found is None:
            found = _DERIVED[key] = ToolAnnotations.for_permission(self.permission, open_world=key[1])
        return found

    # -- identity ---------------------------------------------------------------------------
    @property
    def key(self) -> str:
        """``name@version``: the identity of this spec in a registry."""
        return f"{self.name}@{self.version}"

    @property
    def parsed_version(self) -> Version:
        """The version as a comparable :class:`packaging.version.Version`."""
        return parse_version(self.version)

    @property
    def read_only(self) -> bool:
        """True when the tool declares it changes nothing."""
        return self.permission is Permission.READONLY

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolSpec) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.name, self.version))

    def replace(self, **changes: Any) -> ToolSpec:
        """A copy with some fields changed (validated again).

        Annotations and ``idempotent`` that were derived from the permission (not given
        explicitly) are derived again when ``permission`` or ``trust`` changes.
        """
        derived = self.annotations == self._derived_annotations()
        if ("permission" in changes or "trust" in changes) and "annotations" not in changes and derived:
            changes["annotations"] = None
            if "idempotent" not in changes and self.idempotent == bool(
                    self.annotations and self.annotations.idempotent_hint):
                changes["idempotent"] = None
        return replace(self, **changes)

    # -- serialisation ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A plain-JSON dictionary of every field."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, StrEnum):
                value = value.value
            elif isinstance(value, frozenset):
                value = sorted(value)
            elif isinstance(value, Retry):
                value = value.to_dict()
            elif isinstance(value, ToolAnnotations):
                value = value.to_mcp()
            else:
                value = thaw(value)
            out[f.name] = value
        return out

    def to_json(self, **kwargs: Any) -> str:
        """``json.dumps(self.to_dict())``."""
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolSpec:
        """Rebuild a spec from :meth:`to_dict` output.

        Retry exception types are restored by qualified name from modules that are already
        imported (nothing is imported on behalf of the data); unknown names are dropped.
        """
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known}
        if isinstance(kwargs.get("annotations"), Mapping):
            kwargs["annotations"] = ToolAnnotations.from_mcp(kwargs["annotations"])
        if isinstance(kwargs.get("retry"), Mapping):
            retry = dict(kwargs["retry"])
            names = retry.pop("retry_on", None)
            if names is not None:
                retry["retry_on"] = _exception_types(names)
            kwargs["retry"] = Retry(**retry)
        return cls(**kwargs)


def _exception_types(names: Iterable[str]) -> tuple[type[BaseException], ...]:
    """Exception types by qualified name, from modules already imported (never imports any)."""
    out: list[type[BaseException]] = []
    for qualified in names:
        module_name, _, qualname = str(qualified).rpartition(".")
        obj: Any = sys.modules.get(module_name)
        for part in qualname.split(".") if obj is not None else ():
            obj = getattr(obj, part, None)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            out.append(obj)
    return tuple(out)


def _check_tags(name: str, tags: Iterable[str]) -> frozenset[str]:
    if isinstance(tags, str) or not all(isinstance(t, str) for t in tags):
        raise DefinitionError(f"tool {name!r}: tags must be a list of strings, e.g. tags=['weather']")
    return frozenset(tags)


def _positive_seconds(value: Any) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0)


def _check_types(spec: ToolSpec) -> None:
    where = f"tool {spec.name!r}"
    for key in ("timeout", "cache_ttl"):
        value = getattr(spec, key)
        if value is not None and not _positive_seconds(value):
            raise DefinitionError(
                f"{where}: {key} must be a positive, finite number of seconds (or None), got {value!r}")
    for key in ("requires_approval", "cacheable", "idempotent"):
        value = getattr(spec, key)
        if not isinstance(value, bool) and not (value is None and key == "idempotent"):
            raise DefinitionError(f"{where}: {key} must be True or False, got {value!r}")
    for key in ("description", "author", "deprecated", "rate_limit"):
        value = getattr(spec, key)
        if not isinstance(value, str) and not (value is None and key != "description"):
            raise DefinitionError(f"{where}: {key} must be a string, got {type(value).__name__}")
    if spec.retry is not None and not isinstance(spec.retry, Retry):
        raise DefinitionError(f"{where}: retry must be a RetryPolicy (now named toolrig.Retry), "
                              f"got {type(spec.retry).__name__}")
    if spec.annotations is not None and not isinstance(spec.annotations, ToolAnnotations):
        raise DefinitionError(f"{where}: annotations must be ToolAnnotations, got {type(spec.annotations).__name__}")


def _check_rate_limit(name: str, value: str) -> None:
    from limits import parse_many

    try:
        parse_many(value)
    except ValueError as exc:
        raise DefinitionError(
            f"tool {name!r}: rate_limit {value!r} is not in the limits syntax, e.g. '10/minute'"
        ) from exc

