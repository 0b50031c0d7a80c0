"""``${VAR}`` and ``${VAR:-default}`` in MCP server entries (command, args, env, url, headers), as Claude Code's
``.mcp.json`` has them: tokens need not sit in the file. Real servers (the peer, over stdio and HTTP), real files.

An unset ``${VAR}`` without a default fails the load, naming the variable and where it is; ``$${`` is a literal
``${``; a value is expanded once (what a variable holds is never expanded again).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from mcp_helpers import PEER, PYTHON, free_port, stop, wait_for_port

from toolrig import Runtime, ToolCall
from toolrig.errors import MCPConfigError
from toolrig.mcp import config_from_mapping, from_config, load_gateway_config, read_servers

pytestmark = pytest.mark.anyio


def write(tmp_path: Path, servers: dict[str, object]) -> Path:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


async def test_command_args_and_env_are_expanded_for_a_launched_server(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TR_PYTHON", PYTHON)
    monkeypatch.setenv("TR_EXTRA", "from_the_environment")
    monkeypatch.delenv("TR_MODE", raising=False)
    path = write(tmp_path, {"peer": {"command": "${TR_PYTHON}", "args": [str(PEER), "${TR_MODE:-stdio}"],
                                     "env": {"PEER_EXTRA": "${TR_EXTRA}"}}})
    async with from_config(path, fail_on_start=True) as servers:
        assert "peer__from_the_environment" in servers.names() and "peer__echo" in servers.names()


async def test_url_and_headers_are_expanded_for_a_remote_server(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    proc = subprocess.Popen([PYTHON, str(PEER), "http", str(port)], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)
        monkeypatch.setenv("TR_PORT", str(port))
        monkeypatch.setenv("TR_TOKEN", "s3cret-token")
        path = write(tmp_path, {"remote": {"url": "http://127.0.0.1:${TR_PORT}/mcp",
                                           "headers": {"Authorization": "Bearer ${TR_TOKEN}"}}})
        async with from_config(path, fail_on_start=True) as servers:
            out = await Runtime(servers, audit=False, approval=lambda *_: True).call(
                ToolCall(name="remote__whoami", arguments={}))
        assert out.ok and "Bearer s3cret-token" in out.content
    finally:
        stop(proc)


def test_an_unset_variable_fails_the_load_naming_it_and_where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TR_MISSING_TOKEN", raising=False)
    path = write(tmp_path, {"docs": {"url": "https://example.com/mcp",
                                     "headers": {"Authorization": "Bearer ${TR_MISSING_TOKEN}"}}})
    with pytest.raises(MCPConfigError, match=r"TR_MISSING_TOKEN is not set") as caught:
        from_config(path)  # at load time: nothing is started
    assert "mcpServers.docs.headers.Authorization" in str(caught.value) and str(path) in str(caught.value)
    for bad, message in (("${TR 1}", "not a variable reference"), ("x${TR_OPEN", "without a closing")):
        with pytest.raises(MCPConfigError, match=message):
            read_servers(write(tmp_path, {"s": {"command": "run", "args": [bad]}}))


def test_defaults_literals_and_disabled_servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TR_EMPTY", "")
    monkeypatch.setenv("TR_SET", "value")
    monkeypatch.delenv("TR_UNSET", raising=False)
    path = write(tmp_path, {
        "s": {"command": "run", "args": ["${TR_UNSET:-fallback}", "${TR_EMPTY:-empty-means-default}", "${TR_EMPTY}",
                                         "$${TR_SET}", "$HOME and $ stay", "${TR_SET:-unused}", "a-${TR_SET}-b"],
              "env": {"K": "${TR_SET}"}, "description": "${TR_UNSET} (not expanded: not a transport key)"},
        "off": {"command": "${TR_UNSET}", "disabled": True},  # a disabled server is not expanded: no error
    })
    servers = read_servers(path)
    assert servers["s"]["args"] == ["fallback", "empty-means-default", "", "${TR_SET}", "$HOME and $ stay", "value",
                                    "a-value-b"]
    assert servers["s"]["env"] == {"K": "value"} and servers["s"]["description"].startswith("${TR_UNSET}")
    assert servers["off"]["command"] == "${TR_UNSET}"
    assert read_servers(json.loads(path.read_text()))["s"]["args"][0] == "${TR_UNSET:-fallback}"  # a mapping: as is


def test_attack_a_variable_s_value_is_never_expanded_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A value holding ``${...}`` (or a ``$${`` literal) survives the gateway's reads of its servers as it is."""
    monkeypatch.setenv("TR_TRICK", "${TR_SECRET}")
    monkeypatch.setenv("TR_SECRET", "must-not-leak")
    toml = tmp_path / "toolrig.toml"
    toml.write_text('[mcpServers.s]\ncommand = "run"\nargs = ["${TR_TRICK}", "$${TR_SECRET}"]\n'
                    '[mcp]\nservers_file = "servers.json"\n')
    write(tmp_path, {"f": {"command": "run", "args": ["${TR_TRICK}", "$${TR_SECRET}"]}})
    config = load_gateway_config(toml)
    for name in ("s", "f"):
        assert config.servers[name]["args"] == ["${TR_SECRET}", "${TR_SECRET}"], name
    again = config_from_mapping({"mcpServers": read_servers(tmp_path / "servers.json", expand=False)}, base=tmp_path)
    assert again.servers["f"]["args"] == ["${TR_SECRET}", "${TR_SECRET}"]
    built = from_config({"mcpServers": config.servers})  # what the gateway does with them: not expanded again
    assert built.servers["f"].target.args == ("${TR_SECRET}", "${TR_SECRET}")


def test_the_gateway_config_fails_at_load_on_an_unset_variable(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TR_GW_TOKEN", raising=False)
    toml = tmp_path / "toolrig.toml"
    toml.write_text('[mcpServers.api]\nurl = "https://example.com/mcp"\n'
                    '[mcpServers.api.headers]\nAuthorization = "Bearer ${TR_GW_TOKEN}"\n')
    with pytest.raises(MCPConfigError, match=r"TR_GW_TOKEN is not set.*TR_GW_TOKEN:-"):
        load_gateway_config(toml)
    monkeypatch.setenv("TR_GW_TOKEN", "abc")
    assert load_gateway_config(toml).servers["api"]["headers"] == {"Authorization": "Bearer abc"}
