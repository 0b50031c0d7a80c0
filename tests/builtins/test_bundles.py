"""YAML command tools: validation at load time, argv filled one element per placeholder (no shell, ever),
sandboxed by default, hidden_tools kept unexposed, Registry.load_bundle."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from builtin_helpers import Approvals, assert_clean, call, child_pids
from guard_helpers import load_json

from toolrig import DefinitionError, ErrorKind, Permission, Registry, Runtime
from toolrig.builtins import read_bundle

SHELL = load_json("shell_tool_cases.json") or {}

ECHO_ARGS = """#!/bin/sh
for a in "$@"; do printf '<%s>\\n' "$a"; done
"""


def bundle(tmp_path: Path, tools: dict[str, object], **top: object) -> Path:
    folder = tmp_path / "bundle"
    (folder / "bin").mkdir(parents=True, exist_ok=True)
    script = folder / "bin" / "echo_args"
    script.write_text(ECHO_ARGS)
    script.chmod(0o755)
    (folder / "config.yaml").write_text(yaml.safe_dump({"tools": tools, **top}))
    return folder


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "root"
    work.mkdir()
    (work / "src").mkdir()
    (work / "src" / "app.py").write_text("def main():\n    pass\n")
    (work / "sandbox_victim").mkdir()
    return work


ARGS_TOOL = {
    "docstring": "Echo each argument on its own line.",
    "arguments": [{"name": "text", "type": "string", "description": "anything", "required": True},
                  {"name": "count", "type": "integer", "default": 2},
                  {"name": "flag", "type": "string", "required": False}],
    "command": ["echo_args", "--", "{text}", "n={count}", "{flag}"],
    "permission": "readonly",
}


def test_a_bundle_loads_into_a_registry_with_its_schema(tmp_path: Path, root: Path) -> None:
    folder = bundle(tmp_path, {"echo": ARGS_TOOL, "helper": {"docstring": "A helper.", "command": ["true"]}},
                    hidden_tools=["helper"])
    registry = Registry()
    loaded = registry.load_bundle(folder, root=root)
    assert [t.name for t in loaded] == ["echo"] and registry.names() == ["echo"]
    spec = registry.get("echo").spec
    assert spec.permission is Permission.READONLY and "bundle" in spec.tags and spec.metadata["sandbox"] is True
    assert spec.input_schema["properties"]["count"] == {"type": "integer", "default": 2}
    assert spec.input_schema["required"] == ["text"] and spec.input_schema["additionalProperties"] is False
    exposed, hidden = read_bundle(folder, root=root)
    assert [t.name for t in exposed] == ["echo"] and [t.name for t in hidden] == ["helper"]


def test_parameters_cannot_inject_shell_syntax(security: Path, tmp_path: Path, root: Path) -> None:
    """Every injection string arrives as exactly one argv element, verbatim; nothing else runs."""
    folder = bundle(tmp_path, {"echo": ARGS_TOOL})
    children = child_pids()
    with Runtime(Registry().load_bundle(folder, root=root), audit=False) as rt:
        for payload in SHELL["argument_injection"] + [c["command"] for c in SHELL["approval_bypass"]]:
            outcome = call(rt, "echo", text=payload)
            if "\0" in payload or payload.startswith("-"):  # NUL, or an option where an operand goes: refused
                assert outcome.error.kind in (ErrorKind.INVALID_ARGUMENTS, ErrorKind.EXECUTION_ERROR), payload
                continue
            assert outcome.ok, (payload, outcome.content)
            lines = outcome.content.split("\n[exit code")[0]
            assert lines == f"<-->\n<{payload}>\n<n=2>", (payload, lines)
    assert not list(root.rglob("*INJ_MARKER*")) and not list(Path("/tmp").glob("*INJ_MARKER*"))
    assert (root / "sandbox_victim").is_dir()
    assert child_pids() <= children


def test_option_like_operands_are_refused_unless_allowed(tmp_path: Path, root: Path) -> None:
    grep = {"docstring": "Search.", "arguments": [{"name": "pattern", "type": "string"},
                                                  {"name": "path", "type": "string", "default": "."}],
            "command": ["grep", "-rn", "{pattern}", "{path}"], "permission": "readonly"}
    relaxed = {**grep, "arguments": [{"name": "pattern", "type": "string", "allow_options": True},
                                     {"name": "path", "type": "string", "default": "."}]}
    folder = bundle(tmp_path, {"grep_tool": grep, "relaxed": relaxed})
    with Runtime(Registry().load_bundle(folder, root=root), audit=False) as rt:
        hit = call(rt, "grep_tool", pattern="def main", path="src")
        assert hit.ok and "src/app.py:1:def main():" in hit.content
        for bad in ("-o/tmp/INJ_MARKER", "--pre=sh", "-exec"):
            refused = call(rt, "grep_tool", pattern=bad)
            assert refused.error.kind is ErrorKind.INVALID_ARGUMENTS and "option" in refused.error.message
        assert call(rt, "grep_tool", pattern="x", path="-r").error.kind is ErrorKind.INVALID_ARGUMENTS
        assert call(rt, "relaxed", pattern="-n").ok  # the author allowed options for this one
        assert_clean(call(rt, "grep_tool", pattern="x", path="../../etc"))  # confined by the sandbox
        passwd = call(rt, "grep_tool", pattern=":", path="/etc/passwd").content  # the sandbox's own, not the host's
        assert "daemon:" not in passwd and "daemon:" in Path("/etc/passwd").read_text()


def test_commands_run_in_the_sandbox_with_a_timeout(tmp_path: Path, root: Path) -> None:
    tools = {
        "where": {"docstring": "Show where and who.", "command": ["sh", "-c", "pwd; id -u; ls"],
                  "working_directory": "src", "permission": "readonly"},
        "sleepy": {"docstring": "Sleep.", "command": ["sleep", "60"], "timeout": 1},
    }
    with Runtime(Registry().load_bundle(bundle(tmp_path, tools), root=root), audit=False,
                 approval=Approvals(True)) as rt:
        where = call(rt, "where")
        assert where.ok and where.content.startswith("/work/src\n65534\napp.py")
        slow = call(rt, "sleepy")
        assert slow.error.kind is ErrorKind.TIMEOUT


def test_unsandboxed_tools_need_an_explicit_opt_in(tmp_path: Path, root: Path) -> None:
    tools = {"plain": {"docstring": "Print the arguments.", "arguments": [{"name": "text", "type": "string"}],
                       "command": ["echo_args", "{text}"], "sandbox": False, "permission": "readonly"},
             "hang": {"docstring": "Hang.", "command": ["sh", "-c", "sleep 60 & sleep 60"], "sandbox": False,
                      "timeout": 1, "permission": "readonly"}}
    folder = bundle(tmp_path, tools)
    with pytest.raises(DefinitionError, match="allow_unsandboxed=True"):
        Registry().load_bundle(folder, root=root)
    children = child_pids()
    with Runtime(Registry().load_bundle(folder, root=root, allow_unsandboxed=True), audit=False) as rt:
        out = call(rt, "plain", text="a b; touch INJ_MARKER")
        assert out.ok and out.content.startswith("<a b; touch INJ_MARKER>\n[exit code 0]")
        assert call(rt, "hang").error.kind is ErrorKind.TIMEOUT
    assert not list(root.rglob("*INJ_MARKER*"))
    assert child_pids() <= children


@pytest.mark.parametrize(("tools", "top", "message"), [
    ({"t": {"command": ["ls"]}}, {}, "needs a docstring"),
    ({"t": {"docstring": "x"}}, {}, "needs a command"),
    ({"t": {"docstring": "x", "command": "ls -la"}}, {}, "never a shell string"),
    ({"t": {"docstring": "x", "command": []}}, {}, "non-empty list"),
    ({"t": {"docstring": "x", "command": ["{prog}"], "arguments": [{"name": "prog"}]}}, {}, "cannot be a placeholder"),
    ({"t": {"docstring": "x", "command": ["ls", "{path}"]}}, {}, "undeclared parameters ['path']"),
    ({"t": {"docstring": "x", "command": ["ls"], "arguments": [{"name": "p"}]}}, {}, "never used"),
    ({"t": {"docstring": "x", "command": ["ls", "{p!r}"], "arguments": [{"name": "p"}]}}, {}, "plain parameter"),
    ({"t": {"docstring": "x", "command": ["ls", "{p.x}"], "arguments": [{"name": "p"}]}}, {}, "plain parameter"),
    ({"t": {"docstring": "x", "command": ["ls", "{p"], "arguments": [{"name": "p"}]}}, {}, "unbalanced braces"),
    ({"t": {"docstring": "x", "command": ["ls"], "comand": 1}}, {}, "did you mean 'command'"),
    ({"t": {"docstring": "x", "command": ["ls", "{p}"], "arguments": [{"name": "p", "type": "list"}]}}, {}, "type"),
    ({"t": {"docstring": "x", "command": ["ls", "{p}"],
            "arguments": [{"name": "p", "type": "integer", "default": "x"}]}}, {}, "is not a integer"),
    ({"t": {"docstring": "x", "command": ["ls"], "timeout": -1}}, {}, "positive number"),
    ({"t": {"docstring": "x", "command": ["ls"], "permission": "root"}}, {}, "permission must be one of"),
    ({"t": {"docstring": "x", "command": ["ls"], "working_directory": "../up"}}, {}, "relative path inside"),
    ({"t": {"docstring": "x", "command": ["ls"]}}, {"hidden_tools": ["nope"]}, "hidden_tools"),
    ({"t": {"docstring": "x", "command": ["ls"]}}, {"extra": 1}, "unknown key 'extra'"),
    ({"bad name": {"docstring": "x", "command": ["ls"]}}, {}, "illegal tool name"),
])
def test_bundle_mistakes_are_definition_errors(tmp_path: Path, root: Path, tools: dict[str, object],
                                               top: dict[str, object], message: str) -> None:
    with pytest.raises(DefinitionError, match=message.replace("[", r"\[").replace("]", r"\]")):
        read_bundle(bundle(tmp_path, tools, **top), root=root)


def test_missing_and_broken_files(tmp_path: Path, root: Path) -> None:
    with pytest.raises(DefinitionError, match="cannot read"):
        read_bundle(tmp_path / "nowhere", root=root)
    broken = tmp_path / "broken.yaml"
    broken.write_text("tools: [unclosed")
    with pytest.raises(DefinitionError, match="not valid YAML"):
        read_bundle(broken, root=root)
    broken.write_text("just: text")
    with pytest.raises(DefinitionError, match="'tools' mapping"):
        read_bundle(broken, root=root)
    assert os.path.exists(root)


def test_the_registry_finds_the_loader_by_entry_point(tmp_path: Path, root: Path) -> None:
    from toolrig.errors import LoadError

    folder = bundle(tmp_path, {"echo": ARGS_TOOL})
    with pytest.raises(LoadError, match="no 'toml' bundle loader"):
        Registry().load_bundle(folder, root=root, kind="toml")
