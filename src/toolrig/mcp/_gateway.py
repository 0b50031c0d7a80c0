"""The gateway behind ``toolrig serve``: upstream MCP servers, Python tools and built-ins, one MCP server.

:class:`Gateway` assembles, from a :class:`~toolrig.mcp.GatewayConfig`:

* the upstream servers (``mcpServers``), each prefixed ``<server>__<tool>``; a stdio server is started only
  once a person approved its exact command (persisted, see :mod:`toolrig.mcp._pins`), in the OS sandbox
  with a minimal environment — never unsandboxed unless its entry says ``sandbox = false``
  (see :mod:`toolrig.mcp._gateway_launch`);
* the tools of Python modules and the built-in tools;
* review of every upstream tool (poisoning scan, pins) in a :class:`~toolrig.mcp.GatewayToolset`;
* a :class:`toolrig.Runtime` with the config's policy, approvals (asked through the MCP client when it
  can, else queued), state (Redis for replicas) and audit (SQLite or PostgreSQL);
* a :class:`~toolrig.mcp.ToolServer` offering all of it, with the upstream resources and prompts.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from toolrig import Policy
from toolrig.errors import MCPConfigError
from toolrig.mcp._approvers import ClientApprover
from toolrig.mcp._auth import BearerAuth, JWTVerifier, StaticTokens
from toolrig.mcp._config import MCPServers, from_config
from toolrig.mcp._core import policy_from_mapping
from toolrig.mcp._gateway_config import GatewayConfig
from toolrig.mcp._gateway_launch import LaunchAsker, LaunchPlan, SandboxState, launch_targets, plan_launch
from toolrig.mcp._gateway_toolset import GatewayToolset
from toolrig.mcp._pins import PinStore, open_pins
from toolrig.mcp._server import ToolServer
from toolrig.mcp._stages import served_stages
from toolrig.mcp._upstream import UpstreamContent
from toolrig.toolsets import FunctionToolset, Toolset

if TYPE_CHECKING:
    from toolrig.sandbox import Sandbox
    from toolrig.workflows import WorkflowTool

__all__ = ["Gateway", "LaunchAsker"]

log = logging.getLogger("toolrig.mcp.gateway")



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
    """

    def __init__(self, config: GatewayConfig, *, pins: PinStore | None = None, ask_launch: LaunchAsker | None = None,
                 approval: Any = None, errlog: Any = None, sandbox: Sandbox | None = None) -> None:
        from toolrig.runtime import Runtime

        self.config = config
        self.pins = pins or open_pins()
        self.sandbox = SandboxState(sandbox)
        self.launches: dict[str, LaunchPlan] = {}
        self.not_launched: dict[str, str] = {}
        self.upstreams = self._upstreams(ask_launch, errlog)
        scan, pins_section = config.scan, config.pins
        mode = pins_section.get("mode", "tofu")
        if mode not in ("tofu", "approve"):
            raise MCPConfigError(f"[pins] mode must be 'tofu' or 'approve', got {mode!r}")
        local = self._local()
        self.workflows = _workflow_tools(config, local)  # run on this gateway's runtime, bound below
        self.toolset = GatewayToolset(local=[*local, *([FunctionToolset(self.workflows)] if self.workflows else [])],
                                      upstreams=self.upstreams, pins=self.pins, pin_mode=mode,
                                      quarantine=bool(scan.get("quarantine", True)),
                                      allow_flagged=scan.get("allow", ()))
        self.content = UpstreamContent(self.upstreams)
        runtime = config.runtime
        stage_options: dict[str, Any] = {"audit": self._audit(), "audit_mode": runtime.get("audit_mode", "batched")}
        for key in ("timeout", "per_user_limit"):
            if key in runtime:
                stage_options[key] = runtime[key]
        self.policy = self._policy()  # its ALLOWED_TOOLS filters what the runtime (and so the server) offers
        # Upstream tools are unknown until their servers are connected: ALLOWED_TOOLS is checked then
        # (and after each change), and only warned about, since upstream servers come and go.
        self.toolset.on_open(self._check_allowed)
        self.toolset.on_change(self._check_allowed)
        self.runtime = Runtime(self.toolset, stages=served_stages(policy=True, **stage_options),
                               state=self._state(), state_failure=runtime.get("state_failure", "open"),
                               policy=self.policy.as_stage(),
                               approval=approval if approval is not None else self._approval())
        self.server = ToolServer(self.runtime, name=config.name, instructions=config.instructions,
                                 resources=self.content, prompts=self.content)
        for workflow in self.workflows:  # served workflows run their steps on this runtime
            workflow.bind(self.runtime)

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
        if not admitted:
            return None
        mcp = self.config.mcp
        options: dict[str, Any] = {"timeout": mcp.get("timeout", 60.0), "connect_timeout": mcp.get(
            "connect_timeout", 30.0), "errlog": errlog, "forward": True}
        if any(plan.start and plan.sandboxed for plan in self.launches.values()):
            options["sandbox"] = self.sandbox.sandbox
        return from_config({"mcpServers": admitted}, prefix=bool(mcp.get("prefix", True)), sep="__", **options)

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
            out.append(FunctionToolset(load_source(str(source) if source.exists() else module)))
        builtins = _builtin_tools(self.config.builtins, self.config)
        if builtins is not None:
            out.append(builtins)
        return out

    # -- pipeline --------------------------------------------------------------------------------------
    def _audit(self) -> Any:
        target = self.config.runtime.get("audit")
        if target is None or target is False or not isinstance(target, str) or "://" in target:
            return target
        return str(self.config.path(target))

    def _state(self) -> Any:
        from toolrig.state import make_state

        runtime = self.config.runtime
        return make_state(runtime.get("state", "memory"), prefix=str(runtime.get("state_prefix", "toolrig")))

    def _policy(self) -> Policy:
        """The config's policy; the tools of servers marked ``trusted`` are trusted by it too."""
        section = dict(self.config.policy or {})
        trusted = [f"{name}__*" for name, entry in self.config.servers.items() if entry.get("trusted")]
        if trusted:
            section["trusted"] = [*section.get("trusted", []), *trusted]
        if not section:
            return Policy(tools=self.toolset)
        policy: Policy = policy_from_mapping(section, tools=self.toolset)
        return policy

    def _check_allowed(self, toolset: GatewayToolset) -> None:
        """Warn about ``ALLOWED_TOOLS`` entries that match none of the tools offered now."""
        self.policy.check_tools(toolset, strict=False)

    def _approval(self) -> Any:
        from toolrig.policy import ApprovalQueue, TerminalApprover

        section = self.config.approvals
        backend = section.get("backend", "client")
        timeout = float(section.get("timeout", 300.0))
        queue = ApprovalQueue(section.get("queue"), timeout=timeout, tools=self.toolset)
        if backend == "client":
            return ClientApprover(fallback=queue, timeout=timeout)
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
        verifier: Any
        if "tokens" in section:
            verifier = StaticTokens(dict(section["tokens"]), audience=audience)
        elif "jwt_secret_env" in section:
            secret = os.environ.get(str(section["jwt_secret_env"]))
            if not secret:
                raise MCPConfigError(f"[serve.auth] jwt_secret_env: ${section['jwt_secret_env']} is not set")
            verifier = JWTVerifier(secret, audience=audience, issuer=section.get("issuer"),
                                   algorithms=section.get("algorithms", ["HS256"]))
        elif "jwt_public_key_file" in section:
            key = self.config.path(str(section["jwt_public_key_file"])).read_text()
            verifier = JWTVerifier(key, audience=audience, issuer=section.get("issuer"),
                                   algorithms=section.get("algorithms", ["RS256", "ES256"]))
        else:
            raise MCPConfigError("[serve.auth] needs tokens, jwt_secret_env or jwt_public_key_file")
        return BearerAuth(verifier=verifier, audience=audience, issuer=section.get("issuer"),
                          required_scopes=tuple(section.get("required_scopes", ())))

    # -- serving -------------------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        """What ``/healthz`` adds: upstream states and counts (no tool definitions, no secrets)."""
        return {"tools": len(self.toolset.list()), "blocked": len(self.toolset.blocked()),
                "upstreams": {s.name: s.health.state for s in self.toolset.servers()}}

    def run(self, *, transport: str, host: str, port: int, on_ready: Callable[[str], Any] | None = None) -> None:
        """:meth:`serve` until interrupted, in an event loop of its own (uvloop where installed)."""
        from toolrig.mcp._serve import run_blocking

        run_blocking(lambda: self.serve(transport=transport, host=host, port=port, on_ready=on_ready))

    async def serve(self, *, transport: str, host: str, port: int,
                    on_ready: Callable[[str], Any] | None = None) -> None:
        """Serve until cancelled."""
        from toolrig.mcp._serve import serve_async

        serve = self.config.serve
        http: dict[str, Any] = {}
        if transport == "http":
            http = {"path": serve.get("path", "/mcp"), "auth": self.auth(), "stateless": bool(serve.get("stateless")),
                    "allowed_hosts": tuple(serve.get("allowed_hosts", ())),
                    "allowed_origins": tuple(serve.get("allowed_origins", ())),
                    "json_response": bool(serve.get("json_response")), "health": self.health}
        await serve_async(server=self.server, transport=transport, host=host, port=port,  # type: ignore[arg-type]
                          on_ready=on_ready, **http)


