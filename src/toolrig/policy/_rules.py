"""Policy rules: ``"read_*"``, ``"toolset:files"``, ``'shell(command="git *")'``, ``"deploy@1.2.0"``.

A rule names tools by a glob over names (``fnmatch`` case-sensitive), by a named toolset
(``toolset:NAME``; ``group:NAME`` is the same, an older spelling), optionally pinned to a version
(``name@1.2.0``), and optionally constrains
argument values with globs (``tool(arg="glob", other="glob")``). A rule built by
:func:`exact_rule` instead requires the whole argument object to be exactly equal.

Two forms name what MCP servers offer besides tools (the gateway reads them through the pipeline):
``resource(server="docs", uri="file:///data/*")`` covers reading a resource, ``prompt(server="docs",
name="review*")`` getting a prompt; both arguments are globs and either may be left out (any). A read is a
call of the server's *content tool* (:func:`content_tool`: ``docs__resources-read``, ``docs__prompts-get``)
with the upstream's URI (or prompt name) in its arguments, so plain name rules (``docs__*``, ``*``) cover it
too.
"""

from __future__ import annotations

import ast
import fnmatch
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolrig.errors import PolicyConfigError
from toolrig.policy._commands import command_matches

__all__ = [
    "CONTENT_TOOLS",
    "TOOLSET_PREFIXES",
    "PolicyConfigError",
    "Rule",
    "ToolsetResolver",
    "canonical_json",
    "content_of",
    "content_tool",
    "exact_rule",
    "parse_rule",
]

ToolsetResolver = Callable[[str], "frozenset[str] | None"]
"""``toolset name -> tool names`` (None when the toolset is unknown)."""

COMMAND_ARGUMENTS = frozenset({"command", "cmd", "script"})
"""Argument names whose values are shell command lines, matched sub-command by sub-command."""

_RULE = re.compile(r"^\s*(?P<tool>[^\s()@]+)(?:@(?P<version>[^\s()]+))?\s*(?:\((?P<args>.*)\))?\s*\Z", re.S)
_GLOB = frozenset("*?[")

TOOLSET_PREFIXES = ("toolset:", "group:")
"""How a rule names a toolset: ``toolset:NAME``, or ``group:NAME`` (the same, an older spelling)."""


CONTENT_TOOLS: Mapping[str, str] = {"resource": "resources-read", "prompt": "prompts-get"}
"""What a server's content tools are called after its namespace: ``docs__resources-read``, ``docs__prompts-get``."""

_CONTENT_ARGUMENTS = {"resource": "uri", "prompt": "name"}
_CONTENT_SEP = "__"


def content_tool(kind: str, server: str) -> str:
    """The name of the tool that reads the resources (``kind="resource"``) or gets the prompts of ``server``
    (its namespace: its prefix, else its name)."""
    return f"{server}{_CONTENT_SEP}{CONTENT_TOOLS[kind]}"


def content_of(name: str) -> tuple[str, str] | None:
    """``(kind, server)`` when ``name`` is a content tool's name (:func:`content_tool`), else None."""
    for kind, suffix in CONTENT_TOOLS.items():
        tail = f"{_CONTENT_SEP}{suffix}"
        server = name[: -len(tail)] if name.endswith(tail) else ""
        if server and _CONTENT_SEP not in server:
            return kind, server
    return None


