"""`toolrig serve` as a new user meets it: started from a subprocess in `/`, in a home folder, in a project,
reached with the MCP SDK's client over HTTP and stdio; its root, its messages, its approvals."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_helpers import PYTHON, free_port, running

SERVE = [PYTHON, "-m", "toolrig", "serve"]


def clean_env(tmp_path: Path, **more: str) -> dict[str, str]:
    """A user's environment: a home of its own, the state and approval stores inside it."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("TOOLRIG_APPROVALS", "TOOLRIG_AUDIT")}
    return {**env, "HOME": str(home), "TOOLRIG_MCP_STATE": str(tmp_path / "mcp.db"),
            "TOOLRIG_APPROVALS": str(tmp_path / "approvals.db"), "XDG_DATA_HOME": str(home / ".local" / "share"),
            **more}


def serve_once(args: list[str], *, cwd: Path | str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`toolrig serve ...` with stdin closed: it either refuses to start or starts and ends at once (EOF)."""
    return subprocess.run([*SERVE, *args], capture_output=True, text=True, timeout=180, check=False, cwd=cwd,
                          env=env, stdin=subprocess.DEVNULL)


def ready_event(log: Path, deadline: float = 120) -> dict[str, Any]:
    """The `--json` ready event of a server whose stderr goes to ``log`` (waits for the file to hold it)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("{") and json.loads(line).get("event") == "ready":
                return dict(json.loads(line))
        time.sleep(0.05)
    raise AssertionError(f"no ready event: {log.read_text()}")


@contextmanager
def http_server(tmp_path: Path, args: list[str], *, cwd: Path, env: dict[str, str], host: str = "127.0.0.1"
                ) -> Iterator[tuple[str, dict[str, Any]]]:
    port = free_port()
    log = tmp_path / f"serve-{port}.log"
    with running([*SERVE, "--http", f"{host}:{port}", "--json", *args], port, env=env, cwd=cwd, log=log):
        yield f"http://127.0.0.1:{port}/mcp", ready_event(log)


def text_of(result: mcp_types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, mcp_types.TextContent))


# -- 1. the root of the file tools ---------------------------------------------------------------------

