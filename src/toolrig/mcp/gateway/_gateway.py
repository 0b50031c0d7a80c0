"""The gateway behind ``toolrig serve``: upstream MCP servers, Python tools and built-ins, one MCP server.

:class:`Gateway` assembles, from a :class:`~toolrig.mcp.GatewayConfig`:

* the upstream servers (``mcpServers``), each prefixed ``<server>__<tool>`` (server names that could make one
  name twice are refused at start); a stdio server is started only
  once a person approved its exact command (persisted, see :mod:`toolrig.mcp.gateway._pins`), in the OS sandbox
  with a minimal environment — never unsandboxed unless its entry says ``sandbox = false``
  (see :mod:`toolrig.mcp.gateway._launch`);
* the tools of Python modules and the built-in tools;
* review of every upstream tool, resource, template and prompt (collisions, poisoning scan, pins) in a
  :class:`~toolrig.mcp.GatewayToolset`;
* a :class:`toolrig.Runtime` with the config's policy, approvals (asked through the MCP client when it
  can, else queued), state (Redis for replicas) and audit (SQLite or PostgreSQL);
* a :class:`~toolrig.mcp.ForwardGate` for the upstreams' sampling and elicitation requests (per server
  ``forward_sampling`` / ``forward_elicitation``: deny, ask — the default — or allow; labelled, audited);
* a :class:`~toolrig.mcp.ToolServer` offering all of it, with the upstream resources and prompts, each read and
  get a call through that Runtime (:mod:`toolrig.mcp.gateway._upstream`).
"""

from __future__ import annotations

import gc
import logging
import os
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from toolrig import Policy, ToolCall, ToolOutcome, current_context
from toolrig.errors import LoadError, MCPConfigError
from toolrig.mcp.client import ForwardGate, MCPServers, from_config, gate_from_config, server_namespaces
from toolrig.mcp.gateway._config import GatewayConfig
from toolrig.mcp.gateway._launch import LaunchAsker, LaunchPlan, SandboxState, launch_targets, plan_launch
from toolrig.mcp.gateway._local import builtin_root, builtin_tools, workflow_tools_of
from toolrig.mcp.gateway._pins import PinStore, open_pins
from toolrig.mcp.gateway._toolset import GatewayToolset
from toolrig.mcp.gateway._upstream import UpstreamContent
from toolrig.mcp.server import (
    BearerAuth,
    ClientApprover,
    JWTVerifier,
    StaticTokens,
    ToolServer,
    check_agent_layers,
    served_stages,
)
from toolrig.mcp.shared import SEP, policy_from_mapping
from toolrig.policy import PolicyStage
from toolrig.runtime import AuditStage
from toolrig.toolsets import FunctionToolset, Toolset

if TYPE_CHECKING:
    from toolrig.sandbox import Sandbox

__all__ = ["Gateway", "LaunchAsker"]

log = logging.getLogger("toolrig.mcp.gateway")

SERVING_GC_THRESHOLD = 5000
"""Allocations between two young-generation collections of a serving gateway process (Python's default: 700)."""


def _settle_heap() -> None:
    """Once serving: the heap built at start (modules, schemas, the upstream tools) leaves the garbage collector's
    view, and young collections run less often.

    A forwarded call allocates a few hundred container objects that mostly die with it; with the default
    thresholds the collector ran a young collection every two calls or so and, every few hundred calls, a full
    one over the ~140,000 objects of the start (about 90 ms each): about 440 µs per call in all on the bench's
    gateway (``bench/README.md``, issue 24). Frozen, the start's objects are never traversed again (nothing
    there is garbage: a collection runs first); cycles made while serving are still collected. What the start made and a
    later change drops (tools replaced after ``tools/list_changed``) is freed by reference counting as before; only
    such objects caught in reference cycles stay, at most once each.
    """
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(SERVING_GC_THRESHOLD, middle, old)