def canonical_json(value: Any) -> str:
    """Sorted-key, compact JSON: equal argument objects give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


@dataclass(frozen=True, kw_only=True)
class Rule:
    """One parsed rule.

    Attributes:
        text: the rule as written (shown by ``explain`` and ``lint``).
        tool: a glob over tool names, or ``toolset:NAME`` (``group:NAME`` is the same).
        version: the exact tool version the rule is pinned to, or None for any.
        arguments: argument name -> glob over its value.
        exact_arguments: canonical JSON the whole argument object must equal (remembered approvals).
        content: ``"resource"`` or ``"prompt"`` for a ``resource(...)`` / ``prompt(...)`` rule (its ``tool`` is
            then the content tools it covers, its ``arguments`` the ``uri`` / ``name`` glob), else None.
    """

    text: str
    tool: str
    version: str | None = None
    arguments: Mapping[str, str] = field(default_factory=dict)
    exact_arguments: str | None = None
    content: str | None = None

    @property
    def toolset(self) -> str | None:
        """The toolset name of a ``toolset:NAME`` (or ``group:NAME``) rule."""
        for prefix in TOOLSET_PREFIXES:
            if self.tool.startswith(prefix):
                return self.tool[len(prefix):]
        return None

    @property
    def is_glob(self) -> bool:
        """True when the tool part is a glob (not a plain name or a toolset)."""
        return self.toolset is None and any(c in _GLOB for c in self.tool)

    def matches_name(self, name: str, toolsets: ToolsetResolver) -> bool:
        """Does the tool part match ``name``?"""
        toolset = self.toolset
        if toolset is not None:
            members = toolsets(toolset)
            return members is not None and name in members
        if self.content is not None:  # a content tool of a server whose namespace matches, nothing else
            found = content_of(name)
            if found is None or found[0] != self.content:
                return False
        return fnmatch.fnmatchcase(name, self.tool)

    def admits(self, name: str, arguments: Mapping[str, Any], toolsets: ToolsetResolver) -> bool:
        """Does this rule, in an allowlist (``ALLOWED_TOOLS``), admit the call? A tool rule looks at the name
        only; a ``resource(...)`` / ``prompt(...)`` rule at the URI or prompt name as well."""
        if self.content is None:
            return self.matches_name(name, toolsets)
        return self.matches(name, None, arguments, toolsets, restrictive=False)

    def matches(self, name: str, version: str | None, arguments: Mapping[str, Any], toolsets: ToolsetResolver, *,
                restrictive: bool) -> bool:
        """Does the rule cover this call?

        ``restrictive`` is True for ask and deny rules: a command argument then matches when ANY of
        its sub-commands matches; for allow rules EVERY sub-command must match (and a command that
        cannot be parsed safely never matches).
        """
        if not self.matches_name(name, toolsets):
            return False
        if self.version is not None and version != self.version:
            return False
        if self.exact_arguments is not None:
            try:
                return canonical_json(dict(arguments)) == self.exact_arguments
            except (TypeError, ValueError):
                return False
        return all(self._argument_matches(key, glob, arguments, restrictive=restrictive)
                   for key, glob in self.arguments.items())

    @staticmethod
    def _argument_matches(key: str, glob: str, arguments: Mapping[str, Any], *, restrictive: bool) -> bool:
        if key not in arguments:
            return False
        value = arguments[key]
        if isinstance(value, bool) or value is None:
            text = json.dumps(value)
        elif isinstance(value, str | int | float):
            text = str(value)
        else:
            return False  # lists and objects are not matched by a glob
        if key in COMMAND_ARGUMENTS and isinstance(value, str):
            return command_matches(text, glob, restrictive=restrictive)
        return fnmatch.fnmatchcase(text, glob)

    def __str__(self) -> str:
        return self.text


def parse_rule(text: str | Rule) -> Rule:
    """Parse a rule string (a :class:`Rule` is returned as is).

    Raises:
        PolicyConfigError: the text is not a rule.
    """
    if isinstance(text, Rule):
        return text
    if not isinstance(text, str):
        raise PolicyConfigError(f"a rule must be a string, got {type(text).__name__}: {text!r}")
    m = _RULE.match(text)
    if m is None or not m["tool"]:
        raise PolicyConfigError(f"cannot parse rule {text!r}: expected 'name', 'glob*', 'toolset:NAME', "
                                "'name@version' or 'name(arg=\"glob\")'")
    tool = m["tool"]
    if any(tool == prefix for prefix in TOOLSET_PREFIXES):
        raise PolicyConfigError(f"rule {text!r}: '{tool}' needs a toolset name")
    if tool in CONTENT_TOOLS and m["args"] is not None:
        return _content_rule(text, tool, m["version"], m["args"])
    arguments = _parse_arguments(text, m["args"]) if m["args"] is not None else {}
    return Rule(text=text.strip(), tool=tool, version=m["version"], arguments=arguments)


def _content_rule(text: str, kind: str, version: str | None, args: str) -> Rule:
    """``resource(server="glob", uri="glob")`` or ``prompt(server="glob", name="glob")``."""
    known = ("server", _CONTENT_ARGUMENTS[kind])
    arguments = _parse_arguments(text, args)
    unknown = sorted(set(arguments) - set(known))
    if unknown or version is not None:
        raise PolicyConfigError(f"rule {text!r}: a {kind}(...) rule takes {known[0]}=\"glob\" and "
                                f"{known[1]}=\"glob\" only" + (f", not {', '.join(unknown)}" if unknown else ""))
    server = arguments.pop("server", "*")
    if not server or _CONTENT_SEP in server or any(c in server for c in "()@ "):
        raise PolicyConfigError(f"rule {text!r}: server={server!r} is not a server name (or a glob of one)")
    return Rule(text=text.strip(), tool=content_tool(kind, server), arguments=arguments, content=kind)


def _parse_arguments(text: str, args: str) -> dict[str, str]:
    try:
        node = ast.parse(f"_({args})", mode="eval").body
    except SyntaxError as exc:
        raise PolicyConfigError(f"rule {text!r}: arguments must look like name=\"glob\": {exc.msg}") from exc
    assert isinstance(node, ast.Call)
    if node.args:
        raise PolicyConfigError(f"rule {text!r}: arguments must be given by name, as name=\"glob\"")
    out: dict[str, str] = {}
    for kw in node.keywords:
        if kw.arg is None or not isinstance(kw.value, ast.Constant) or not isinstance(kw.value.value, str):
            raise PolicyConfigError(f"rule {text!r}: each argument must be name=\"glob\" with a string glob")
        out[kw.arg] = kw.value.value
    if not out:
        raise PolicyConfigError(f"rule {text!r}: empty argument list; drop the parentheses")
    return out


def exact_rule(name: str, version: str | None, arguments: Mapping[str, Any]) -> Rule:
    """A rule no wider than one approved call: this tool, this version, exactly these arguments."""
    exact = canonical_json(dict(arguments))
    pinned = f"{name}@{version}" if version else name
    return Rule(text=f"{pinned} with arguments == {exact}", tool=_escape_glob(name), version=version,
                exact_arguments=exact)


def _escape_glob(name: str) -> str:
    return "".join(f"[{c}]" if c in _GLOB else c for c in name)