def _workflow_tools(config: GatewayConfig, local: list[Toolset]) -> list[WorkflowTool]:
    """The workflows of ``[workflows]`` as tools (their permission and trust read from the local tools).

    Raises:
        MCPConfigError: a bad ``[workflows]`` table, a pattern matching no file, an invalid workflow file.
    """
    if not config.workflows:
        return []
    from pydantic import ValidationError

    from toolrig.errors import DefinitionError
    from toolrig.toolsets import CombinedToolset
    from toolrig.workflows import workflow_tools

    try:
        return workflow_tools(config.workflows, config.base, CombinedToolset(local, on_conflict="first"))
    except (DefinitionError, ValidationError) as exc:
        raise MCPConfigError(f"[workflows]: {' '.join(str(exc).split())}") from exc


def _builtin_tools(section: Mapping[str, Any] | None, config: GatewayConfig) -> Toolset | None:
    """The built-in tools of ``[builtins]`` (None: none), as :func:`toolrig.builtins.tools_from_config` builds them.

    ``root`` is resolved against the config file's folder (the current directory without a file).

    Raises:
        MCPConfigError: an unknown key or option, a wrong value, a root that is not a directory.
    """
    if section is None:
        return None
    from toolrig.builtins import tools_from_config
    from toolrig.errors import ConfigError, DefinitionError

    settings = {**section, "root": str(config.path(str(section.get("root", "."))))}
    try:
        return FunctionToolset(tools_from_config(settings))
    except (ConfigError, DefinitionError) as exc:
        raise MCPConfigError(f"[builtins]: {exc}") from exc
