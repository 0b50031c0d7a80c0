"""The toolrig.toml recipes of docs/builtins.md (GitHub, Jira and Slack MCP servers through the gateway, and the new
[builtins] keys) parse against the gateway's strict schema, and their policies allow reads and ask for writes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from toolrig import ToolCall
from toolrig.builtins import tools_from_config
from toolrig.errors import MCPConfigError
from toolrig.mcp import load_gateway_config
from toolrig.policy import policy_from_mapping

DOC = Path(__file__).resolve().parents[2] / "docs" / "builtins.md"


def toml_blocks() -> list[str]:
    return re.findall(r"^```toml\n(.*?)^```", DOC.read_text(encoding="utf-8"), flags=re.M | re.S)


def recipe(server: str) -> str:
    found = [b for b in toml_blocks() if f"[mcpServers.{server}]" in b]
    assert len(found) == 1, f"docs/builtins.md has no single {server} recipe"
    return found[0]


EXPECTED = {
    "github": ({"github__get_issue", "github__list_issues", "github__search_code", "github__get_file_contents"},
               {"github__create_issue", "github__push_files", "github__merge_pull_request",
                "github__create_or_update_file", "github__add_issue_comment", "github__update_issue"}),
    "jira": ({"jira__jira_get_issue", "jira__jira_search", "jira__jira_get_transitions"},
             {"jira__jira_create_issue", "jira__jira_update_issue", "jira__jira_add_comment",
              "jira__jira_transition_issue"}),
    "slack": ({"slack__slack_list_channels", "slack__slack_get_channel_history", "slack__slack_get_users"},
              {"slack__slack_post_message", "slack__slack_reply_to_thread", "slack__slack_add_reaction"}),
}


@pytest.mark.parametrize("server", sorted(EXPECTED))
def test_each_recipe_parses_and_allows_reads_but_asks_for_writes(tmp_path: Path, server: str) -> None:
    config_file = tmp_path / "toolrig.toml"
    config_file.write_text(recipe(server), encoding="utf-8")
    config = load_gateway_config(config_file)
    entry = config.servers[server]
    assert entry["command"] in ("npx", "uvx") and re.search(r"[@=]\d", " ".join(entry["args"]))  # pinned versions
    policy = policy_from_mapping(config.policy or {})
    reads, writes = EXPECTED[server]
    for name in reads:
        assert policy.explain(ToolCall(name=name, arguments={})).decision == "allow", name
    for name in writes:
        assert policy.explain(ToolCall(name=name, arguments={})).decision == "ask", name
    if server == "jira":
        assert policy.explain(ToolCall(name="jira__jira_delete_issue", arguments={})).decision == "deny"


def test_the_builtins_recipe_parses_and_builds(tmp_path: Path) -> None:
    block = next(b for b in toml_blocks() if b.startswith("[builtins]"))
    config_file = tmp_path / "toolrig.toml"
    store = tmp_path / "memory.db"
    config_file.write_text(block.replace("/var/lib/toolrig/memory.db", str(store)), encoding="utf-8")
    config = load_gateway_config(config_file)
    section = dict(config.builtins or {})
    (tmp_path / "project").mkdir()
    section["root"] = str(tmp_path / "project")  # the memory store stays outside the root
    names = {t.name for t in tools_from_config(section)}
    assert {"remember", "recall", "forget", "todo_write", "todo_read", "ask_user", "crawl", "send_email",
            "read_image_text"} <= names


def test_the_schema_is_strict_about_the_new_keys(tmp_path: Path) -> None:
    config_file = tmp_path / "toolrig.toml"
    config_file.write_text('[builtins]\nmemroy = true\n', encoding="utf-8")
    with pytest.raises(MCPConfigError, match="memroy"):
        load_gateway_config(config_file)
    config_file.write_text('[builtins]\nemail = "yes"\n', encoding="utf-8")
    with pytest.raises(MCPConfigError, match="email"):
        load_gateway_config(config_file)
