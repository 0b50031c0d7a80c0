"""``isolation="sandbox"``: each call runs the tool's body in a fresh sandbox, replies come back as data.

The sandboxed worker imports the tool by reference (module + qualified name), so the tool must
live at module level in a module importable from the host's ``sys.path``; those entries are
bound read-only into the sandbox (never ``/`` or a home directory itself). Values and context
travel as JSON and are validated again inside; the worker answers with JSON data only, and the
host never unpickles anything a sandbox sends. Context values with no JSON form are left out.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic_core import to_jsonable_python

from toolrig import BaseTool, CallContext, FunctionTool
from toolrig.errors import CallTimeoutError, ExecutorUnavailable, ProcessIsolationError, SandboxError, WorkerDiedError
from toolrig.guards import AsyncResolver, Resolver, URLRules
from toolrig.runtime import RemoteResult
from toolrig.sandbox._backend import Backend, RawRun
from toolrig.sandbox._egress import EGRESS_KEY, ENV_KEY, PATHS_KEY, EgressProxy
from toolrig.sandbox._protocol import decode_reply, exception_from_data, result_from_data
from toolrig.sandbox._sandbox import Sandbox

__all__ = ["SandboxExecutor", "default_python_path"]

log = logging.getLogger("toolrig.sandbox")

_WORKER_PATH = "/run/toolrig/worker.py"
_WORKER = Path(__file__).with_name("_toolworker.py")
_NEVER_BOUND = ("/", "/proc", "/sys", "/dev", "/run", "/tmp", "/work")
_NEVER_PASSED = frozenset({"PATH", "HOME", "LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONHOME", "TOOLRIG_REPLY",
                           "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"})


def default_python_path() -> tuple[str, ...]:
    """The host's ``sys.path`` entries a sandboxed worker may see (existing, absolute, not ``/`` or a home)."""
    home = os.path.realpath(os.path.expanduser("~"))
    out: list[str] = []
    for entry in sys.path:
        if not entry or not os.path.isabs(entry) or not os.path.exists(entry):
            continue
        real = os.path.realpath(entry)
        if real in _NEVER_BOUND or real == home or real.startswith(("/proc/", "/sys/", "/dev/")):
            continue
        if real not in out:
            out.append(real)
    return tuple(out)


def _egress_hosts(tool: BaseTool) -> list[str] | None:
    """The hosts ``tool`` may reach through the egress proxy, or None when it declares none."""
    hosts = tool.spec.metadata.get(EGRESS_KEY)
    if hosts is None:
        return None
    if isinstance(hosts, str) or not all(isinstance(h, str) for h in hosts):
        raise ProcessIsolationError(f"tool {tool.name!r}: metadata[{EGRESS_KEY!r}] must be a list of host names")
    return [str(h) for h in hosts]


def _passed_env(tool: BaseTool) -> dict[str, str] | None:
    """The host variables ``tool`` declares it reads (``metadata["toolrig.env"]``), with their host values."""
    names = tool.spec.metadata.get(ENV_KEY)
    if not names:
        return None
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise ProcessIsolationError(f"tool {tool.name!r}: metadata[{ENV_KEY!r}] must be a list of variable names")
    return {n: os.environ[n] for n in names if n in os.environ and n not in _NEVER_PASSED}


def _host_paths(tool: BaseTool) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    """``(root, read, write)`` of ``metadata["toolrig.paths"]``: existing absolute folders inside the root (paths
    that do not exist yet are left out: bubblewrap binds only what exists)."""
    paths = tool.spec.metadata.get(PATHS_KEY)
    if not paths:
        return None, (), ()
    root = os.path.realpath(str(paths.get("root", "")))
    if not os.path.isabs(str(paths.get("root", ""))) or root in _NEVER_BOUND or not os.path.isdir(root):
        raise ProcessIsolationError(f"tool {tool.name!r}: metadata[{PATHS_KEY!r}] needs an existing absolute root "
                                    f"that is not a system folder")

    def inside(values: Any) -> tuple[str, ...]:
        out = []
        for value in values or ():
            real = os.path.realpath(str(value))
            if real != root and not real.startswith(root.rstrip("/") + "/"):
                raise ProcessIsolationError(f"tool {tool.name!r}: {value} is outside its root {root}")
            if os.path.exists(real):
                out.append(real)
        return tuple(out)

    read, write = inside(paths.get("read")), inside(paths.get("write"))
    return (root if read or write else None), read, write


def _reference(tool: BaseTool) -> dict[str, str]:
    target: Any = tool.fn if isinstance(tool, FunctionTool) else type(tool)
    if isinstance(tool, FunctionTool) and getattr(target, "__self__", None) is not None:
        raise ProcessIsolationError(f"tool {tool.name!r} cannot run in a sandbox: a bound method has no reference")
    module, qualname = getattr(target, "__module__", None), getattr(target, "__qualname__", "")
    if not module or module == "__main__" or "<" in qualname:
        raise ProcessIsolationError(
            f"tool {tool.name!r} cannot run in a sandbox: it must be defined at module level in an importable "
            f"module (it is {module}.{qualname})")
    return {"module": module, "qualname": qualname}


