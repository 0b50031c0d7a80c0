"""to_openapi documents validate; ``toolrig serve --openapi`` serves the same tools over plain HTTP with the same
pipeline (policy, validation, audit) and auth; from_openapi on the served document calls them back."""

from __future__ import annotations

import enum
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from openapi_helpers import PETSTORE, free_port
from pydantic import BaseModel

import toolrig
from toolrig import Policy, Runtime, ToolCall
from toolrig.audit import AuditLog
from toolrig.openapi import afrom_openapi, from_openapi, to_openapi, validate_openapi

pytestmark = pytest.mark.anyio
REPO = Path(__file__).resolve().parents[2]


class Size(enum.Enum):
    S = "small"
    L = "large"


class Box(BaseModel):
    width: int
    label: str | None = None


@toolrig.tool(permission="readonly")
def add(a: int, b: int = 2) -> int:
    """Add two numbers."""
    return a + b


@toolrig.tool(tags=["shop"])
def pack(boxes: list[Box], size: Size, speed: Literal["slow", "fast"] = "slow", note: str | int | None = None) -> str:
    """Pack boxes.

    Args:
        boxes: what to pack
        size: the parcel size
        speed: how fast
        note: a remark
    """
    return f"{len(boxes)} {size.value} {speed} {note}"


@toolrig.tool(permission="destructive")
def wipe(target: str) -> str:
    """Wipe something."""
    return "wiped"


def test_to_openapi_output_validates() -> None:
    doc = to_openapi([add, pack, wipe], title="shop", version="2.1.0", server_url="https://tools.example",
                     description="Shop tools", bearer=True)
    validate_openapi(doc)
    operation = doc["paths"]["/tools/pack"]["post"]
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    assert body["properties"]["boxes"]["items"] == {"$ref": "#/components/schemas/pack.Box"}
    assert doc["components"]["schemas"]["pack.Size"]["enum"] == ["small", "large"]
    assert operation["x-toolrig"]["permission"] == "write" and operation["tags"] == ["shop"]
    assert doc["paths"]["/tools/add"]["post"]["x-readonly"] is True
    assert doc["security"] == [{"bearer": []}]
    petstore_tools = from_openapi(PETSTORE, base_url="https://petstore3.example/api/v3")
    validate_openapi(to_openapi(petstore_tools, title="petstore again", version="1"))


def test_the_documented_schema_comes_back_as_the_tool_schema() -> None:
    back = from_openapi(to_openapi([add, pack], server_url="https://tools.example"))
    assert back.get("add").spec.input_schema == add.spec.input_schema  # type: ignore[union-attr]
    packed = back.get("pack").spec  # type: ignore[union-attr]
    assert packed.input_schema["properties"]["boxes"]["items"] == {"$ref": "#/$defs/pack.Box"}
    assert packed.input_schema["required"] == ["boxes", "size"]
    assert back.get("add").spec.permission.value == "readonly"  # type: ignore[union-attr]


AUDIENCE = "http://127.0.0.1/mcp"


@asynccontextmanager
async def served(tools: Any, **options: Any) -> AsyncIterator[str]:
    """Serve over HTTP on a free loopback port in this event loop; yield the base URL."""
    import anyio

    from toolrig.mcp import serve_async

    ready: list[str] = []
    listening = anyio.Event()

    def on_ready(url: str) -> None:
        ready.append(url)
        listening.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_async(tools, transport="http", port=0, on_ready=on_ready, **options))
        with anyio.fail_after(30):
            await listening.wait()
        yield ready[0].removesuffix("/mcp")
        tg.cancel_scope.cancel()


def auth() -> Any:
    from toolrig.mcp import BearerAuth, StaticTokens

    return BearerAuth(verifier=StaticTokens({"tok-ann": {"user": "ann", "agent": "bot"}}, audience=AUDIENCE),
                      audience=AUDIENCE)


