"""Launched stdio servers in the OS sandbox: which sandbox a server gets, and the command that starts it there.

A server runs sandboxed when its toolset was given a sandbox (``MCPToolset(..., sandbox=True | Sandbox(...))``,
the gateway's default) or its config entry asks (``"sandbox": true`` or a table). Then each connection
starts :meth:`toolrig.sandbox.Sandbox.wrap`'s command instead of the bare one: the server sees what it
needs to start, read-only, its ``ro_paths``, writes only its ``rw_paths`` and a private ``/work``, and has no
network unless its entry says ``network = true``. No adequate sandbox: the connection fails with
:class:`~toolrig.sandbox.SandboxUnavailable` (the server never runs unsandboxed by accident).
"""

from __future__ import annotations

import logging
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolrig import DefinitionError
from toolrig.mcp.shared import LaunchSandbox, Target

if TYPE_CHECKING:
    from toolrig.sandbox import Sandbox, SandboxLimits, WrappedCommand

__all__ = ["resolve_sandbox", "server_limits", "server_sandbox", "wrap_server"]

log = logging.getLogger("toolrig.mcp")

_MIB = 1 << 20
_FETCHERS = frozenset({"npx", "npm", "pnpm", "pnpx", "yarn", "bunx", "uvx", "pipx"})


def server_limits() -> SandboxLimits:
    """The limits of a sandboxed server by default: room for Node (which needs over 1 GiB of address space)."""
    from toolrig.sandbox import SandboxLimits

    return SandboxLimits(memory=4096 * _MIB, pids=256, open_files=1024, file_size=256 * _MIB, disk=512 * _MIB)


def server_sandbox() -> Sandbox:
    """A bubblewrap sandbox with :func:`server_limits` (self-tested on first use)."""
    from toolrig.sandbox import Sandbox

    return Sandbox(backend="bubblewrap", limits=server_limits())


def resolve_sandbox(target: Target, sandbox: Any) -> tuple[Target, Sandbox | None]:
    """The target (its ``sandbox`` settled) and the sandbox its server runs in, from ``MCPToolset(sandbox=...)``.

    ``sandbox`` None leaves it to the target (its entry's ``sandbox``); True or a
    :class:`~toolrig.sandbox.Sandbox` sandboxes it, False does not.

    Raises:
        DefinitionError: a sandbox for a network server, a value of another type, or a conflict with the entry.
    """
    if sandbox is None:
        if not isinstance(target.sandbox, LaunchSandbox):
            return target, None
        return target, server_sandbox()
    if sandbox is False:
        if isinstance(target.sandbox, LaunchSandbox):
            raise DefinitionError(f"sandbox=False, but the entry of {target.describe()} asks for a sandbox")
        return target, None
    if target.kind != "stdio":
        raise DefinitionError(f"sandbox= applies to servers toolrig launches; {target.describe()} is a "
                              f"{target.kind} server")
    from dataclasses import replace

    from toolrig.sandbox import Sandbox

    if sandbox is not True and not isinstance(sandbox, Sandbox):
        raise DefinitionError(f"sandbox must be True, False, None or a toolrig.sandbox.Sandbox, not {sandbox!r}")
    if target.sandbox is False:
        raise DefinitionError(f"a sandbox was given, but the entry of {target.describe()} says sandbox = false")
    settled = replace(target, sandbox=target.sandbox or LaunchSandbox())
    return settled, server_sandbox() if sandbox is True else sandbox


async def wrap_server(target: Target, sandbox: Sandbox, *, name: str = "") -> WrappedCommand:
    """The sandboxed command that starts ``target``'s server (one per connection; close it afterwards).

    Raises:
        SandboxUnavailable: no adequate sandbox here; nothing was started.
        SandboxError: the server's executable is not on the host.
        ConfigError: its working directory or a bound path does not exist.
    """
    options = target.sandbox if isinstance(target.sandbox, LaunchSandbox) else LaunchSandbox()
    network = options.network or sandbox.network
    if Path(target.command or "").name in _FETCHERS and not network:
        log.warning("MCP server %s: %s fetches its package at start, which in a sandbox without network fails; "
                    "install the package and launch its script, or set network = true in its sandbox table",
                    name or target.describe(), target.command)
    wrapped = await sandbox.wrap(target.argv, env=target.env, cwd=target.cwd, ro_paths=options.ro_paths,
                                 rw_paths=options.rw_paths, network=network)
    log.info("starting MCP server %s in the sandbox (%s): %s; reads %s; writes %s; network: %s",
             name or target.describe(), wrapped.backend, shlex.join(wrapped.command),
             ", ".join(wrapped.ro_paths) or "only the system", ", ".join(wrapped.rw_paths) or "only /work and /tmp",
             "the host's" if wrapped.network else "none")
    return wrapped
