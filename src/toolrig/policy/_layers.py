"""Policy layers: rule sets that apply to a scope — global, an agent, a role, a user.

A role layer applies when the role is one of ``context.roles``. In mappings ``group`` is accepted
for ``role`` (the same: a group of users).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolrig._context import CallContext
from toolrig.policy._rules import PolicyConfigError, Rule
from toolrig.policy._shapes import rule_list

__all__ = ["KIND_ORDER", "Layer"]

KIND_ORDER = ("global", "agent", "role", "user", "remembered")
"""Layers are consulted in this order; later, more specific layers refine earlier ones."""


@dataclass(frozen=True, kw_only=True)
class Layer:
    """Rules for one scope. A layer applies to a call when every selector it sets matches the context:
    ``agent`` equals ``context.agent``, ``role`` is one of ``context.roles``, ``user`` equals ``context.user``.

    Rule lists accept strings (parsed on construction) or :class:`Rule` objects.
    """

    name: str
    agent: str | None = None
    role: str | None = None
    user: str | None = None
    allow: Sequence[str | Rule] = ()
    ask: Sequence[str | Rule] = ()
    deny: Sequence[str | Rule] = ()
    kind_override: str | None = None

    def __post_init__(self) -> None:
        for attr in ("allow", "ask", "deny"):
            object.__setattr__(self, attr, rule_list(getattr(self, attr), f"layer {self.name!r}: {attr}"))

    def rules(self, verdict: str) -> tuple[Rule, ...]:
        """The parsed rules of one list: ``"allow"``, ``"ask"`` or ``"deny"``."""
        return tuple(r for r in getattr(self, verdict) if isinstance(r, Rule))

    @property
    def kind(self) -> str:
        """``user``, ``role``, ``agent`` or ``global``: the most specific selector set."""
        if self.kind_override is not None:
            return self.kind_override
        return "user" if self.user else "role" if self.role else "agent" if self.agent else "global"

    def applies(self, context: CallContext) -> bool:
        """Does this layer apply to a call made in ``context``?"""
        return ((self.agent is None or self.agent == context.agent)
                and (self.role is None or self.role in context.roles)
                and (self.user is None or self.user == context.user))

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], index: int = 0) -> Layer:
        """A layer from config: ``{name?, agent?, role? (or group?), user?, allow?, ask?, deny?}``."""
        if not isinstance(data, Mapping):
            raise PolicyConfigError(f"layer {index}: must be a mapping, got {type(data).__name__}")
        if "group" in data:  # the same selector under its other name
            if "role" in data:
                raise PolicyConfigError("a layer names both 'role' and 'group' (the same thing): keep one")
            data = {("role" if k == "group" else k): v for k, v in data.items()}
        unknown = set(data) - {"name", "agent", "role", "user", "allow", "ask", "deny"}
        if unknown:
            raise PolicyConfigError(f"layer {index}: unknown keys {sorted(unknown)}")
        selectors = {k: data.get(k) for k in ("agent", "role", "user")}
        for key, value in (*selectors.items(), ("name", data.get("name"))):
            if value is not None and not isinstance(value, str):
                raise PolicyConfigError(f"layer {index}: {key} must be a string, got {type(value).__name__}")
        name = data.get("name") or next((f"{k}:{v}" for k, v in reversed(selectors.items()) if v), f"layer{index}")
        return cls(name=name, **selectors, allow=data.get("allow", ()), ask=data.get("ask", ()),
                   deny=data.get("deny", ()))
