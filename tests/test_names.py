"""One name, one meaning: renamed public names, and the older names kept as aliases of them."""

from __future__ import annotations

import toolrig


def test_retry_settings_are_retry_and_policy_means_the_access_policy() -> None:
    assert toolrig.RetryPolicy is toolrig.Retry  # the older name still works
    assert toolrig.Retry(max_attempts=2).max_attempts == 2
    assert toolrig.Policy.__module__ == "toolrig.policy._policy"
    spec = toolrig.ToolSpec(name="t", retry=toolrig.RetryPolicy(max_attempts=3))
    assert isinstance(spec.retry, toolrig.Retry)


def test_command_rules_keep_their_older_name() -> None:
    from toolrig.builtins import shell_tool
    from toolrig.guards import CommandPolicy, CommandRules

    assert CommandPolicy is CommandRules
    assert CommandRules(allow=["ls *"]).decide("ls -l").allowed
    rules = CommandRules(allow=["git status"])
    assert shell_tool(".", rules=rules).rules is rules
    assert shell_tool(".", policy=rules).rules is rules  # the older keyword still works


def test_load_file_means_into_a_registry_and_tools_in_file_reads_a_file(tmp_path: object) -> None:
    from pathlib import Path

    from toolrig import Registry
    from toolrig.loading import load_file, tools_in_file

    assert load_file is tools_in_file  # the older name still works
    path = Path(str(tmp_path)) / "weather_tools.py"
    path.write_text("from toolrig import tool\n\n@tool\ndef forecast(city: str) -> str:\n"
                    "    '''The forecast.'''\n    return city\n")
    (found,) = tools_in_file(path)
    registry = Registry()
    assert found.name == "forecast" and "forecast" not in registry
    (registered,) = registry.load_file(path)
    assert registered.name == "forecast" and "forecast" in registry


def test_a_tools_live_status_is_its_vitals_and_state_means_shared_state() -> None:
    from toolrig import BaseTool, Runtime, ToolCall, ToolState, ToolVitals, tool

    @tool
    def ping() -> str:
        """Pong."""
        return "pong"

    assert ToolState is ToolVitals and isinstance(ping.vitals, ToolVitals)
    assert ping.state is ping.vitals  # the older name still works
    with Runtime([ping], audit=False) as rt:
        rt.call_sync(ToolCall(name="ping"))
        assert ping.vitals.stats.calls == 1
        assert not isinstance(rt.services.state, ToolVitals)  # the runtime's state is the shared-state backend
    assert isinstance(ping, BaseTool)
