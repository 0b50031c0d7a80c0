"""Tools the egress tests run in a sandbox (module level, so the sandboxed worker can import them)."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request

from toolrig import tool


@tool(isolation="sandbox")
def fetch(url: str) -> str:
    """GET a URL through whatever the sandbox offers; the body, or the error."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return f"{response.status} {response.read().decode()}"
    except urllib.error.HTTPError as exc:
        return f"{exc.code} {exc.read().decode()[:200]}"
    except OSError as exc:
        return f"error {type(exc).__name__}"


@tool(isolation="sandbox")
def raw_connect(host: str, port: int) -> str:
    """Open a TCP connection directly, ignoring any proxy."""
    try:
        socket.create_connection((host, port), timeout=3).close()
        return "connected"
    except OSError as exc:
        return f"error {type(exc).__name__}"


@tool(isolation="sandbox")
def proxy_env() -> str:
    """The proxy variables the sandboxed worker sees."""
    import os

    return json.dumps({k: os.environ.get(k) for k in ("HTTP_PROXY", "HTTPS_PROXY")})


@tool(isolation="sandbox")
def read_env() -> str:
    """Two variables as the sandboxed tool sees them."""
    import os

    return json.dumps({k: os.environ.get(k) for k in ("EGRESS_TEST_TOKEN", "EGRESS_TEST_OTHER", "HOME")})


@tool(isolation="sandbox")
def files(name: str) -> str:
    """Read data/in.txt, write notes/NAME and try a write beside notes/, with relative paths."""
    from pathlib import Path

    out = {"read": Path("data/in.txt").read_text()}
    (Path("notes") / name).write_text("kept")
    try:
        Path("elsewhere.txt").write_text("lost")
        out["elsewhere"] = "written"
    except OSError as exc:
        out["elsewhere"] = type(exc).__name__
    try:
        Path("data/in.txt").write_text("changed")
        out["data"] = "written"
    except OSError as exc:
        out["data"] = type(exc).__name__
    return json.dumps(out)