@pytest.mark.parametrize("where", ["/", "home"])
def test_an_implicit_root_of_slash_or_home_is_refused(tmp_path: Path, where: str) -> None:
    env = clean_env(tmp_path)
    cwd = "/" if where == "/" else env["HOME"]
    done = serve_once(["--stdio"], cwd=cwd, env=env)
    assert done.returncode != 0
    assert "--root" in done.stderr and "will not serve the file tools" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_an_explicit_root_of_slash_serves_with_a_warning(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    with http_server(tmp_path, ["--root", "/"], cwd=Path("/"), env=env) as (_url, ready):
        root = ready["root"]
    assert root["path"] == "/" and root["explicit"] is True and "filesystem root" in root["warning"]
    text = serve_once(["--stdio", "--root", "/"], cwd="/", env=env)
    assert "file tools' root: / (given explicitly)" in text.stderr and "WARNING: the root /" in text.stderr


def test_serve_help_says_what_it_serves_and_where() -> None:
    done = subprocess.run([*SERVE, "--help"], capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0
    shown = " ".join(done.stdout.split())
    assert "--root" in shown and "built-in file tools" in shown and "folder serve starts in" in shown
    top = subprocess.run([PYTHON, "-m", "toolrig", "--help"], capture_output=True, text=True, timeout=120,
                         check=False, env={**os.environ, "COLUMNS": "200"})
    assert top.stdout.split("Usage:")[1].split("\n\n")[1].strip().startswith("toolrig serve")


def test_in_a_project_folder_writes_run_and_the_root_is_reported(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    env = clean_env(tmp_path)

    async def write(url: str) -> mcp_types.CallToolResult:
        async with Client(url, mode="legacy", cache=None) as client:
            return await client.call_tool("write_file", {"path": "notes.md", "content": "hello"})

    with http_server(tmp_path, [], cwd=project, env=env) as (url, ready):
        result = anyio.run(write, url)
    assert ready["root"] == {"path": str(project.resolve()), "explicit": False, "project": True, "writes_ask": False,
                             "warning": None}
    desktop = ready["desktop_config"]["mcpServers"]["toolrig"]  # over HTTP, the stdio entry is offered too
    assert Path(desktop["command"]).is_absolute() and desktop["args"][-2:] == ["--root", str(project.resolve())]
    assert not result.is_error, text_of(result)
    assert (project / "notes.md").read_text() == "hello"


def test_outside_a_project_folder_a_write_asks_and_the_client_hears_how_to_approve(tmp_path: Path) -> None:
    """A client without elicitation: the write waits in the queue; the client gets a log message and a progress
    notification naming the request and the command; a person runs it; the write happens."""
    folder = tmp_path / "loose"
    folder.mkdir()
    env = clean_env(tmp_path)
    heard: list[str] = []
    progress: list[str | None] = []
    approved: list[str] = []

    async def on_log(params: mcp_types.LoggingMessageNotificationParams) -> None:
        heard.append(str(params.data))

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async def write(url: str) -> mcp_types.CallToolResult:
        with anyio.fail_after(300):
            return await write_approved(url)

    async def write_approved(url: str) -> mcp_types.CallToolResult:
        async with Client(url, mode="legacy", cache=None, logging_callback=on_log) as client:
            async with anyio.create_task_group() as tg:
                tg.start_soon(approve_when_asked)
                result = await client.call_tool("write_file", {"path": "notes.md", "content": "hi"},
                                                progress_callback=on_progress)
                tg.cancel_scope.cancel()
            return result

    async def approve_when_asked() -> None:
        while not any("toolrig approvals approve" in m for m in heard):
            await anyio.sleep(0.05)
        request = re.search(r"toolrig approvals approve ([0-9a-f]+)", "\n".join(heard))
        assert request is not None
        approved.append(request.group(1))  # the call may end (approved) before this task hears the process end
        await anyio.run_process([PYTHON, "-m", "toolrig", "approvals", "approve", request.group(1)], env=env,
                                check=False)

    with http_server(tmp_path, [], cwd=folder, env=env) as (url, ready):
        result = anyio.run(write, url)
    assert ready["root"]["writes_ask"] is True and ready["root"]["project"] is False
    assert approved and not result.is_error, text_of(result)
    assert (folder / "notes.md").read_text() == "hi"
    assert any(m and f"toolrig approvals approve {approved[0]}" in m for m in progress), progress


# -- 2. an approval nobody gives in time ---------------------------------------------------------------

DANGER = '''
from toolrig import tool

@tool(permission="destructive")
def wipe(target: str) -> str:
    """Wipe a target (needs approval)."""
    return f"wiped {target}"
'''


def test_an_approval_that_times_out_is_its_own_outcome_and_audited_so(tmp_path: Path) -> None:
    (tmp_path / "danger.py").write_text(DANGER)
    config = tmp_path / "toolrig.toml"
    config.write_text(f"""
[tools]
modules = ["danger.py"]
[approvals]
timeout = 1.5
queue = {json.dumps(str(tmp_path / "queue.db"))}
[runtime]
audit = "audit.db"
audit_mode = "strict"
""")
    env = clean_env(tmp_path)
    heard: list[str] = []

    async def on_log(params: mcp_types.LoggingMessageNotificationParams) -> None:
        heard.append(str(params.data))

    async def call(url: str) -> mcp_types.CallToolResult:
        async with Client(url, mode="legacy", cache=None, logging_callback=on_log) as client:
            return await client.call_tool("wipe", {"target": "db"})

    with http_server(tmp_path, ["--config", str(config)], cwd=tmp_path, env=env) as (url, _ready):
        result = anyio.run(call, url)
    error = (result.meta or {}).get("toolrig/error", {})
    assert result.is_error and error.get("kind") == "approval_timeout", result
    message = text_of(result)
    assert "declined" not in message and "nobody refused it" in message
    request = error["details"]["request_id"]
    assert f"toolrig approvals approve {request}" in message
    assert any(f"toolrig approvals approve {request}" in m for m in heard), heard
    audit = subprocess.run([PYTHON, "-m", "toolrig", "audit", "--db", str(tmp_path / "audit.db"), "--json"],
                           capture_output=True, text=True, timeout=120, check=False, env=env)
    assert [row["kind"] for row in json.loads(audit.stdout)] == ["approval_timeout"], audit.stdout


# -- 5, 6. config and address errors name the setting ---------------------------------------------------

@pytest.mark.parametrize(("toml", "expected"), [
    ('[serve]\ntransport = "carrier-pigeon"\n', "[serve] transport = 'carrier-pigeon': must be 'http' or 'stdio'"),
    ('[serve]\nstateless = "no"\n', "[serve] stateless = 'no': must be a valid boolean"),
    ('[serve]\nport = "eighty"\n', "[serve] port = 'eighty': must be a valid integer"),
    ("[serve]\nport = 70000\n", "[serve] port = 70000: must be less than or equal to 65535"),
    ('[approvals]\nbackend = "carrier-pigeon"\n', "[approvals] backend = 'carrier-pigeon'"),
    ("[approvals]\ntimeout = -5\n", "[approvals] timeout = -5: must be greater than 0"),
    ('[policy]\ntrusted = "time__*"\n', "[policy] trusted = 'time__*': must be a valid list"),
    ('[serve]\nprot = 80\n', "unknown key 'prot'; did you mean 'port'?"),
    ('[mcpServers.t]\ncommand = "x"\ntrusted = "yes"\n', "[mcpServers.t] trusted = 'yes': must be a valid boolean"),
    ('[runtime]\naudit_mode = "sometimes"\n', "[runtime] audit_mode = 'sometimes'"),
])
def test_a_bad_config_value_is_refused_naming_key_value_and_what_is_allowed(tmp_path: Path, toml: str,
                                                                           expected: str) -> None:
    config = tmp_path / "toolrig.toml"
    config.write_text(toml)
    done = serve_once(["--config", str(config)], cwd=tmp_path, env=clean_env(tmp_path))
    assert done.returncode == 1 and expected in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "ready" not in done.stderr


def test_every_problem_of_a_config_is_reported_at_once(tmp_path: Path) -> None:
    config = tmp_path / "toolrig.toml"
    config.write_text('[serve]\ntransport = "carrier-pigeon"\nstateless = "no"\n[pins]\nmode = "never"\n')
    done = serve_once(["--config", str(config)], cwd=tmp_path, env=clean_env(tmp_path))
    assert "3 problem(s)" in done.stderr and "[pins] mode = 'never'" in done.stderr, done.stderr


def test_a_port_in_use_names_the_address_and_the_setting(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = serve_once(["--http", f"127.0.0.1:{port}"], cwd=tmp_path, env=env)
        assert done.returncode == 1
        assert f"cannot listen on 127.0.0.1:{port} (--http 127.0.0.1:{port})" in done.stderr, done.stderr
        assert "another program is listening" in done.stderr and "Errno" not in done.stderr
        config = tmp_path / "toolrig.toml"
        config.write_text(f'[serve]\ntransport = "http"\nport = {port}\n')
        done = serve_once(["--config", str(config)], cwd=tmp_path, env=env)
        assert f"[serve] host / port of {config}" in done.stderr, done.stderr


@pytest.mark.parametrize("args", [["--http", "no-such-host.invalid:8765"], ["--http", "127.0.0.1:eighty"]])
def test_a_bad_address_names_the_setting(tmp_path: Path, args: list[str]) -> None:
    done = serve_once(args, cwd=tmp_path, env=clean_env(tmp_path))
    assert done.returncode != 0 and "--http" in done.stderr and "gaierror" not in done.stderr
    assert "ValueError" not in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_bad_host_in_the_config_names_the_setting(tmp_path: Path) -> None:
    config = tmp_path / "toolrig.toml"
    config.write_text('[serve]\ntransport = "http"\nhost = "no-such-host.invalid"\n')
    done = serve_once(["--config", str(config)], cwd=tmp_path, env=clean_env(tmp_path))
    assert "[serve] host / port of" in done.stderr and "'no-such-host.invalid' does not resolve" in done.stderr


# -- 8. every interface -----------------------------------------------------------------------------------

def _outbound_address() -> str | None:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))
            address = str(probe.getsockname()[0])
    except OSError:
        return None
    return None if address.startswith("127.") else address


def test_every_interface_lists_its_addresses_and_what_remote_clients_need(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / ".git").mkdir()
    env = clean_env(tmp_path)
    address = _outbound_address()
    with http_server(tmp_path, [], cwd=project, env=env, host="0.0.0.0") as (url, ready):
        port = url.rsplit(":", 1)[1].split("/")[0]
        assert f"http://127.0.0.1:{port}/mcp" in ready["reachable"]
        needs = " ".join(ready["remote_needs"])
        assert "allowed_hosts" in needs and "[serve.auth]" in needs
        if address is not None:
            assert f"http://{address}:{port}/mcp" in ready["reachable"]
            import httpx

            refused = httpx.post(f"http://{address}:{port}/mcp", json={}, timeout=30)
            assert refused.status_code == 421 and "allowed_hosts" in refused.text
    if address is None:
        return
    config = tmp_path / "remote.toml"
    config.write_text(f'[serve]\nallowed_hosts = ["{address}"]\n[builtins]\nroot = "p"\n')

    async def listing(remote: str) -> list[str]:
        async with Client(remote, mode="legacy", cache=None) as client:
            return [t.name for t in (await client.list_tools()).tools]

    with http_server(tmp_path, ["--config", str(config)], cwd=project, env=env, host="0.0.0.0") as (url, ready):
        port = url.rsplit(":", 1)[1].split("/")[0]
        assert not any("allowed_hosts" in n for n in ready["remote_needs"])
        assert "read_file" in anyio.run(listing, f"http://{address}:{port}/mcp")


# -- 9. the desktop entry works from anywhere ------------------------------------------------------------

def test_the_printed_desktop_entry_works_when_launched_from_slash(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text("{}")
    env = clean_env(tmp_path)
    done = serve_once(["--json"], cwd=project, env=env)
    ready = next(json.loads(line) for line in done.stderr.splitlines() if line.startswith('{"event": "ready"'))
    entry = ready["client_config"]["mcpServers"]["toolrig"]
    assert Path(entry["command"]).is_absolute() and "--root" in entry["args"]
    assert ready["inspector"].startswith("npx -y @modelcontextprotocol/inspector")

    async def listing() -> list[str]:
        params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd="/",
                                       env={"HOME": env["HOME"], "PATH": "/usr/bin:/bin",
                                            "TOOLRIG_MCP_STATE": env["TOOLRIG_MCP_STATE"]})
        with anyio.fail_after(180):
            async with Client(params, mode="legacy", cache=None) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                read = await client.call_tool("list_dir", {"path": "."})
        assert "package.json" in text_of(read)
        return names

    names = anyio.run(listing)
    assert {"read_file", "write_file", "calculator"} <= set(names)


# -- 10. approve-launch without a terminal ----------------------------------------------------------------

def test_approve_launch_without_a_terminal_says_yes_approves(tmp_path: Path) -> None:
    config = tmp_path / "toolrig.toml"
    config.write_text(f'[mcpServers.time]\ncommand = {json.dumps(PYTHON)}\nargs = ["-m", "nothing_here"]\n')
    env = clean_env(tmp_path)
    done = subprocess.run([PYTHON, "-m", "toolrig", "mcp", "approve-launch", "--config", str(config)],
                          capture_output=True, text=True, timeout=120, check=False, env=env,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 1 and "Aborted" not in done.stderr + done.stdout
    assert "--yes" in done.stderr and "nothing_here" in done.stderr, done.stderr
    yes = subprocess.run([PYTHON, "-m", "toolrig", "mcp", "approve-launch", "--config", str(config), "--yes"],
                         capture_output=True, text=True, timeout=120, check=False, env=env,
                         stdin=subprocess.DEVNULL)
    assert yes.returncode == 0 and "approved time" in yes.stdout, yes.stderr



# -- 4. refusals that need no person come first ---------------------------------------------------------

def test_a_fetch_of_a_metadata_address_is_refused_without_asking_the_client(tmp_path: Path) -> None:
    config = tmp_path / "toolrig.toml"
    config.write_text('[builtins]\nfiles = false\nhttp_fetch = true\n[policy]\nask = ["http_fetch"]\n'
                      '[runtime]\naudit = false\n')
    asked: list[str] = []

    async def elicitation(ctx: Any, params: Any) -> mcp_types.ElicitResult:
        asked.append(str(getattr(params, "message", params)))
        return mcp_types.ElicitResult(action="accept", content={"approve": True})

    async def fetch(url: str) -> mcp_types.CallToolResult:
        with anyio.fail_after(120):
            async with Client(url, mode="legacy", cache=None, elicitation_callback=elicitation) as client:
                return await client.call_tool("http_fetch", {"url": "http://169.254.169.254/latest/meta-data/"})

    with http_server(tmp_path, ["--config", str(config)], cwd=tmp_path, env=clean_env(tmp_path)) as (url, _):
        result = anyio.run(fetch, url)
    assert result.is_error and (result.meta or {}).get("toolrig/error", {}).get("kind") == "denied", result
    assert asked == [], "a person was asked to approve a fetch that is refused anyway"