def _jsonable(mapping: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            continue
        out[str(key)] = value
    return out


def _context(ctx: CallContext) -> dict[str, Any]:
    return {"user": ctx.user, "agent": ctx.agent, "session": ctx.session, "call_id": ctx.call_id,
            "tool_name": ctx.tool_name, "tool_version": ctx.tool_version, "approved": ctx.approved,
            "roles": sorted(ctx.roles), "state": _jsonable(ctx.state),
            "metadata": _jsonable(ctx.metadata)}


class SandboxExecutor:
    """Runs tool bodies in sandboxes (``isolation="sandbox"``); refuses where no adequate sandbox exists.

    A tool whose ``spec.metadata["toolrig.egress"]`` lists hosts (a tool package's declared network) runs with
    no network but a proxy that reaches only those hosts, through the URL guard
    (:class:`~toolrig.sandbox.EgressProxy`); without that key it has the sandbox's network (none by default).
    ``spec.metadata["toolrig.env"]`` names host variables copied into its environment (never ``PATH``, ``HOME``,
    loader or proxy variables); ``spec.metadata["toolrig.paths"]`` binds folders of a root read-only / read-write
    and starts the tool in that root.

    Args:
        sandbox: the sandbox (default: ``Sandbox()``, self-tested before the first call); its
            limits apply to every call, its timeout unless the runtime gives one.
        python_path: host directories the worker imports from (default: :func:`default_python_path`).
        egress_rules: the URL guard's rules for allow-listed hosts (default: public addresses, ports 80 and 443).
        egress_resolver: how the egress proxy resolves names (default: the system's).
    """

    name = "sandbox"

    def __init__(self, sandbox: Sandbox | None = None, *, python_path: Sequence[str | Path] | None = None,
                 egress_rules: URLRules | None = None, egress_resolver: Resolver | AsyncResolver | None = None) -> None:
        self.sandbox = sandbox or Sandbox()
        self.python_path = (tuple(os.path.realpath(p) for p in python_path) if python_path is not None
                            else default_python_path())
        self.egress_rules = egress_rules
        self.egress_resolver = egress_resolver
        self._calls = self._running = 0
        self._closed = False

    async def execute(self, tool: BaseTool, values: Mapping[str, Any], context: CallContext, *,
                      timeout: float | None, meta: dict[str, Any] | None = None) -> Any:
        """Run ``tool`` on ``values`` in a fresh sandbox; its result as a :class:`~toolrig.runtime.RemoteResult`.

        Raises:
            SandboxUnavailable: no adequate sandbox here (the body never ran).
            CallTimeoutError: ``timeout`` passed; everything the call started was killed.
            WorkerDiedError: the sandboxed worker died before answering (crash, memory, CPU limit).
            Exception: what the body raised, rebuilt from known classes only (else ``RemoteToolError``).
        """
        if self._closed:
            raise ExecutorUnavailable("this sandbox executor is closed")
        backend = await self.sandbox.backend()
        hosts = _egress_hosts(tool)
        self._calls += 1
        self._running += 1
        try:
            if hosts is None:
                raw = await self._run(backend, tool, values, context, timeout, egress=None)
            else:
                proxy = EgressProxy(hosts, rules=self.egress_rules, resolver=self.egress_resolver)
                async with proxy.serving() as folder:
                    raw = await self._run(backend, tool, values, context, timeout, egress=folder)
                if meta is not None:
                    meta.update({"egress_allowed": sorted(set(proxy.allowed)),
                                 "egress_denied": sorted(set(proxy.denied))})
        finally:
            self._running -= 1
        limits = self.sandbox.limits if timeout is None else self.sandbox.limits.with_changes(timeout=timeout)
        result = raw.result
        if meta is not None:
            meta.update({"sandbox_backend": result.backend, "sandbox_seconds": round(result.duration, 4)})
        if result.timed_out:
            raise CallTimeoutError(tool.name, limits.timeout, "its sandbox was killed")
        if result.killed:
            raise SandboxError(f"{tool.name} was killed by its sandbox: {result.describe()}")
        if raw.reply is None:
            log.warning("sandboxed worker of %s died; its stderr: %s", tool.name, result.error_text[-2000:])
            code = result.exit_code if result.exit_code is not None else -9
            raise WorkerDiedError(-(code - 128) if code > 128 else code)
        message = decode_reply(raw.reply)
        if message["kind"] == "ok":
            return RemoteResult(result_from_data(message.get("result")))
        if message["kind"] == "error":
            raise exception_from_data(message.get("error"))
        kind = str(message["kind"])[:40]
        raise ProcessIsolationError(f"the sandboxed worker sent a message of unknown kind {kind!r}")

    async def _run(self, backend: Backend, tool: BaseTool, values: Mapping[str, Any], context: CallContext,
                   timeout: float | None, *, egress: str | None) -> RawRun:
        message: dict[str, Any] = {"tool": _reference(tool), "values": to_jsonable_python(dict(values), fallback=str),
                                   "context": _context(context), "path": list(self.python_path)}
        if egress is not None:
            message["egress"] = {"socket": f"{egress}/egress.sock"}
        python, prefix = backend.python()
        limits = self.sandbox.limits if timeout is None else self.sandbox.limits.with_changes(timeout=timeout)
        root, read, write = _host_paths(tool)
        spec = self.sandbox._spec((python, "-I", "-S", "-u", _WORKER_PATH), stdin=json.dumps(message).encode(),
                                  cwd=root, env=_passed_env(tool), timeout=None, limits=limits,
                                  files={_WORKER_PATH: _WORKER.read_bytes()}, want_reply=True,
                                  ro_paths=(*prefix, *self.sandbox.ro_paths, *self.python_path,
                                            *([egress] if egress else []), *read))
        if write:
            spec = replace(spec, rw_paths=write)
        if egress is not None:
            spec = replace(spec, network=False)
        return await backend.run(spec)

    def stats(self) -> dict[str, Any]:
        """Calls so far and calls running now."""
        return {"calls": self._calls, "running": self._running}

    async def aclose(self) -> None:
        """Refuse further calls (each call's sandbox is already gone when it returns)."""
        self._closed = True
