"""One schema for the whole toolrig.toml: every wrong value is named with its key, the value and what is allowed."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig.errors import MCPConfigError
from toolrig.mcp import Gateway, open_pins
from toolrig.mcp.gateway._config import config_from_mapping, load_gateway_config
from toolrig.mcp.gateway._schema import GatewaySchema

# (table, key, a kind of value it takes)
TYPED = [("serve", "transport", "enum"), ("serve", "host", "str"), ("serve", "port", "port"),
         ("serve", "stateless", "bool"), ("serve", "json_response", "bool"), ("serve", "allowed_hosts", "list"),
         ("mcp", "timeout", "seconds"), ("mcp", "prefix", "bool"), ("approvals", "backend", "enum"),
         ("approvals", "timeout", "seconds"), ("runtime", "audit_mode", "enum"), ("runtime", "timeout", "seconds"),
         ("scan", "quarantine", "bool"), ("scan", "allow", "list"), ("pins", "mode", "enum"),
         ("policy", "preset", "enum"), ("policy", "trusted", "list"), ("tools", "modules", "list")]

WRONG: dict[str, st.SearchStrategy[Any]] = {
    "enum": st.one_of(st.text(min_size=1, max_size=12).filter(
        lambda s: s not in {"http", "stdio", "client", "queue", "terminal", "deny", "batched", "strict", "tofu",
                            "approve", "default", "permissive"}), st.integers(), st.booleans()),
    "str": st.one_of(st.integers(), st.booleans(), st.lists(st.integers(), max_size=2)),
    "port": st.one_of(st.integers(max_value=-1), st.integers(min_value=65536), st.text(max_size=8), st.booleans(),
                      st.floats(allow_nan=False)),
    "bool": st.one_of(st.sampled_from(["no", "yes", "false", "true", "0", "1", "off"]), st.integers()),
    "list": st.one_of(st.text(max_size=10), st.integers(), st.lists(st.integers(), min_size=1, max_size=3)),
    "seconds": st.one_of(st.floats(max_value=0), st.text(max_size=6), st.booleans()),
}


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=150)
@given(st.sampled_from(TYPED).flatmap(lambda t: st.tuples(st.just(t), WRONG[t[2]])))
def test_a_wrong_value_is_named_with_its_key_and_value(case: tuple[tuple[str, str, str], Any]) -> None:
    (table, key, _kind), value = case
    with pytest.raises(MCPConfigError) as caught:
        config_from_mapping({table: {key: value}}, source="toolrig.toml")
    message = str(caught.value)
    assert f"[{table}] {key}" in message and "must be" in message, message


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=60)
@given(st.sampled_from([None, "serve", "mcp", "approvals", "runtime", "pins", "policy", "builtins", "scan"]),
       st.from_regex(r"[a-z][a-z_]{2,14}", fullmatch=True))
def test_an_unknown_key_anywhere_is_named_with_the_known_ones(table: str | None, key: str) -> None:
    model = GatewaySchema if table is None else GatewaySchema.model_fields[table].annotation
    known = set(GatewaySchema.model_fields) if table is None else set(
        next(a for a in model.__args__ if hasattr(a, "model_fields")).model_fields)  # type: ignore[union-attr]
    if key in known:
        return
    data = {key: 1} if table is None else {table: {key: 1}}
    with pytest.raises(MCPConfigError, match=f"unknown key '{key}'") as caught:
        config_from_mapping(data)
    assert "known keys:" in str(caught.value)


def test_the_documented_config_is_valid(tmp_path: Path) -> None:
    from toolrig.mcp.gateway import _config as _gateway_config

    doc = _gateway_config.__doc__ or ""
    example = doc.split("\n\n", 1)[1].split("\nRelative paths")[0]
    data = tomllib.loads("\n".join(line[4:] for line in example.splitlines()))
    (tmp_path / "servers.json").write_text('{"mcpServers": {}}')
    config = config_from_mapping(data, base=tmp_path)
    assert config.serve["port"] == 8765 and config.policy == {"trusted": ["time__*"]}


def test_servers_of_a_servers_file_are_checked_too(tmp_path: Path) -> None:
    (tmp_path / "servers.json").write_text('{"mcpServers": {"t": {"command": "x", "timeout": "soon"}}}')
    (tmp_path / "toolrig.toml").write_text('[mcp]\nservers_file = "servers.json"\n')
    with pytest.raises(MCPConfigError, match=r"\[mcpServers.t\] timeout = 'soon'"):
        load_gateway_config(tmp_path / "toolrig.toml")


def test_the_gateway_asks_the_client_with_the_tool_versions(tmp_path: Path) -> None:
    gateway = Gateway(config_from_mapping({"builtins": {"root": str(tmp_path)}}, base=tmp_path),
                      pins=open_pins(tmp_path / "mcp.db"))
    approver = gateway.runtime.services.approval  # type: ignore[attr-defined]
    assert approver.tools is gateway.toolset


def test_a_relative_approval_queue_sits_beside_the_config_not_where_serve_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``[approvals] queue = "approvals.db"`` means the config's folder (like the audit log), so that
    ``toolrig approvals`` from another terminal finds it and the hint it prints names it in full."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = config_from_mapping({"builtins": {"root": str(project)},
                                  "approvals": {"backend": "queue", "queue": "approvals.db"}}, base=project)
    gateway = Gateway(config, pins=open_pins(tmp_path / "mcp.db"))
    queue = gateway.runtime.services.approval  # type: ignore[attr-defined]
    assert Path(queue.store.path) == project / "approvals.db"
    assert not (elsewhere / "approvals.db").exists()
