"""Permission presets, and the permission level a policy may believe a tool has."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from toolrig._spec import Permission, ToolSpec, Trust
from toolrig.runtime import Verdict

__all__ = ["PRESETS", "effective_permission"]

_A, _Q = Verdict.ALLOW, Verdict.ASK
_R, _W, _D, _S = Permission.READONLY, Permission.WRITE, Permission.DESTRUCTIVE, Permission.SYSTEM

PRESETS: Mapping[str, Mapping[Permission, Verdict]] = MappingProxyType({
    "strict": MappingProxyType({_R: _A, _W: _Q, _D: _Q, _S: _Q}),
    "default": MappingProxyType({_R: _A, _W: _A, _D: _Q, _S: _Q}),
    "permissive": MappingProxyType({_R: _A, _W: _A, _D: _A, _S: _Q}),
})
"""Verdict per permission level when no rule matches: ``strict`` allows only readonly tools without
asking; ``default`` allows readonly and write, asks for destructive and system; ``permissive`` allows
all but system."""

_ORDER = (_R, _W, _D, _S)


def _higher(a: Permission, b: Permission) -> Permission:
    return a if _ORDER.index(a) >= _ORDER.index(b) else b


def effective_permission(spec: ToolSpec, *, trusted: bool) -> tuple[Permission, str]:
    """The permission the presets use for ``spec``, and why it differs from the declared one (or "").

    Annotations may raise the level (``destructiveHint``, ``readOnlyHint=false``), never lower it.
    A tool from an untrusted source (``trust="external"``, e.g. an MCP server) describes itself:
    neither its permission nor its annotations can put it below ``destructive`` — the MCP default for
    a tool with no trusted annotations — unless the policy lists it as ``trusted``.
    """
    level = spec.permission
    why = ""
    ann = spec.annotations
    if ann is not None:
        if ann.read_only_hint is False and level is _R:
            level, why = _W, "its annotations say it is not read-only"
        if ann.destructive_hint and ann.read_only_hint is not True and _higher(level, _D) is not level:
            level, why = _D, "its annotations say it is destructive"
    if spec.trust is Trust.EXTERNAL and not trusted and _higher(level, _D) is not level:
        level = _D
        why = (f"it comes from an untrusted source (trust=external), so its declared "
               f"{spec.permission.value!r} level and annotations are not believed")
    return level, why
