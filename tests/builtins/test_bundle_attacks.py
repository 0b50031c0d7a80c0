"""Held-out attacks on YAML command tools: an element whose first character a value writes is an operand, whatever
the value's type and however many placeholders share the element; values are never templated again; a config
whose YAML aliases expand without end is a bounded DefinitionError."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from builtin_helpers import call

from toolrig import DefinitionError, ErrorKind, Registry, Runtime
from toolrig.builtins import read_bundle

ECHO_ARGS = """#!/bin/sh
for a in "$@"; do printf '<%s>\\n' "$a"; done
"""


def _tool(command: list[str], *arguments: dict[str, Any]) -> dict[str, Any]:
    return {"docstring": "Echo each argument.", "arguments": list(arguments), "command": ["echo_args", *command],
            "permission": "readonly", "sandbox": False}


TOOLS = {
    "integer": _tool(["{n}"], {"name": "n", "type": "integer", "required": True}),
    "number": _tool(["{n}"], {"name": "n", "type": "number", "required": True}),
    "pair": _tool(["{a}{b}"], {"name": "a", "type": "string", "required": True},
                  {"name": "b", "type": "string", "required": True}),
    "lead": _tool(["{a}.txt"], {"name": "a", "type": "string", "required": True}),
    "option_pair": _tool(["{a}{b}"], {"name": "a", "type": "string", "required": True, "allow_options": True},
                         {"name": "b", "type": "string", "required": True}),
    "prefixed": _tool(["--name={a}", "x{a}"], {"name": "a", "type": "string", "required": True}),
    "braces": _tool(["{{a}}", "{a}"], {"name": "a", "type": "string", "required": True}),
}


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("bundle")
    (folder / "bin").mkdir()
    (folder / "bin" / "echo_args").write_text(ECHO_ARGS)
    (folder / "bin" / "echo_args").chmod(0o755)
    (folder / "config.yaml").write_text(yaml.safe_dump({"tools": TOOLS}))
    with Runtime(Registry().load_bundle(folder, root=folder, allow_unsandboxed=True), audit=False) as rt:
        yield rt


@pytest.mark.parametrize(("tool", "arguments"), [
    ("integer", {"n": -5}), ("number", {"n": -1.5}), ("pair", {"a": "", "b": "-rf"}), ("pair", {"a": "-", "b": "rf"}),
    ("pair", {"a": "-", "b": ""}), ("lead", {"a": "-o"}), ("option_pair", {"a": "", "b": "-rf"}),
])
def test_an_element_a_value_starts_with_a_dash_is_refused(runtime: Any, tool: str, arguments: dict[str, Any]) -> None:
    outcome = call(runtime, tool, **arguments)
    assert outcome.error is not None and outcome.error.kind is ErrorKind.INVALID_ARGUMENTS, outcome.content
    assert "option" in outcome.error.message


@pytest.mark.parametrize(("tool", "arguments", "argv"), [
    ("integer", {"n": 5}, ["5"]), ("number", {"n": 0.5}, ["0.5"]), ("pair", {"a": "x", "b": "-rf"}, ["x-rf"]),
    ("option_pair", {"a": "-", "b": "rf"}, ["-rf"]),  # the author allowed options for a, which wrote the dash
    ("prefixed", {"a": "-rf"}, ["--name=-rf", "x-rf"]),  # a literal comes first: the value is an option's value
    ("braces", {"a": "{a}"}, ["{a}", "{a}"]), ("braces", {"a": "{{a}} $(id) `id`\n;"}, ["{a}", "{{a}} $(id) `id`\n;"]),
])
def test_values_land_verbatim_and_are_never_templated_again(runtime: Any, tool: str, arguments: dict[str, Any],
                                                            argv: list[str]) -> None:
    outcome = call(runtime, tool, **arguments)
    assert outcome.ok, outcome.content
    assert outcome.content.split("\n[exit code")[0] == "\n".join(f"<{a}>" for a in argv)


def _alias_bomb(levels: int) -> str:
    parts = ["&a0 [s, s, s]"] + [f"&a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, levels + 1)]
    return "[" + ", ".join(parts) + "]"


@pytest.mark.parametrize("argument", [
    "{name: v, type: string, enum: BOMB}", "{name: v, type: BOMB}", "{name: v, description: BOMB}",
    "{name: v, default: BOMB}",
])
def test_a_config_that_expands_without_end_is_a_bounded_definition_error(tmp_path: Path, argument: str) -> None:
    argument = argument.replace("BOMB", _alias_bomb(22))
    (tmp_path / "config.yaml").write_text(f"tools:\n  t:\n    docstring: d\n    arguments:\n      - {argument}\n"
                                          "    command: [echo, '{v}']\n")
    with pytest.raises(DefinitionError, match="aliases"):
        read_bundle(tmp_path, root=tmp_path)
    with pytest.raises(DefinitionError, match="larger than"):
        read_bundle("/dev/zero", root=tmp_path)


@pytest.mark.parametrize(("kind", "enum"), [("string", ["a", ["b"]]), ("integer", [1, "2"]), ("integer", [True]),
                                            ("string", [{"a": 1}])])
def test_enum_values_have_the_declared_type(tmp_path: Path, kind: str, enum: list[Any]) -> None:
    tools = {"t": _tool(["{v}"], {"name": "v", "type": kind, "enum": enum})}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"tools": tools}))
    with pytest.raises(DefinitionError, match="enum values"):
        read_bundle(tmp_path, root=tmp_path, allow_unsandboxed=True)
