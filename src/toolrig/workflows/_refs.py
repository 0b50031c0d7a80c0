"""References and conditions: JMESPath expressions over a run's data, never ``eval``, never a template engine.

An argument string may hold references, ``${expression}``: ``"${inputs.city}"`` (a whole-string reference keeps
the JSON type of what it finds) or ``"Weather in ${inputs.city}"`` (inside a longer string it is rendered as text:
a string as is, anything else as JSON). ``$${`` writes a literal ``${``. A condition is one expression (the
``${...}`` around it is optional). Expressions are JMESPath (the ``jmespath`` library: paths, filters,
comparisons, a fixed set of pure functions), evaluated over::

    {"inputs": {...}, "steps": {"<id>": {"status", "output", "error"}}, "item": ..., "index": ..., "run": {...}}

Every expression is compiled when the workflow is defined: a malformed one, or one that starts anywhere but at
``inputs``, ``steps``, ``item``, ``index`` or ``run``, is a definition error.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError
from jmespath.parser import ParsedResult

from toolrig.errors import DefinitionError

__all__ = ["FUNCTIONS", "ROOTS", "Expression", "Template", "compile_expression", "parse_text", "render", "root_paths",
           "truthy"]

ROOTS = frozenset({"inputs", "steps", "item", "index", "run"})
"""Where an expression may start."""

MAX_EXPRESSION = 2000
"""Characters an expression may have."""

FUNCTIONS = frozenset({
    "abs", "avg", "ceil", "contains", "ends_with", "floor", "join", "keys", "length", "map", "max", "max_by", "merge",
    "min", "min_by", "not_null", "reverse", "sort", "sort_by", "starts_with", "sum", "to_array", "to_number",
    "to_string", "type", "values",
})
"""The functions of the JMESPath specification: the only ones an expression may call (pure, on JSON data)."""

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Expression:
    """One compiled JMESPath expression and its source text."""

    source: str
    parsed: ParsedResult

    def evaluate(self, data: Mapping[str, Any]) -> Any:
        """The expression's value over ``data`` (JMESPath: a missing path is None).

        Raises:
            JMESPathError: a function was given a value of the wrong type (e.g. ``length(`5`)``).
        """
        return self.parsed.search(data)

    def paths(self) -> list[Path]:
        """The paths the expression reads from the root, e.g. ``("steps", "search", "output", "items", 0)``."""
        return list(root_paths(self.parsed.parsed))


def compile_expression(source: str, where: str) -> Expression:
    """Compile ``source`` (``${...}`` around it allowed).

    Raises:
        DefinitionError: it is not JMESPath, is too long, or starts outside :data:`ROOTS`.
    """
    text = source.strip()
    if text.startswith("${") and text.endswith("}") and _closing(text, 2) == len(text) - 1:
        text = text[2:-1].strip()
    if not text:
        raise DefinitionError(f"{where}: an empty expression")
    if len(text) > MAX_EXPRESSION:
        raise DefinitionError(f"{where}: an expression of {len(text):,} characters (at most {MAX_EXPRESSION:,})")
    try:
        with warnings.catch_warnings():  # jmespath's deprecated `not json` literals: refused, not guessed at
            warnings.simplefilter("error", PendingDeprecationWarning)
            parsed = jmespath.compile(text)
    except (JMESPathError, ValueError, TypeError, RecursionError, PendingDeprecationWarning) as exc:
        raise DefinitionError(f"{where}: {text!r} is not a JMESPath expression: {' '.join(str(exc).split())}"
                              ) from None
    expression = Expression(text, parsed)
    unknown = sorted(set(_functions(parsed.parsed)) - FUNCTIONS)
    if unknown:
        raise DefinitionError(f"{where}: {text!r} calls {', '.join(unknown)}, which JMESPath does not have (its "
                              f"functions: {', '.join(sorted(FUNCTIONS))})")
    for path in expression.paths():
        if path and path[0] not in ROOTS:
            raise DefinitionError(f"{where}: {text!r} reads {path[0]!r}; an expression starts at one of "
                                  f"{', '.join(sorted(ROOTS))}")
    return expression


@dataclass(frozen=True)
class Template:
    """A string with references: literal text and expressions, in order."""

    source: str
    parts: tuple[str | Expression, ...]

    @property
    def whole(self) -> Expression | None:
        """The expression, when the string is exactly one reference (its value keeps its JSON type)."""
        if len(self.parts) == 1 and isinstance(self.parts[0], Expression):
            return self.parts[0]
        return None

    def expressions(self) -> list[Expression]:
        """The references in the string."""
        return [p for p in self.parts if isinstance(p, Expression)]

    def render(self, data: Mapping[str, Any]) -> Any:
        """The value: the reference's own for a whole-string reference, else the text with each rendered."""
        whole = self.whole
        if whole is not None:
            return whole.evaluate(data)
        return "".join(p if isinstance(p, str) else _as_text(p.evaluate(data)) for p in self.parts)


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _closing(text: str, start: int) -> int:
    """The index of the ``}`` that closes a reference whose expression starts at ``start``, or -1.

    Braces inside JMESPath string literals (``'...'``, ``"..."``, ```...```) do not count; ``{}`` pairs of
    multi-select hashes nest.
    """
    depth, i, quote = 0, start, ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"`":
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    return -1