async def test_serve_openapi_runs_the_pipeline_with_auth(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    policy = Policy(deny=["wipe"], allowed_tools=None)
    async with served([add, pack, wipe], openapi=True, auth=auth(), audit=db, audit_mode="strict",
                      policy=policy) as base:
        good = {"Authorization": "Bearer tok-ann"}
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            assert (await http.post("/tools/add", json={"a": 1})).status_code == 401
            assert (await http.get("/openapi.json")).status_code == 401
            assert (await http.post("/tools/add", json={"a": 1},
                                    headers={"Authorization": "Bearer wrong"})).status_code == 401
            ok = await http.post("/tools/add", json={"a": "40"}, headers=good)
            bad = await http.post("/tools/add", json={"a": "many"}, headers=good)
            broken = await http.post("/tools/add", content=b"{not json", headers=good)
            missing = await http.post("/tools/nope", json={}, headers=good)
            denied = await http.post("/tools/wipe", json={"target": "/"}, headers=good)
            wrong_method = await http.get("/tools/add", headers=good)
            rebound = await http.post("/tools/add", json={"a": 1}, headers={**good, "host": "evil.example"})
            huge = await http.post("/tools/add", content=b"[" * 5_000_000, headers=good)
            doc = (await http.get("/openapi.json", headers=good)).json()
    assert ok.status_code == 200 and ok.json()["content"] == "42" and ok.json()["ok"] is True
    assert bad.status_code == 422 and bad.json()["error"]["kind"] == "invalid_arguments"
    assert broken.status_code == 422
    assert missing.status_code == 404 and missing.json()["error"]["kind"] == "not_found"
    assert denied.status_code == 403 and denied.json()["error"]["kind"] == "denied"
    assert wrong_method.status_code == 405
    assert rebound.status_code == 421 and huge.status_code == 413  # the app's Host check and body cap apply too
    validate_openapi(doc)
    assert sorted(doc["paths"]) == ["/tools/add", "/tools/pack", "/tools/wipe"]  # what the runtime offers
    assert doc["servers"] == [{"url": base}] and doc["security"] == [{"bearer": []}]
    rows = AuditLog(db).query(limit=None)
    assert len(rows) == 5  # one per call that reached the pipeline (not the 401s, not the 405)
    assert {r.user for r in rows} == {"ann"} and {r.agent for r in rows} == {"bot"}


async def test_from_openapi_calls_served_tools_back(tmp_path: Path) -> None:
    async with served([add, pack], openapi=True, auth=auth(), audit=False) as base:
        endpoint = base.removeprefix("http://")
        remote = await afrom_openapi(f"{base}/openapi.json", auth={"bearer": "tok-ann"},
                              client_options={"allow_endpoints": [endpoint],
                                              "headers": {"Authorization": "Bearer tok-ann"}})
        assert remote.names() == ["add", "pack"]
        async with Runtime(remote, audit=False) as runtime:
            added = await runtime.call(ToolCall(name="add", arguments={"a": 5, "b": 5}))
            packed = await runtime.call(ToolCall(name="pack", arguments={
                "boxes": [{"width": 2}, {"width": 3, "label": "x"}], "size": "large"}))
            refused = await runtime.call(ToolCall(name="pack", arguments={"boxes": [], "size": "huge"}))
    assert added.ok and added.structured["content"] == "10"
    assert packed.ok and packed.structured["content"] == "2 large slow None"
    assert not refused.ok and refused.error is not None and refused.error.kind.value == "invalid_arguments"


async def test_without_openapi_there_are_no_plain_routes() -> None:
    async with served([add], audit=False) as base, httpx.AsyncClient(base_url=base, timeout=30) as http:
        assert (await http.post("/tools/add", json={"a": 1})).status_code in (400, 404)  # not a JSON-RPC message
        assert (await http.get("/openapi.json")).status_code == 404


def test_toolrig_serve_openapi(tmp_path: Path) -> None:
    tools = tmp_path / "shop_tools.py"
    tools.write_text("from toolrig import tool\n\n@tool(permission='readonly')\n"
                     "def double(n: int) -> int:\n    '''Double a number.'''\n    return 2 * n\n", encoding="utf-8")
    audit = tmp_path / "audit.db"
    config = tmp_path / "toolrig.toml"
    port = free_port()
    config.write_text(f'name = "shop"\n[serve]\nopenapi = true\n[serve.auth]\naudience = "http://127.0.0.1:{port}/mcp"'
                      f'\ntokens = {{ "tok-1" = "ann" }}\n[tools]\nmodules = [{json.dumps(str(tools))}]\n'
                      f'[policy]\nallow = ["*"]\n[runtime]\naudit = {json.dumps(str(audit))}\n', encoding="utf-8")
    argv = [sys.executable, "-m", "toolrig", "serve", "--config", str(config), "--http", f"127.0.0.1:{port}",
            "--root", str(tmp_path)]
    proc = subprocess.Popen(argv, cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True, env={**os.environ, "NO_COLOR": "1"})
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        headers = {"Authorization": "Bearer tok-1"}
        assert httpx.post(f"{base}/tools/double", json={"n": 4}, timeout=30).status_code == 401
        answer = httpx.post(f"{base}/tools/double", json={"n": "21"}, headers=headers, timeout=30)
        assert answer.status_code == 200 and answer.json()["content"] == "42"
        doc = httpx.get(f"{base}/openapi.json", headers=headers, timeout=30).json()
        validate_openapi(doc)
        assert "/tools/double" in doc["paths"]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert f"described at http://127.0.0.1:{port}/openapi.json" in err.decode()
    rows = [r for r in AuditLog(audit).query(limit=None) if r.tool == "double"]
    assert [(r.user, bool(r.ok)) for r in rows] == [("ann", True)]


def test_serve_openapi_needs_http() -> None:
    from typer.testing import CliRunner

    from toolrig.cli import app

    result = CliRunner().invoke(app, ["serve", "--openapi", "--stdio", "--root", str(REPO)])
    assert result.exit_code != 0 and "--http" in result.output