class Gateway:
    """Everything ``toolrig serve`` runs (see the module docstring).

    Args:
        config: the validated config.
        pins: the pin / launch-approval store (default: :func:`~toolrig.mcp.open_pins`).
        ask_launch: asked before an unapproved stdio server is started (None: not started, reported).
        approval: the approval handler (default: from ``[approvals]``).
        errlog: where stdio servers' stderr goes.
        sandbox: the sandbox stdio servers run in (default: bubblewrap with room for Node, self-tested before
            the first launch).

    Attributes:
        launches: what was decided for each stdio server (started or not, sandboxed or not, why).
        not_launched: ``server -> command`` of the stdio servers not started.
        sandbox: the sandbox's state (``available`` None when no server needed it).
        root: where the built-in tools work (:func:`builtin_root`; None when none of them uses a folder).
    """

    def __init__(self, config: GatewayConfig, *, pins: PinStore | None = None, ask_launch: LaunchAsker | None = None,
                 approval: Any = None, errlog: Any = None, sandbox: Sandbox | None = None) -> None:
        from toolrig.runtime import Runtime

        self.config = config
        self.root = builtin_root(config.builtins, config)  # first: a refused root stops everything
        self.pins = pins or open_pins()
        self.sandbox = SandboxState(sandbox)
        self.launches: dict[str, LaunchPlan] = {}
        self.not_launched: dict[str, str] = {}
        try:
            self.forward_gate: ForwardGate = gate_from_config(config.forwarding, config.mcp)
        except ValueError as exc:
            raise MCPConfigError(str(exc)) from None
        self.upstreams = self._upstreams(ask_launch, errlog)
        scan, pins_section = config.scan, config.pins
        mode = pins_section.get("mode", "tofu")
        if mode not in ("tofu", "approve"):
            raise MCPConfigError(f"[pins] mode must be 'tofu' or 'approve', got {mode!r}")
        local = self._local()
        self.workflows = workflow_tools_of(config, local)  # run on this gateway's runtime, bound below
        self.toolset = GatewayToolset(local=[*local, *([FunctionToolset(self.workflows)] if self.workflows else [])],
                                      upstreams=self.upstreams, pins=self.pins, pin_mode=mode,
                                      quarantine=bool(scan.get("quarantine", True)),
                                      allow_flagged=scan.get("allow", ()))
        self.content: UpstreamContent = self.toolset.content
        runtime = config.runtime
        stage_options: dict[str, Any] = {"audit": False}
        for key in ("timeout", "per_user_limit"):
            if key in runtime:
                stage_options[key] = runtime[key]
        audit = self._audit_stage()
        self.policy = self._policy()  # its ALLOWED_TOOLS filters what the runtime (and so the server) offers
        if self.policy.allowed_tools is not None:  # resources and prompts outside ALLOWED_TOOLS are not listed
            self.content.offered = self._offers_content
        # Upstream tools are unknown until their servers are connected: ALLOWED_TOOLS is checked then
        # (and after each change), and only warned about, since upstream servers come and go.
        self.toolset.on_open(self._check_allowed)
        self.toolset.on_change(self._check_allowed)
        self._check_agents(self.auth() if any(la.agent for la in self.policy.layers) else None)
        approval = approval if approval is not None else self._approval()
        stages = served_stages(policy=True, **stage_options)
        self.runtime = Runtime(self.toolset, stages=stages if audit is None else [audit, *stages],
                               state=self._state(), state_failure=runtime.get("state_failure", "open"),
                               policy=PolicyStage(self.policy), approval=approval)
        self.content.runner = self._run_content
        self.forward_gate.attach(approval=approval, audit=audit,
                                 approval_timeout=float(config.approvals.get("timeout", 300.0)))
        self.server = ToolServer(self.runtime, name=config.name, instructions=config.instructions,
                                 resources=self.content, prompts=self.content)
        for workflow in self.workflows:  # served workflows run their steps on this runtime
            workflow.bind(self.runtime)

    def _offers_content(self, name: str, arguments: Mapping[str, Any]) -> bool:
        return bool(self.policy.offers(name, self.toolset, arguments=arguments))

    async def _run_content(self, call: ToolCall) -> ToolOutcome:
        outcome: ToolOutcome = await self.runtime.call(call, current_context())
        return outcome

    # -- upstream servers ----------------------------------------------------------------------------
    def _upstreams(self, ask: LaunchAsker | None, errlog: Any) -> MCPServers | None:
        servers = {n: e for n, e in self.config.servers.items() if not e.get("disabled", False)}
        stdio = launch_targets(self.config)
        admitted: dict[str, dict[str, Any]] = {}
        for name, entry in servers.items():
            if name in stdio:
                plan = plan_launch(name, stdio[name], sandbox=self.sandbox, pins=self.pins, ask=ask,
                                   by=os.environ.get("USER"))
                self.launches[name] = plan
                if not plan.start:
                    self.not_launched[name] = plan.target.describe()
                    continue
            admitted[name] = self._resolved(entry)
            if self._named_trusted(name):  # its annotations read; the policy believes them for the named tools
                admitted[name]["trusted"] = True
        if not admitted:
            return None
        mcp = self.config.mcp
        options: dict[str, Any] = {"timeout": mcp.get("timeout", 60.0), "connect_timeout": mcp.get(
            "connect_timeout", 30.0), "errlog": errlog, "forward": self.forward_gate}
        if any(plan.start and plan.sandboxed for plan in self.launches.values()):
            options["sandbox"] = self.sandbox.sandbox
        return from_config({"mcpServers": admitted}, prefix=bool(mcp.get("prefix", True)), **options)

    def _named_trusted(self, server: str) -> bool:
        """Whether a ``[policy] trusted`` rule may name a tool of ``server`` (``time__*``, ``time__get_*``, ``*``).

        Such a server's tools take their permission from their annotations, as for ``trusted = true`` in its
        entry; the policy still treats every tool its ``trusted`` rules do not name as ``destructive``
        (:func:`toolrig.policy.effective_permission`), so this over-approximation trusts no other tool.
        """
        from toolrig.policy import parse_rule

        rules = [parse_rule(str(r)) for r in (self.config.policy or {}).get("trusted", ())]
        if not bool(self.config.mcp.get("prefix", True)) or self.config.servers[server].get("prefix") is not None:
            return bool(rules)  # names without this server's prefix: any rule may name its tools
        head = f"{server}__"
        for rule in rules:
            if rule.toolset is not None:
                return True
            literal = re.split(r"[*?\[]", rule.tool, maxsplit=1)[0]
            if head.startswith(literal) if len(literal) < len(head) else literal.startswith(head):
                return True
        return False

    def _resolved(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        """``entry`` with its paths (``cwd``, the sandbox's ``ro_paths`` / ``rw_paths``) relative to the config file."""
        out = dict(entry)
        if entry.get("cwd"):
            out["cwd"] = str(self.config.path(entry["cwd"]))
        box = entry.get("sandbox")
        if isinstance(box, Mapping):
            out["sandbox"] = {**box, **{key: [str(self.config.path(p)) for p in box[key]]
                                        for key in ("ro_paths", "rw_paths") if isinstance(box.get(key), list)}}
        return out

    # -- local tools ---------------------------------------------------------------------------------
    def _local(self) -> list[Toolset]:
        from toolrig.loading import load_source

        out: list[Toolset] = []
        modules = self.config.tools.get("modules", [])
        if isinstance(modules, str) or not isinstance(modules, list):
            raise MCPConfigError("[tools] modules must be a list of files, directories or module names")
        for module in modules:
            source = self.config.path(module)
            try:
                out.append(FunctionToolset(load_source(str(source) if source.exists() else module)))
            except LoadError as exc:  # a typo in a path or module name: the setting is named, no traceback
                where = "--tools or [tools] modules"
                raise MCPConfigError(f"cannot serve the tools of {module!r} ({where}): {exc}") from exc
        builtins = builtin_tools(self.config.builtins, self.config, self.root)
        if builtins is not None:
            out.append(builtins)
        return out

    # -- pipeline --------------------------------------------------------------------------------------
    def _audit(self) -> Any:
        target = self.config.runtime.get("audit")
        if target is None or target is False or not isinstance(target, str) or "://" in target:
            return target
        return str(self.config.path(target))

    def _audit_stage(self) -> AuditStage | None:
        """The audit stage of ``[runtime] audit`` / ``audit_mode`` and ``[audit]`` (None: audit is off)."""
        target = self._audit()
        if target is False:
            return None
        section = self.config.audit
        journal = section.get("journal")
        try:
            return AuditStage(target, mode=self.config.runtime.get("audit_mode", "batched"),
                              on_failure=section.get("on_failure", "refuse"),
                              journal=None if journal is None else str(self.config.path(journal)))
        except ValueError as exc:
            raise MCPConfigError(f"[audit]: {exc}") from exc

    def _state(self) -> Any:
        from toolrig.state import make_state

        runtime = self.config.runtime
        return make_state(runtime.get("state", "memory"), prefix=str(runtime.get("state_prefix", "toolrig")))

    def _policy(self) -> Policy:
        """The config's policy; the tools of servers marked ``trusted`` are trusted by it too."""
        section = dict(self.config.policy or {})
        spaces = server_namespaces(self.config.servers, prefix=bool(self.config.mcp.get("prefix", True)))
        trusted = [f"{spaces[name]}{SEP}*" for name, entry in self.config.servers.items()
                   if entry.get("trusted") and name in spaces]
        if trusted:
            section["trusted"] = [*section.get("trusted", []), *trusted]
        if not section:
            return Policy(tools=self.toolset)
        policy: Policy = policy_from_mapping(section, tools=self.toolset)
        return policy

    def _check_agents(self, auth: BearerAuth | None) -> None:
        """Refuse agent layers for unauthenticated callers (agents never come from a client's own name); warn when
        no credential names an agent."""
        try:
            check_agent_layers(self.policy.layers, auth, where=f"{self.config.source}: [policy]")
        except ValueError as exc:
            raise MCPConfigError(str(exc)) from None

    def _check_allowed(self, toolset: GatewayToolset) -> None:
        """Warn about ``ALLOWED_TOOLS`` entries that match none of the tools offered now."""
        self.policy.check_tools(toolset, strict=False)

    def _approval(self) -> Any:
        from toolrig.policy import ApprovalQueue, TerminalApprover

        section = self.config.approvals
        backend = section.get("backend", "client")
        timeout = float(section.get("timeout", 300.0))
        location = section.get("queue")
        if isinstance(location, str) and "://" not in location:  # a file: beside the config, like the audit log
            location = str(self.config.path(location))
        queue = ApprovalQueue(location, timeout=timeout, tools=self.toolset)
        if backend == "client":
            return ClientApprover(fallback=queue, timeout=timeout, tools=self.toolset)
        if backend == "queue":
            return queue
        if backend == "terminal":
            return TerminalApprover(timeout=timeout, tools=self.toolset)
        if backend == "deny":
            return None
        raise MCPConfigError(f"[approvals] backend must be client, queue, terminal or deny, got {backend!r}")

    def auth(self) -> BearerAuth | None:
        """The bearer auth of ``[serve.auth]``, if configured."""
        section = self.config.serve.get("auth")
        if not section:
            return None
        audience = str(section["audience"])
        try:
            verifier = self._verifier(section, audience)
        except (TypeError, ValueError) as exc:
            raise MCPConfigError(f"[serve.auth]: {exc}") from None
        return BearerAuth(verifier=verifier, audience=audience, issuer=section.get("issuer"),
                          required_scopes=tuple(section.get("required_scopes", ())))

    def _verifier(self, section: Mapping[str, Any], audience: str) -> StaticTokens | JWTVerifier:
        if "tokens" in section:
            return StaticTokens(dict(section["tokens"]), audience=audience)
        if "jwt_secret_env" in section:
            secret = os.environ.get(str(section["jwt_secret_env"]))
            if not secret:
                raise MCPConfigError(f"[serve.auth] jwt_secret_env: ${section['jwt_secret_env']} is not set")
            return JWTVerifier(secret, audience=audience, issuer=section.get("issuer"),
                               algorithms=section.get("algorithms", ["HS256"]), agent_claim=section.get("agent_claim"))
        if "jwt_public_key_file" in section:
            key = self.config.path(str(section["jwt_public_key_file"])).read_text()
            return JWTVerifier(key, audience=audience, issuer=section.get("issuer"),
                               algorithms=section.get("algorithms", ["RS256", "ES256"]),
                               agent_claim=section.get("agent_claim"))
        raise MCPConfigError("[serve.auth] needs tokens, jwt_secret_env or jwt_public_key_file")

    # -- serving -------------------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        """What ``/healthz`` adds: upstream states and counts (no tool definitions, no secrets).

        The server adds ``status`` (``ok``, ``degraded`` while the audit log cannot be written, ``stopping``)
        and the audit log's state (see :func:`toolrig.mcp.serve_async`).
        """
        return {"tools": len(self.runtime.tools()), "blocked": len(self.toolset.blocked()),
                "upstreams": {s.name: s.health.state for s in self.toolset.servers()}}

    def run(self, *, transport: str, host: str, port: int, on_ready: Callable[[str], Any] | None = None
            ) -> int | None:
        """:meth:`serve` in an event loop of its own (uvloop where installed) until SIGINT / SIGTERM, which drain it.

        Returns:
            The signal that stopped it (None: the stdio client went away).
        """
        from toolrig.mcp.server import run_blocking

        previous = gc.get_threshold()
        settled = False

        def ready(url: str) -> None:
            nonlocal settled
            settled = True
            _settle_heap()
            if on_ready is not None:
                on_ready(url)

        try:
            stopped_by: int | None = run_blocking(lambda: self.serve(transport=transport, host=host, port=port,
                                                                     on_ready=ready, stop_signals=True))
        finally:
            if settled:  # as it was: this process may go on (tests, an embedding application)
                gc.unfreeze()
                gc.set_threshold(*previous)
        return stopped_by

    async def serve(self, *, transport: str, host: str, port: int, on_ready: Callable[[str], Any] | None = None,
                    stop_signals: bool = False) -> int | None:
        """Serve until cancelled (or, with ``stop_signals``, SIGINT / SIGTERM); drains first (``[serve]
        shutdown_grace``) and returns the signal that stopped it."""
        from toolrig.mcp.server import serve_async

        self.policy.warn_if_unrestricted()  # now calls will be decided (not for scan or a listing)
        serve = self.config.serve
        http: dict[str, Any] = {}
        if transport != "http":
            self._check_agents(None)  # over stdio nobody presents a credential
        if transport == "http":
            http = {"path": serve.get("path", "/mcp"), "auth": self.auth(), "stateless": bool(serve.get("stateless")),
                    "allowed_hosts": tuple(serve.get("allowed_hosts", ())),
                    "allowed_origins": tuple(serve.get("allowed_origins", ())),
                    "json_response": bool(serve.get("json_response")), "health": self.health,
                    "idle_timeout": float(serve.get("session_idle_timeout", 1800.0)),
                    "max_sessions": int(serve.get("max_sessions", 10_000)), "openapi": bool(serve.get("openapi"))}
        return await serve_async(server=self.server, transport=transport,  # type: ignore[arg-type]
                                 host=host, port=port, on_ready=on_ready, stop_signals=stop_signals,
                                 shutdown_grace=float(serve.get("shutdown_grace", 10.0)), **http)