def parse_text(text: str, where: str) -> str | Template:
    """``text`` as a literal (``$${`` unescaped) or as a :class:`Template` when it holds references.

    Raises:
        DefinitionError: a reference is not closed, or its expression does not compile.
    """
    if "${" not in text:
        return text
    parts: list[str | Expression] = []
    literal: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("$${", i):
            literal.append("${")
            i += 3
        elif text.startswith("${", i):
            end = _closing(text, i + 2)
            if end < 0:
                raise DefinitionError(f"{where}: a reference '${{' is not closed by '}}' in {text[:200]!r}")
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append(compile_expression(text[i + 2:end], where))
            i = end + 1
        else:
            literal.append(text[i])
            i += 1
    if literal:
        parts.append("".join(literal))
    if not any(isinstance(p, Expression) for p in parts):
        return "".join(p for p in parts if isinstance(p, str))
    return Template(text, tuple(parts))


def render(value: Any, data: Mapping[str, Any]) -> Any:
    """``value`` (parsed arguments: templates, literals, lists, objects) with every reference resolved."""
    if isinstance(value, Template):
        return value.render(data)
    if isinstance(value, Mapping):
        return {k: render(v, data) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [render(v, data) for v in value]
    return value


def truthy(value: Any) -> bool:
    """JMESPath truth: false, null, and empty strings, lists and objects are false; everything else is true."""
    if value is None or value is False:
        return False
    if isinstance(value, str | list | tuple | Mapping):
        return len(value) > 0
    return True


_LEFT_ONLY = frozenset({"subexpression", "index_expression", "pipe", "projection", "value_projection",
                        "filter_projection", "flatten"})


def _prefix(node: Mapping[str, Any]) -> tuple[list[str | int], bool]:
    """The simple path at the head of ``node`` (fields and indexes from the root), and whether it is all of it."""
    kind = node.get("type")
    children = node.get("children") or []
    if kind == "field":
        return [node["value"]], True
    if kind == "index_expression" and len(children) == 2:
        head, complete = _prefix(children[0])
        if complete and children[1].get("type") == "index" and isinstance(children[1].get("value"), int):
            return [*head, children[1]["value"]], True
        return head, False
    if kind == "subexpression" and children:
        head, complete = _prefix(children[0])
        for child in children[1:]:
            if not complete:
                break
            more, complete = _prefix(child)
            head = [*head, *more]
        return head, complete
    if kind in ("projection", "value_projection", "filter_projection", "flatten") and children:
        return _prefix(children[0])[0], False
    return [], False


def _functions(node: Mapping[str, Any]) -> Iterator[str]:
    """The names of the functions an expression's AST calls."""
    if node.get("type") == "function_expression":
        yield str(node.get("value"))
    for child in node.get("children") or ():
        if isinstance(child, Mapping):
            yield from _functions(child)


def root_paths(node: Mapping[str, Any]) -> Iterator[Path]:
    """Every path an expression's AST reads from the root (not those read relative to a projection's items)."""
    head, _ = _prefix(node)
    if head:
        yield tuple(head)
        return
    kind = node.get("type")
    children = node.get("children") or []
    if kind == "expref":
        return
    for child in children[:1] if kind in _LEFT_ONLY else children:
        if isinstance(child, Mapping):
            yield from root_paths(child)
