"""Helpers for the gateway tests: hostile upstreams, a served gateway, waiting without sleeps."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp_helpers import HERE, PYTHON

from toolrig.mcp import Gateway, open_pins, parse_target
from toolrig.mcp.gateway._config import config_from_mapping

HOSTILE = HERE / "hostile_server.py"


def hostile(name: str, *, log: Path | None = None, control: str | None = None, spec_file: Path | None = None,
            **spec: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry for the hostile server answering as ``name`` with ``spec`` (tools, resources, ...).

    ``control`` renames its configuring tool; ``spec_file`` is read again at every tool listing; ``log`` receives
    what it was asked.
    """
    env = {"HOSTILE_SPEC": json.dumps({"name": name, **spec})}
    entry: dict[str, Any] = {"command": PYTHON, "args": [str(HOSTILE)], "env": env}
    if control is not None:
        env["HOSTILE_CONTROL"] = control
    if spec_file is not None:
        env["HOSTILE_SPEC_FILE"] = str(spec_file)
        entry["sandbox"] = {"ro_paths": [str(spec_file.parent)]}
    if log is not None:
        env["HOSTILE_LOG"] = str(log)
        entry["sandbox"] = {"rw_paths": [str(log.parent)]}
    return entry


def approve_all(pins: Any, servers: dict[str, Any]) -> None:
    """What ``toolrig mcp approve-launch --yes`` records, done directly for the test's commands."""
    for entry in servers.values():
        if "command" in entry:
            target = parse_target(entry)
            pins.approve_launch(target.argv, target.cwd, target.env)


def build(tmp_path: Path, servers: dict[str, Any], **sections: Any) -> Gateway:
    """A gateway over ``servers`` (launches approved, pins in ``tmp_path/mcp.db``); ``policy=None``: the default."""
    pins = open_pins(tmp_path / "mcp.db")
    approve_all(pins, servers)
    data = {"name": "test-gateway", "mcpServers": servers, "runtime": {"audit": False},
            "policy": {"allow": ["*"], "allowed_tools": None}, **sections}
    if data["policy"] is None:
        del data["policy"]
    return Gateway(config_from_mapping(data, base=tmp_path), pins=pins)


@asynccontextmanager
async def serving(gateway: Gateway) -> AsyncIterator[str]:
    """Serve ``gateway`` over streamable HTTP on a free loopback port; yields its URL."""
    ready: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: gateway.serve(transport="http", host="127.0.0.1", port=0, on_ready=ready.append))
        with anyio.fail_after(90):
            while not ready:
                await anyio.sleep(0.02)
        yield ready[0]
        tg.cancel_scope.cancel()


@asynccontextmanager
async def gateway(tmp_path: Path, servers: dict[str, Any], **sections: Any) -> AsyncIterator[tuple[str, Gateway]]:
    """:func:`build` and :func:`serving` in one."""
    built = build(tmp_path, servers, **sections)
    async with serving(built) as url:
        yield url, built


async def eventually(predicate: Any, timeout: float = 30.0) -> None:
    """Wait (bounded) until ``predicate()`` is true."""
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.02)


def answer(result: Any) -> dict[str, Any]:
    """The hostile server's ``{"server", "tool"}`` answer inside a (fenced) tool result."""
    text = result.text if hasattr(result, "text") else str(result)
    start, end = text.index("{"), text.rindex("}") + 1
    return dict(json.loads(text[start:end]))
