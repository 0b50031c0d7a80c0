"""Which stdio servers ``toolrig serve`` starts, and how: asked first, and sandboxed unless the config says not.

Every stdio server of the config is launched in the OS sandbox unless its entry says ``sandbox = false``.
The sandbox is self-tested once, before the first launch; where it is not adequate (no bubblewrap, no
user namespaces, a failed check) no server that would need it is started — the gateway says so loudly
(an error on stderr, a warning in its startup report) and names the way out (``sandbox = false``, which
gives that server the host's full access, and is warned about at every start). A server is started only
after a person approved its exact command *and* its sandbox (an approval of the unsandboxed command
covers every sandbox).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import anyio

from toolrig.mcp.gateway._config import GatewayConfig
from toolrig.mcp.gateway._pins import PinStore
from toolrig.mcp.shared import LaunchSandbox, Target, parse_target

if TYPE_CHECKING:
    from toolrig.sandbox import Sandbox

__all__ = ["LaunchAsker", "LaunchPlan", "SandboxState", "launch_targets", "plan_launch"]

log = logging.getLogger("toolrig.mcp.gateway")

LaunchAsker = Callable[[str, Target], bool]
"""``(server name, target) -> approved``: asks a person whether to start a stdio server.

``target.describe_launch()`` is what to show: the exact command, and whether (and how) it is sandboxed
(``target.sandbox``: a :class:`~toolrig.mcp.LaunchSandbox`, or ``False`` for an unsandboxed server)."""

_OWN_KEYS = ("prefix", "timeout", "disabled", "description", "trusted")


def launch_targets(config: GatewayConfig) -> dict[str, Target]:
    """The enabled stdio servers of ``config``, each as the gateway launches it: sandboxed unless
    its entry says ``sandbox = false`` (``target.sandbox`` is then ``False``, else a :class:`LaunchSandbox`).

    Raises:
        MCPConfigError: a malformed entry.
    """
    out: dict[str, Target] = {}
    for name, entry in config.servers.items():
        if entry.get("disabled", False):
            continue
        target = parse_target({k: v for k, v in entry.items() if k not in _OWN_KEYS}, where=f"mcpServers.{name}")
        if target.kind == "stdio":
            out[name] = target if target.sandbox is not None else replace(target, sandbox=LaunchSandbox())
    return out


@dataclass
class SandboxState:
    """The gateway's sandbox, self-tested at most once (only when a server needs it)."""

    sandbox: Sandbox | None = None
    adequate: bool | None = None
    reason: str = ""
    backend: str = ""

    def check(self) -> bool:
        """Whether the sandbox is adequate here (tests it the first time)."""
        if self.adequate is None:
            self.adequate, self.reason, self.backend = _self_test(self._box())
            if not self.adequate:
                log.error("NO ADEQUATE SANDBOX on this machine: %s", self.reason)
        return self.adequate

    def _box(self) -> Sandbox:
        if self.sandbox is None:
            from toolrig.mcp.client import server_sandbox

            self.sandbox = server_sandbox()
        return self.sandbox

    def to_dict(self) -> dict[str, Any]:
        """For the startup report (``available`` is None when no server needed the sandbox)."""
        return {"available": self.adequate, "backend": self.backend or None, "reason": self.reason}


def _self_test(box: Sandbox) -> tuple[bool, str, str]:
    """Run ``box``'s self-test to its end from synchronous code (in a thread of its own; its result is cached)."""
    found: dict[str, Any] = {}

    def run() -> None:
        try:
            found["report"] = anyio.run(box.check)
        except Exception as exc:  # a crashed self-test is a failed one
            found["error"] = f"the sandbox self-test crashed: {type(exc).__name__}: {exc}"

    thread = threading.Thread(target=run, name="toolrig-sandbox-check")
    thread.start()
    thread.join()
    report = found.get("report")
    if report is None:
        return False, str(found.get("error", "the sandbox self-test gave no report")), ""
    if not report.passed:
        return False, report.reason(), report.backend
    if report.backend != "bubblewrap":
        return False, f"the {report.backend} backend cannot run a launched server; only bubblewrap can", report.backend
    return True, "", report.backend


@dataclass(frozen=True, kw_only=True)
class LaunchPlan:
    """What the gateway does with one stdio server: start it (sandboxed or not) or not, and why."""

    server: str
    target: Target
    start: bool
    reason: str = ""

    @property
    def sandboxed(self) -> bool:
        return isinstance(self.target.sandbox, LaunchSandbox)


def plan_launch(name: str, target: Target, *, sandbox: SandboxState, pins: PinStore,
                ask: LaunchAsker | None, by: str | None) -> LaunchPlan:
    """Decide about one stdio server (``target`` from :func:`launch_targets`); asks a person when needed."""
    settings = target.sandbox if isinstance(target.sandbox, LaunchSandbox) else None
    if settings is not None and not sandbox.check():
        log.error("NOT STARTING MCP server %s: it must run in the sandbox, and there is no adequate sandbox here "
                  "(%s). To run it anyway with your full access to this machine, set sandbox = false in its "
                  "config entry.", name, sandbox.reason)
        return LaunchPlan(server=name, target=target, start=False,
                          reason=f"no adequate sandbox here ({sandbox.reason}); set sandbox = false to run it "
                                 "unsandboxed")
    if not pins.launch_approved(target.argv, target.cwd, target.env, sandbox=settings):
        if ask is None or not ask(name, target):
            log.warning("not starting MCP server %s: its command was never approved: %s", name, target.describe())
            return LaunchPlan(server=name, target=target, start=False, reason="its command was never approved")
        pins.approve_launch(target.argv, target.cwd, target.env, by=by, sandbox=settings)
    if settings is None:
        log.warning("MCP server %s runs UNSANDBOXED (sandbox = false in its config): it has your full access to "
                    "this machine: %s", name, target.describe())
    return LaunchPlan(server=name, target=target, start=True)
