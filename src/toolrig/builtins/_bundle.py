"""YAML command tools, in SWE-agent-style bundles: validated at load time, one tool per entry.

A bundle is a directory with ``config.yaml`` (and usually ``bin/`` with the programs), or a YAML file::

    tools:
      find_def:
        docstring: Find where a Python name is defined.     # or "description"
        arguments:
          - name: symbol
            type: string                                    # string, integer, number, boolean
            description: the name to look for
            required: true
          - name: path
            type: string
            default: "."
        command: ["grep", "-rn", "--", "def {symbol}", "{path}"]
        working_directory: "."                              # inside the root
        timeout: 30
        permission: readonly                                # readonly, write, destructive, system
        sandbox: true                                       # the default
    hidden_tools: [helper]                                  # defined (its bin/ program stays usable), not exposed

Mistakes raise :class:`toolrig.DefinitionError` naming the file, the tool and the key.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from toolrig import BaseTool, DefinitionError, Permission, schema_tool
from toolrig._yaml_text import yaml_problem
from toolrig.builtins._command import CommandRunner, templates

__all__ = ["load_bundle", "read_bundle"]

_TOOL_KEYS = frozenset({"docstring", "description", "signature", "arguments", "command", "working_directory",
                        "timeout", "permission", "sandbox", "network", "tags", "end_name", "env"})
_ARG_KEYS = frozenset({"name", "type", "description", "required", "default", "enum", "allow_options",
                       "argument_format"})
_TOP_KEYS = frozenset({"tools", "hidden_tools", "state_command", "blocklist"})
_MAX_BYTES = 1_000_000
_MAX_VALUES = 100_000
_MAX_DEPTH = 32
_TYPES = {"string": "string", "str": "string", "integer": "integer", "int": "integer", "number": "number",
          "float": "number", "boolean": "boolean", "bool": "boolean"}
_PY_TYPES: dict[str, type | tuple[type, ...]] = {"string": str, "integer": int, "number": (int, float),
                                                 "boolean": bool}


def _unknown(keys: Any, known: frozenset[str], where: str) -> None:
    for key in keys:
        if key not in known:
            close = difflib.get_close_matches(str(key), sorted(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f"; known keys: {', '.join(sorted(known))}"
            raise DefinitionError(f"{where}: unknown key {key!r}{hint}")


def _is_a(value: Any, kind: str) -> bool:
    return isinstance(value, _PY_TYPES[kind]) and (kind == "boolean" or not isinstance(value, bool))


def _argument(raw: Any, where: str) -> tuple[str, dict[str, Any], bool, bool]:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        raise DefinitionError(f"{where}: each argument is a mapping with a 'name'")
    name = raw["name"]
    here = f"{where}: argument {name!r}"
    _unknown(raw, _ARG_KEYS, here)
    if not name.isidentifier():
        raise DefinitionError(f"{here}: the name must be an identifier (letters, digits, '_')")
    kind = _TYPES.get(str(raw.get("type", "string")))
    if kind is None:
        raise DefinitionError(f"{here}: type {raw.get('type')!r} is not one of {', '.join(sorted(set(_TYPES)))}")
    schema: dict[str, Any] = {"type": kind}
    if raw.get("description") is not None:
        schema["description"] = str(raw["description"])
    if "enum" in raw:
        if not isinstance(raw["enum"], list) or not raw["enum"]:
            raise DefinitionError(f"{here}: enum must be a non-empty list")
        wrong = next((v for v in raw["enum"] if not _is_a(v, kind)), None)
        if wrong is not None:  # a nested list (YAML aliases can nest billions of values in a line) or another type
            raise DefinitionError(f"{here}: enum values must be {kind}s, not {type(wrong).__name__} ({wrong!r:.60})")
        schema["enum"] = list(raw["enum"])
    if "default" in raw:
        if not _is_a(raw["default"], kind):
            raise DefinitionError(f"{here}: the default {raw['default']!r} is not a {kind}")
        schema["default"] = raw["default"]
    required = bool(raw.get("required", "default" not in raw))
    return name, schema, required, bool(raw.get("allow_options", False))


def _arguments(arguments: Any, where: str) -> tuple[dict[str, Any], list[str], set[str]]:
    """The JSON Schema properties, the required names and the names allowing option-like values."""
    if not isinstance(arguments, list):
        raise DefinitionError(f"{where}: arguments must be a list")
    properties: dict[str, Any] = {}
    required: list[str] = []
    options: set[str] = set()
    for item in arguments:
        arg, schema, needed, allow = _argument(item, where)
        if arg in properties:
            raise DefinitionError(f"{where}: argument {arg!r} is declared twice")
        properties[arg] = schema
        required += [arg] if needed else []
        options |= {arg} if allow else set()
    return properties, required, options


def _seconds(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise DefinitionError(f"{where}: timeout must be a positive number of seconds")
    return float(value)


def _cwd(value: Any, where: str) -> str:
    text = str(value if value is not None else ".").strip("/") if isinstance(value, str | None) else None
    if text is None or text.startswith("~") or ".." in text.split("/") or "\0" in text or "\\" in text:
        raise DefinitionError(f"{where}: working_directory must be a relative path inside the root")
    return text or "."


def _tool(name: str, raw: Any, *, file: Path, bundle: Path, root: Path, allow_unsandboxed: bool) -> BaseTool:
    where = f"{file}: tool {name!r}"
    if not isinstance(raw, Mapping):
        raise DefinitionError(f"{where}: must be a mapping of keys (docstring, arguments, command, ...)")
    _unknown(raw, _TOOL_KEYS, where)
    description = raw.get("description") or raw.get("docstring")
    if not isinstance(description, str) or not description.strip():
        raise DefinitionError(f"{where}: needs a docstring (or description) telling the model what it does")
    properties, required, options = _arguments(raw.get("arguments") or [], where)
    if "command" not in raw:
        raise DefinitionError(f"{where}: needs a command (a list of arguments with {{param}} placeholders)")
    argv = templates(raw["command"], where)
    used = {n for t in argv for n in t.names}
    if used - properties.keys():
        raise DefinitionError(f"{where}: the command uses undeclared parameters {sorted(used - properties.keys())}")
    if properties.keys() - used:
        raise DefinitionError(f"{where}: arguments {sorted(properties.keys() - used)} are never used in the command")
    sandbox = raw.get("sandbox", True)
    if sandbox is not True and sandbox is not False:
        raise DefinitionError(f"{where}: sandbox must be true or false")
    if not sandbox and not allow_unsandboxed:
        raise DefinitionError(f"{where}: says sandbox: false; load the bundle with allow_unsandboxed=True to run "
                              "its commands outside the sandbox")
    timeout = _seconds(raw.get("timeout", 30), where)
    try:
        permission = Permission(raw.get("permission", "write"))
    except ValueError:
        raise DefinitionError(f"{where}: permission must be one of {', '.join(p.value for p in Permission)}") from None
    env = raw.get("env") or {}
    if not isinstance(env, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise DefinitionError(f"{where}: env must map names to strings")
    runner = CommandRunner(tool=name, argv=argv, root=root, bundle=bundle,
                           cwd=_cwd(raw.get("working_directory"), where), timeout=timeout,
                           allow_options=frozenset(options), sandboxed=sandbox, network=bool(raw.get("network")),
                           env=dict(env), defaults={k: v["default"] for k, v in properties.items() if "default" in v})
    tags = raw.get("tags") or []
    return schema_tool(name=name, description=description.strip(), handler=runner, permission=permission,
                       timeout=timeout + 30, tags=[*map(str, tags), "bundle"],
                       input_schema={"type": "object", "properties": properties, "required": required,
                                     "additionalProperties": False},
                       metadata={"bundle": str(bundle), "sandbox": sandbox, "breaker": False})


def _bounded(data: Any, file: Path) -> Any:
    """``data`` if walking it meets at most :data:`_MAX_VALUES` values and :data:`_MAX_DEPTH` levels; a YAML alias
    counts each time it is used (a line of aliases can stand for billions of values), else DefinitionError."""
    count, pending = 0, [(data, 0)]
    while pending:
        node, depth = pending.pop()
        count += 1
        if count > _MAX_VALUES or depth > _MAX_DEPTH:
            raise DefinitionError(f"{file}: more than {_MAX_VALUES:,} values or {_MAX_DEPTH} levels once its YAML "
                                  "aliases are expanded")
        if isinstance(node, Mapping):
            pending.extend((v, depth + 1) for v in (*node.keys(), *node.values()))
        elif isinstance(node, list):
            pending.extend((v, depth + 1) for v in node)
    return data


def read_bundle(path: str | Path, *, root: str | Path = ".", allow_unsandboxed: bool = False
                ) -> tuple[list[BaseTool], list[BaseTool]]:
    """The tools of a bundle: ``(exposed, hidden)``.

    Raises:
        DefinitionError: the file is missing, is not YAML, or declares something wrong (the message says what).
    """
    given = Path(path).expanduser().resolve()
    file = given / "config.yaml" if given.is_dir() else given
    bundle = given if given.is_dir() else given.parent
    workdir = Path(root).expanduser().resolve()
    if not workdir.is_dir():
        raise DefinitionError(f"the root of bundle {str(path)!r} must be an existing directory, not {str(root)!r}")
    try:
        with file.open("rb") as handle:
            raw = handle.read(_MAX_BYTES + 1)
        if len(raw) > _MAX_BYTES:
            raise DefinitionError(f"{file}: larger than {_MAX_BYTES:,} bytes")
        data = _bounded(yaml.safe_load(raw.decode("utf-8")), file)
    except (OSError, UnicodeDecodeError) as exc:
        raise DefinitionError(f"cannot read the bundle {str(file)!r}: {exc}") from None
    except yaml.YAMLError as exc:
        raise DefinitionError(f"{file}: not valid YAML: {yaml_problem(exc)}") from None
    except RecursionError:
        raise DefinitionError(f"{file}: nested too deeply") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("tools"), Mapping) or not data["tools"]:
        raise DefinitionError(f"{file}: needs a 'tools' mapping of tool name -> definition")
    _unknown(data, _TOP_KEYS, str(file))
    hidden = data.get("hidden_tools") or []
    if not isinstance(hidden, list) or any(h not in data["tools"] for h in hidden):
        raise DefinitionError(f"{file}: hidden_tools must list tools defined in this bundle")
    tools = [_tool(str(name), raw, file=file, bundle=bundle, root=workdir, allow_unsandboxed=allow_unsandboxed)
             for name, raw in data["tools"].items()]
    return [t for t in tools if t.name not in hidden], [t for t in tools if t.name in hidden]


def load_bundle(registry: Any, path: str | Path, *, root: str | Path = ".", allow_unsandboxed: bool = False,
                replace: bool = False) -> list[BaseTool]:
    """Register a bundle's exposed tools in ``registry`` (its ``hidden_tools`` are validated, not registered)."""
    exposed, _hidden = read_bundle(path, root=root, allow_unsandboxed=allow_unsandboxed)
    registered: list[BaseTool] = registry.register_many(exposed, replace=replace, source=f"bundle:{path}")
    return registered
