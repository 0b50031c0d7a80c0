"""A stdio MCP server (the official SDK's ``MCPServer``, nothing of toolrig) that probes the sandbox it runs in.

    python sandbox_server.py TOKEN        # TOKEN marks its processes on the host's process list

Each tool tries one thing and answers with what happened (``ok: ...`` or ``error: <type>: ...``), so a
test on the host can tell what a sandboxed server could do.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time

from mcp.server import MCPServer

server = MCPServer("sandbox-probe")


def _error(exc: BaseException) -> str:
    return f"error: {type(exc).__name__}: {exc}"


@server.tool()
def read_path(path: str) -> str:
    """Read a file (the first 4000 characters) or list a directory."""
    try:
        if os.path.isdir(path):
            return "ok: " + json.dumps(sorted(os.listdir(path)))
        with open(path, encoding="utf-8", errors="replace") as handle:
            return "ok: " + handle.read(4000)
    except OSError as exc:
        return _error(exc)


@server.tool()
def write_path(path: str, text: str) -> str:
    """Create or overwrite a file."""
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        return _error(exc)
    return "ok: written"


@server.tool()
def connect(host: str, port: int) -> str:
    """Open a TCP connection (and close it)."""
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError as exc:
        return _error(exc)
    return "ok: connected"


@server.tool()
def whoami() -> str:
    """Identity, working directory and environment variable names, as JSON."""
    return json.dumps({"uid": os.getuid(), "gid": os.getgid(), "pid": os.getpid(), "cwd": os.getcwd(),
                       "env": sorted(os.environ), "secret": os.environ.get("PROBE_SECRET", "")})


@server.tool()
def spawn_daemon() -> str:
    """Leave a process behind: double fork, new session, sleep forever (its command line keeps TOKEN)."""
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            for fd in (0, 1):
                os.close(fd)
            while True:
                time.sleep(3600)
        os._exit(0)
    os.waitpid(pid, 0)
    return "ok: spawned"


if __name__ == "__main__":
    sys.argv[1:] = []  # TOKEN only marks the command line
    server.run("stdio")
