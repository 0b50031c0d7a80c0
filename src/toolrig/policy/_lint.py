"""``policy.lint()``: rules that can never match, and rules shadowed by another rule."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Literal, Protocol

from toolrig.policy._layers import Layer
from toolrig.policy._rules import Rule, ToolsetResolver
from toolrig.policy._toolsets import tool_names
from toolrig.toolsets import Toolset

__all__ = ["LintFinding", "lint_policy"]

_STRENGTH = {"allow": 0, "ask": 1, "deny": 2}
_GLOB = frozenset("*?[")


@dataclass(frozen=True, kw_only=True)
class LintFinding:
    """One problem in a policy.

    Attributes:
        kind: ``"never-matches"`` or ``"shadowed"``.
        layer: the layer holding the rule.
        verdict: the list the rule is in (``"allow"``, ``"ask"``, ``"deny"``).
        rule: the rule text.
        message: what is wrong, in one sentence.
    """

    kind: Literal["never-matches", "shadowed"]
    layer: str
    verdict: str
    rule: str
    message: str

    def to_dict(self) -> dict[str, str]:
        """JSON-ready form."""
        return {"kind": self.kind, "layer": self.layer, "verdict": self.verdict, "rule": self.rule,
                "message": self.message}


@dataclass(frozen=True)
class _Entry:
    layer: Layer
    verdict: str
    rule: Rule
    names: frozenset[str] | None  # tools the name part matches (None: no toolset to check against)


class Linted(Protocol):
    """What linting reads of a policy (a :class:`~toolrig.Policy` has it)."""

    @property
    def layers(self) -> tuple[Layer, ...]: ...
    def toolset_resolver(self, toolset: Toolset | None = None) -> ToolsetResolver: ...


def lint_policy(policy: Linted, tools: Toolset | None) -> list[LintFinding]:
    """Every finding for ``policy``; ``tools`` (a Registry / Toolset) enables the "unknown tool" checks."""
    toolsets = policy.toolset_resolver(tools)
    known = tool_names(tools) if tools is not None else None
    entries = [_Entry(layer, verdict, rule, _names(rule, known, toolsets))
               for layer in policy.layers for verdict in ("deny", "ask", "allow") for rule in layer.rules(verdict)]
    findings: list[LintFinding] = []
    for e in entries:
        problem = _never(e, tools, toolsets)
        if problem:
            findings.append(LintFinding(kind="never-matches", layer=e.layer.name, verdict=e.verdict,
                                        rule=e.rule.text, message=problem))
    never = {(f.layer, f.verdict, f.rule) for f in findings}
    for i, e in enumerate(entries):
        if (e.layer.name, e.verdict, e.rule.text) in never:
            continue
        for j, other in enumerate(entries):
            if i == j or not _shadows(other, e, earlier=j < i):
                continue
            findings.append(LintFinding(
                kind="shadowed", layer=e.layer.name, verdict=e.verdict, rule=e.rule.text,
                message=f"{e.verdict} {e.rule.text!r} never takes effect: {other.verdict} {other.rule.text!r} "
                        f"of layer {other.layer.name!r} covers every call it matches"))
            break
    return findings


def _names(rule: Rule, known: list[str] | None, toolsets: ToolsetResolver) -> frozenset[str] | None:
    if known is None or rule.content is not None:  # content tools are not listed: nothing to check against
        return None
    return frozenset(n for n in known if rule.matches_name(n, toolsets))


def _never(e: _Entry, tools: Toolset | None, toolsets: ToolsetResolver) -> str | None:
    rule = e.rule
    if rule.toolset is not None and toolsets(rule.toolset) is None:
        return f"there is no toolset {rule.toolset!r}"
    if e.names is None or tools is None:
        return None
    if not e.names:
        what = "tool" if not rule.is_glob and rule.toolset is None else "tool matching it"
        return f"there is no {what} {rule.tool!r}" if rule.toolset is None else f"toolset {rule.toolset!r} is empty"
    if rule.version is not None:
        versions = {t.spec.version for t in tools.list() if t.spec.name in e.names}
        if rule.version not in versions:
            return f"no matching tool has version {rule.version!r}"
    if rule.arguments:
        for name in e.names:
            tool = tools.get(name)
            props = tool.spec.input_schema.get("properties", {}) if tool is not None else {}
            if set(rule.arguments) <= set(props):
                return None
        return f"no matching tool has the argument(s) {', '.join(sorted(rule.arguments))}"
    return None


def _layer_covers(wide: Layer, narrow: Layer) -> bool:
    """``wide`` applies to every call ``narrow`` applies to."""
    return all(getattr(wide, s) is None or getattr(wide, s) == getattr(narrow, s) for s in ("agent", "role", "user"))


def _shadows(other: _Entry, e: _Entry, *, earlier: bool) -> bool:
    strength, mine = _STRENGTH[other.verdict], _STRENGTH[e.verdict]
    if strength < mine or (strength == mine and not earlier):
        return False
    if not _layer_covers(other.layer, e.layer):
        return False
    return _rule_covers(other, e)


def _rule_covers(wide: _Entry, narrow: _Entry) -> bool:
    w, n = wide.rule, narrow.rule
    if wide.names is not None and narrow.names is not None:
        if not narrow.names <= wide.names:
            return False
    elif not (w.tool in (n.tool, "*") or (n.toolset is None and not n.is_glob and w.toolset is None
                                          and fnmatch.fnmatchcase(n.tool, w.tool))):
        return False
    if w.version is not None and w.version != n.version:
        return False
    if w.exact_arguments is not None:
        return w.exact_arguments == n.exact_arguments
    return all(key in n.arguments and _glob_covers(glob, n.arguments[key]) for key, glob in w.arguments.items())


def _glob_covers(wide: str, narrow: str) -> bool:
    if wide in (narrow, "*"):
        return True
    prefix = wide[:-1]
    return wide.endswith("*") and not any(c in _GLOB for c in prefix) and narrow.startswith(prefix)
