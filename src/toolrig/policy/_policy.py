"""The :class:`Policy`: presets plus layered allow / ask / deny rules; returns decisions, never raises."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from toolrig._calls import ToolCall
from toolrig._context import EMPTY_CONTEXT, CallContext
from toolrig._spec import Permission, ToolSpec
from toolrig.policy._allowed import check_allowed_names, in_ci, read_allowed_tools, warn_unrestricted
from toolrig.policy._explain import Explanation
from toolrig.policy._layers import KIND_ORDER, Layer
from toolrig.policy._presets import PRESETS, effective_permission
from toolrig.policy._rules import PolicyConfigError, Rule, ToolsetResolver, exact_rule, parse_rule
from toolrig.policy._shapes import name_lists, rule_list
from toolrig.runtime import Verdict
from toolrig.toolsets import FunctionToolset, Toolset

if TYPE_CHECKING:
    from toolrig.policy._lint import LintFinding
    from toolrig.policy._stage import PolicyStage

__all__ = ["ENV", "Policy"]

log = logging.getLogger("toolrig.policy")

ENV: Any = object()
"""Default of ``Policy(allowed_tools=...)``: read the ``ALLOWED_TOOLS`` environment variable."""

_VERDICTS = (("deny", Verdict.DENY), ("ask", Verdict.ASK), ("allow", Verdict.ALLOW))


def _allowlist(values: Any) -> tuple[Rule, ...]:
    rules = rule_list(values, "allowed_tools")
    if not rules:
        raise PolicyConfigError("allowed_tools is empty: that would allow no tool at all; pass None for no "
                                "allowlist, or deny=['*'] to refuse every tool")
    return rules


def _as_toolset(tools: Toolset | Iterable[Any] | None) -> Toolset | None:
    if tools is None or isinstance(tools, Toolset):
        return tools
    return FunctionToolset(list(tools))


class Policy:
    """Who may call what: a permission preset plus layered rules (global → agent → role → user).

    Rules of every layer that applies to the call are collected; when they disagree deny wins
    over ask wins over allow. When no rule matches, the preset decides from the tool's permission
    level. Later, more specific layers refine earlier ones by adding rules for their scope: a user
    layer can allow what the preset would ask, or ask / deny what a broader layer allows — but it
    cannot undo a broader deny.

    Args:
        preset: ``"strict"``, ``"default"`` or ``"permissive"`` (see :data:`PRESETS`).
        allow, ask, deny: global rules (strings such as ``"read_*"``, ``"toolset:files"`` (or ``"group:files"``),
            ``'shell(command="git *")'``, or :class:`Rule` objects).
        layers: :class:`Layer` objects or mappings ``{agent?, role? (or group?), user?, allow?, ask?, deny?}``.
        owners: rule -> user(s): only those users may call matching tools (also ``spec.metadata["owner"]``).
        toolsets: toolset name -> tool names or globs, for ``toolset:NAME`` (else the registry's named toolsets).
        groups: the same as ``toolsets`` (its older name); give one or the other.
        trusted: rules naming external tools whose declared permission and annotations are believed.
        allowed_tools: an allowlist of rules; default :data:`ENV` reads ``ALLOWED_TOOLS``; None: no allowlist;
            an empty list is an error (it would allow nothing).
        tools: a Registry or Toolset used by :meth:`explain` and :meth:`lint` to look tools up.

    Wherever a list of rules or names is expected, a single string is one entry (never one per character).

    Raises:
        PolicyConfigError: unknown preset, a rule that does not parse, a setting of the wrong shape, or an
            empty allowlist (``ALLOWED_TOOLS`` set but empty, or ``allowed_tools=[]``).
    """

    def __init__(self, preset: str = "default", *, allow: str | Iterable[str | Rule] = (),
                 ask: str | Iterable[str | Rule] = (), deny: str | Iterable[str | Rule] = (),
                 layers: Iterable[Layer | Mapping[str, Any]] = (),
                 owners: Mapping[str, str | Iterable[str]] | None = None,
                 toolsets: Mapping[str, str | Iterable[str]] | None = None,
                 trusted: str | Iterable[str | Rule] = (), allowed_tools: str | Iterable[str | Rule] | None = ENV,
                 tools: Toolset | Iterable[Any] | None = None,
                 groups: Mapping[str, str | Iterable[str]] | None = None) -> None:
        if preset not in PRESETS:
            raise PolicyConfigError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
        self.preset = preset
        given = [Layer(name="global", allow=rule_list(allow, "allow"), ask=rule_list(ask, "ask"),
                       deny=rule_list(deny, "deny"))]
        if isinstance(layers, str | Mapping | Layer):
            raise PolicyConfigError("layers must be a list of layers (Layer objects or mappings)")
        for i, layer in enumerate(layers):
            given.append(layer if isinstance(layer, Layer) else Layer.from_mapping(layer, i))
        self.layers: tuple[Layer, ...] = tuple(sorted(given, key=lambda la: KIND_ORDER.index(la.kind)))
        self.owners: tuple[tuple[Rule, frozenset[str]], ...] = tuple(
            (parse_rule(k), frozenset(v)) for k, v in name_lists(owners, "owners").items())
        if toolsets is not None and groups is not None:
            raise PolicyConfigError("give toolsets= or groups= (the same thing), not both")
        self.toolsets = (name_lists(toolsets, "toolsets") if toolsets is not None else name_lists(groups, "groups"))
        self.trusted = rule_list(trusted, "trusted")
        self.allowed_tools: tuple[Rule, ...] | None = (
            read_allowed_tools() if allowed_tools is ENV else None if allowed_tools is None
            else _allowlist(allowed_tools))
        self.unrestricted = allowed_tools is ENV and self.allowed_tools is None
        """``ALLOWED_TOOLS`` was read and is unset (warned once per process when the policy starts deciding)."""
        self.tools = _as_toolset(tools)
        self._remembered: list[Layer] = []
        self._lock = threading.Lock()

    # -- deciding -------------------------------------------------------------------------------
    def evaluate(self, name: str, arguments: Mapping[str, Any] | None, context: CallContext | None = None, *,
                 spec: ToolSpec | None = None, toolset: Toolset | None = None) -> Explanation:
        """Decide one call. Never raises: an error inside a rule denies the call and says why."""
        try:
            return self._evaluate(name, dict(arguments or {}), context or EMPTY_CONTEXT, spec,
                                  toolset if toolset is not None else self.tools)
        except Exception as exc:
            log.exception("policy evaluation failed for %s", name)
            return Explanation.of(Verdict.DENY, layer="policy-error", rule=None, tool=name,
                                  reason=f"the policy could not evaluate this call ({type(exc).__name__}), "
                                         "so it is denied")

    def explain(self, call: ToolCall, context: CallContext | None = None, *,
                tool: Any = None) -> Explanation:
        """Which decision a call gets, from which layer and rule, and why.

        ``tool`` (a tool or a ToolSpec) defaults to the one named by the call in ``tools``.
        """
        spec = getattr(tool, "spec", tool)
        if spec is None and self.tools is not None:
            found = self.tools.get(call.name)
            spec = found.spec if found is not None else None
        arguments = call.arguments if isinstance(call.arguments, Mapping) else {}
        return self.evaluate(call.name, arguments, context, spec=spec)

    def _evaluate(self, name: str, arguments: dict[str, Any], context: CallContext, spec: ToolSpec | None,
                  toolset: Toolset | None) -> Explanation:
        toolsets = self.toolset_resolver(toolset)
        version = spec.version if spec is not None else None
        if self.allowed_tools is not None and not any(r.admits(name, arguments, toolsets) for r in self.allowed_tools):
            return Explanation.of(Verdict.DENY, layer="ALLOWED_TOOLS", rule=None, tool=name,
                                  reason=f"{name} is not in ALLOWED_TOOLS")
        owner = self._owner_check(name, context, spec, toolsets)
        if owner is not None:
            return owner
        best: Explanation | None = None
        for layer in (*self.layers, *self._remembered_for(context)):
            if not layer.applies(context):
                continue
            for kind, verdict in _VERDICTS:
                if best is not None and verdict <= best.verdict:
                    break
                for rule in layer.rules(kind):
                    if rule.matches(name, version, arguments, toolsets, restrictive=verdict is not Verdict.ALLOW):
                        best = Explanation.of(verdict, layer=layer.name, rule=rule.text, tool=name,
                                              reason=f"rule {kind} {rule.text!r} of layer {layer.name!r}")
                        break
        return best if best is not None else self._preset(name, spec, toolsets)

    def _owner_check(self, name: str, context: CallContext, spec: ToolSpec | None,
                     toolsets: ToolsetResolver) -> Explanation | None:
        owners: set[str] = set()
        for rule, users in self.owners:
            if rule.matches_name(name, toolsets):
                owners |= users
        meta = spec.metadata.get("owner") if spec is not None else None
        if isinstance(meta, str):
            owners.add(meta)
        elif isinstance(meta, list | tuple):
            owners.update(str(m) for m in meta)
        if owners and context.user not in owners:
            who = context.user or "an anonymous caller"
            return Explanation.of(Verdict.DENY, layer="owner", rule=None, tool=name,
                                  reason=f"{name} is owner-only and {who} is not its owner")
        return None

    def _preset(self, name: str, spec: ToolSpec | None, toolsets: ToolsetResolver) -> Explanation:
        if spec is None:
            return Explanation.of(PRESETS[self.preset][Permission.SYSTEM], layer="preset", rule=None, tool=name,
                                  reason=f"preset {self.preset!r}: {name} is unknown, so it is treated as a "
                                         "system tool")
        trusted = any(r.matches_name(name, toolsets) for r in self.trusted)
        level, why = effective_permission(spec, trusted=trusted)
        verdict = PRESETS[self.preset][level]
        reason = f"preset {self.preset!r}: {name} is a {level.value} tool"
        if why:
            reason += f" ({why})"
        if spec.requires_approval and verdict is Verdict.ALLOW:
            verdict, reason = Verdict.ASK, f"{reason}; it requires approval"
        return Explanation.of(verdict, layer="preset", rule=None, tool=name, reason=reason)

    def toolset_resolver(self, toolset: Toolset | None = None) -> ToolsetResolver:
        """``toolset name -> tool names``: the policy's ``toolsets``, else the registry's named toolsets."""
        from toolrig.policy._toolsets import make_toolset_resolver

        return make_toolset_resolver(self.toolsets, toolset if toolset is not None else self.tools)

    # -- remembering ------------------------------------------------------------------------------
    def remember(self, name: str, version: str | None, arguments: Mapping[str, Any],
                 context: CallContext | None = None) -> Rule:
        """Allow this exact call again: same tool, version and arguments, for the same user and agent.

        The rule is no wider than the approval it records: a call without a user (or agent) is
        remembered for calls without one, never for everyone. It is kept by this policy object only.
        """
        ctx = context or EMPTY_CONTEXT
        rule = exact_rule(name, version, arguments)
        layer = Layer(name=f"remembered:{ctx.user or '-'}:{ctx.agent or '-'}", user=ctx.user, agent=ctx.agent,
                      allow=(rule,), kind_override="remembered")
        with self._lock:
            self._remembered.append(layer)
        return rule

    def _remembered_for(self, context: CallContext) -> tuple[Layer, ...]:
        """Remembered layers of exactly this user and agent (a layer's None selector means "none", not "any")."""
        return tuple(la for la in self.remembered() if (la.user, la.agent) == (context.user, context.agent))

    def remembered(self) -> tuple[Layer, ...]:
        """Layers created by :meth:`remember`, oldest first."""
        with self._lock:
            return tuple(self._remembered)

    # -- tools, lint, runtime -----------------------------------------------------------------------
    def offers(self, name: str, toolset: Toolset | None = None, *, arguments: Mapping[str, Any] | None = None) -> bool:
        """False when ``ALLOWED_TOOLS`` leaves ``name`` out: every call would be denied, so do not list it.

        With ``arguments`` (a resource's URI, a prompt's name: what a content tool is called with), the
        allowlist's ``resource(...)`` / ``prompt(...)`` rules are matched against them too.
        """
        if self.allowed_tools is None:
            return True
        toolsets = self.toolset_resolver(toolset)
        if arguments is None:
            return any(r.matches_name(name, toolsets) for r in self.allowed_tools)
        return any(r.admits(name, arguments, toolsets) for r in self.allowed_tools)

    def check_tools(self, toolset: Toolset, *, strict: bool | None = None) -> list[str]:
        """Check ``ALLOWED_TOOLS`` against ``toolset``; returns the entries that match no tool.

        Unknown entries raise when ``strict`` (default: under CI, see :func:`in_ci`), else are warned about.
        """
        if self.allowed_tools is None:
            return []
        known = [t.spec.name for t in toolset.list()]
        known += [name for part in toolset.walk() for name in part.routed_names(toolset)]  # behind call_tool
        return check_allowed_names(self.allowed_tools, known, self.toolset_resolver(toolset),
                                   ci=in_ci() if strict is None else strict)

    def lint(self, tools: Toolset | None = None) -> list[LintFinding]:
        """Rules that can never match (unknown tools, toolsets, arguments) or are shadowed by another rule."""
        from toolrig.policy._lint import lint_policy

        return lint_policy(self, tools if tools is not None else self.tools)

    def as_stage(self, toolset: Toolset | None = None) -> PolicyStage:
        """The runtime stage applying this policy (``Runtime(policy=...)`` calls this)."""
        from toolrig.policy._stage import PolicyStage

        if toolset is not None:
            self.check_tools(toolset)
        self.warn_if_unrestricted()
        return PolicyStage(self)

    def warn_if_unrestricted(self) -> None:
        """Warn (once per process) that ``ALLOWED_TOOLS`` is unset, when this policy read it: done when the policy
        starts deciding calls (:meth:`as_stage`), not when it is only built to explain or to list."""
        if self.unrestricted:
            warn_unrestricted()

    def __repr__(self) -> str:
        return f"Policy(preset={self.preset!r}, layers={[la.name for la in self.layers]})"
