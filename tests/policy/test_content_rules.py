"""The rule forms for what MCP servers offer besides tools: ``resource(server=, uri=)`` and ``prompt(server=, name=)``,
matched against the servers' content tools (``docs__resources-read``, ``docs__prompts-get``), in allow / ask / deny
lists, layers and ``ALLOWED_TOOLS`` — never against a tool that merely has such arguments."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import Policy, ToolCall
from toolrig.policy import PolicyConfigError, content_of, content_tool, parse_rule

READ = content_tool("resource", "docs")
GET = content_tool("prompt", "docs")


def decide(policy: Policy, tool: str, **arguments: Any) -> str:
    return policy.explain(ToolCall(name=tool, arguments=arguments)).decision


def test_content_tools_are_named_after_the_server() -> None:
    assert (READ, GET) == ("docs__resources-read", "docs__prompts-get")
    assert content_of(READ) == ("resource", "docs") and content_of(GET) == ("prompt", "docs")
    for other in ("resources-read", "docs__x__resources-read", "docs__resources-read2", "docs_resources-read"):
        assert content_of(other) is None, other


def test_a_resource_rule_matches_the_server_and_the_uri() -> None:
    rule = parse_rule('resource(server="docs", uri="file:///data/*")')
    assert rule.content == "resource"
    assert rule.matches(READ, None, {"server": "docs", "uri": "file:///data/report.txt"}, lambda _: None,
                        restrictive=False)
    assert not rule.matches(READ, None, {"server": "docs", "uri": "file:///etc/passwd"}, lambda _: None,
                            restrictive=False)
    assert not rule.matches(content_tool("resource", "evil"), None, {"server": "docs", "uri": "file:///data/x"},
                            lambda _: None, restrictive=False)


def test_a_tool_with_look_alike_arguments_is_not_a_resource_read() -> None:
    policy = Policy(allow=['resource(server="docs", uri="*")', 'prompt(server="*")'], allowed_tools=None)
    for forged in ("evil__wipe", "resource", "docs__x__resources-read", "a__docs__resources-read", "prompt"):
        assert decide(policy, forged, server="docs", uri="file:///x", name="p") == "ask", forged  # unknown: asks
    assert decide(policy, READ, server="docs", uri="file:///x") == "allow"
    assert decide(policy, GET, server="docs", name="p") == "allow"


def test_deny_and_ask_rules_decide_reads_and_gets() -> None:
    policy = Policy(allow=["*"], deny=['resource(server="docs", uri="file:///secret/*")'],
                    ask=['prompt(name="admin-*")'], allowed_tools=None)
    assert decide(policy, READ, server="docs", uri="file:///secret/key") == "deny"
    assert decide(policy, READ, server="docs", uri="file:///data/x") == "allow"
    assert decide(policy, GET, server="docs", name="admin-reset") == "ask"
    assert decide(policy, GET, server="docs", name="review") == "allow"
    assert decide(policy, "secret__tool", uri="file:///secret/key") == "allow"  # a plain tool is not a read


def test_plain_name_rules_cover_a_server_s_content_tools() -> None:
    policy = Policy(allow=["*"], deny=["evil__*"], allowed_tools=None)
    assert decide(policy, content_tool("resource", "evil"), server="evil", uri="x") == "deny"
    assert decide(policy, READ, server="docs", uri="x") == "allow"


def test_allowed_tools_admits_reads_by_uri_and_gets_by_name() -> None:
    policy = Policy(allow=["*"], allowed_tools=["docs__echo", 'resource(server="docs", uri="file:///data/*")',
                                                'prompt(server="d*", name="review")'])
    assert decide(policy, READ, server="docs", uri="file:///data/report.txt") == "allow"
    assert decide(policy, READ, server="docs", uri="file:///etc/passwd") == "deny"
    assert decide(policy, GET, server="docs", name="review") == "allow"
    assert decide(policy, GET, server="docs", name="other") == "deny"
    assert decide(policy, content_tool("resource", "evil"), server="evil", uri="file:///data/x") == "deny"
    assert policy.offers(READ, arguments={"uri": "file:///data/a"}) and not policy.offers(
        READ, arguments={"uri": "file:///x"})
    from toolrig.toolsets import FunctionToolset

    assert policy.check_tools(FunctionToolset(), strict=False) == ["docs__echo"]  # resource(...) is not a tool
    only_tools = Policy(allow=["*"], allowed_tools=["docs__echo"])
    assert decide(only_tools, READ, server="docs", uri="file:///data/report.txt") == "deny"


@pytest.mark.parametrize("bad", ['resource(path="x")', 'prompt(uri="x")', 'resource(server="a__b")',
                                 'resource@1.0(uri="x")', 'resource(server="")', "resource(uri=1)"])
def test_malformed_content_rules_fail_loudly(bad: str) -> None:
    with pytest.raises(PolicyConfigError):
        parse_rule(bad)


def test_lint_does_not_call_content_rules_unknown_tools() -> None:
    from toolrig.toolsets import FunctionToolset

    def echo(text: str) -> str:
        """Echo."""
        return text

    policy = Policy(allow=["echo", 'resource(server="docs")'], deny=["ghost"], allowed_tools=None)
    findings = {f.rule for f in policy.lint(FunctionToolset([echo]))}
    assert findings == {"ghost"}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(server=st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True), uri=st.text(max_size=40),
       name=st.from_regex(r"[A-Za-z0-9_-]{1,30}", fullmatch=True))
def test_a_resource_rule_never_matches_another_server_or_a_plain_tool(server: str, uri: str, name: str) -> None:
    rule = parse_rule('resource(server="docs", uri="*")')
    arguments = {"server": "docs", "uri": uri}
    matched = rule.matches(name, None, arguments, lambda _: None, restrictive=True)
    assert matched == (name == READ)
    if server != "docs" and "__" not in server:
        assert not rule.matches(content_tool("resource", server), None, arguments, lambda _: None, restrictive=True)
