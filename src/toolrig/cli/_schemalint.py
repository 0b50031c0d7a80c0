"""Schema-quality lint for ``toolrig check``: parameter shapes that models fill badly.

Every property of the input schema is visited, nested ones included (through ``properties``,
``additionalProperties``, ``items``, ``prefixItems``, ``anyOf`` / ``oneOf`` / ``allOf`` and local
``$ref``\\ s, each reference followed once per path, so a recursive model ends the walk):

* ``parameter-name``: a name that is not snake_case (``userName``, ``User-ID``);
* ``deep-nesting``: values nested more than :data:`MAX_NESTING` levels deep (``a.b.c.d``: four), or a
  recursive shape with no depth bound at all;
* ``undocumented-parameter``: a nested property without a description (top-level ones are checked by
  :mod:`toolrig.cli._lint`);
* ``free-text-enum``: a string whose description lists its allowed values (``'asc' or 'desc'``,
  ``one of: low, medium, high``) instead of an ``enum``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_NESTING", "SchemaIssue", "schema_issues", "snake_case"]

MAX_NESTING = 3
"""Deepest nesting a model fills reliably (``a.b.c``: three levels below the arguments)."""

_BUDGET = 20_000
"""Schema nodes visited at most per tool (a schema of many references to references stays cheap)."""

_SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
_QUOTED = r"""(?:'[^'\s][^']{0,40}'|"[^"\s][^"]{0,40}"|`[^`\s][^`]{0,40}`)"""
_WORD = r"[\w.+-]{1,24}"
_SEP = r"(?:\s*[,/|]\s*(?:or\s+)?|\s+or\s+)"
_QUOTED_CHOICES = re.compile(rf"{_QUOTED}(?:{_SEP}{_QUOTED})+")
_NAMED_CHOICES = re.compile(
    r"\b(?:one of|possible values|allowed values|valid values|accepted values|supported values|choices|options)"
    rf"(?:\s+(?:are|is|include))?\s*:?\s*{_WORD}(?:{_SEP}{_WORD})+", re.IGNORECASE)
_BRACKETED_CHOICES = re.compile(rf"\(\s*{_WORD}(?:\s*[,/]\s*{_WORD})*(?:\s*,?\s+or\s+|\s*\|\s*){_WORD}\s*\)")
_DESCRIPTION_READ = 2000
"""Characters of a description searched for a list of values."""
_EXAMPLES = re.compile(r"(?:e\.g\.|i\.e\.|for example|for instance|such as|like)\W*$", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class SchemaIssue:
    """One schema-quality problem: a lint code and a message naming the parameter."""

    code: str
    message: str


def snake_case(name: str) -> str:
    """``name`` spelled in snake_case (``userName`` → ``user_name``, ``User-ID`` → ``user_id``)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return re.sub(r"[^a-z0-9]+", "_", spaced.lower()).strip("_") or "param"


def schema_issues(schema: Mapping[str, Any]) -> list[SchemaIssue]:
    """The schema-quality issues of one tool's input schema, in a stable order."""
    walk = _Walk(schema)
    walk.visit(schema, (), frozenset())
    issues = list(walk.issues)
    if walk.recursive is not None:
        issues.append(SchemaIssue(code="deep-nesting", message=(
            f"parameter {_dotted(walk.recursive)!r} is recursive: its values can nest without bound; give "
            "models a flat shape (ids, or a list of flat records)")))
    elif len(walk.deepest) > MAX_NESTING:
        depth = len(walk.deepest)
        least = "at least " if depth > MAX_NESTING + 1 else ""  # the walk stops one level past the limit
        issues.append(SchemaIssue(code="deep-nesting", message=(
            f"values nest {least}{depth} levels deep ({_dotted(walk.deepest)}); models fill more than "
            f"{MAX_NESTING} levels poorly: flatten the parameters")))
    return issues


def _dotted(path: tuple[str, ...]) -> str:
    out = ""
    for part in path:
        out += part if part.startswith("[") else f".{part}" if out else part
    return out


class _Walk:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.issues: list[SchemaIssue] = []
        self.deepest: tuple[str, ...] = ()
        self.recursive: tuple[str, ...] | None = None
        self._named: set[tuple[str, ...]] = set()
        self._budget = _BUDGET

    def visit(self, schema: Any, path: tuple[str, ...], refs: frozenset[str]) -> None:
        """Visit the value at ``path`` described by ``schema`` (its alternatives and children)."""
        for sub, seen in self._alternatives(schema, path, refs):
            self._budget -= 1
            if self._budget < 0:
                return
            self._children(sub, path, seen)

    def _alternatives(self, schema: Any, path: tuple[str, ...], refs: frozenset[str]
                      ) -> Iterator[tuple[Mapping[str, Any], frozenset[str]]]:
        if not isinstance(schema, Mapping):
            return
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            if ref in refs:
                self.recursive = self.recursive or path
                return
            target = _resolve(self.root, ref)
            if isinstance(target, Mapping):
                yield from self._alternatives({**target, **{k: v for k, v in schema.items() if k != "$ref"}},
                                              path, refs | {ref})
            return
        yield schema, refs
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in schema.get(key) or ():
                yield from self._alternatives(sub, path, refs)

    def _children(self, schema: Mapping[str, Any], path: tuple[str, ...], refs: frozenset[str]) -> None:
        props = schema.get("properties")
        for name, sub in props.items() if isinstance(props, Mapping) else ():
            self._property(str(name), sub, (*path, str(name)), refs)
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and extra:
            self._deeper((*path, "*"), extra, refs)
        items = schema.get("items")
        for i, sub in enumerate(schema.get("prefixItems") or (items if isinstance(items, list) else ())):
            self._deeper((*path, f"[{i}]"), sub, refs)
        if isinstance(items, Mapping):
            self._deeper((*path, "[]"), items, refs)

    def _deeper(self, path: tuple[str, ...], schema: Any, refs: frozenset[str]) -> None:
        if len(path) > len(self.deepest):
            self.deepest = path
        if len(path) <= MAX_NESTING + 1:  # no need to look further: one more level is already too deep
            self.visit(schema, path, refs)
        elif self.recursive is None and isinstance(schema, Mapping) and "$ref" in schema:
            self.visit(schema, path, refs)  # only to notice a recursive shape

    def _property(self, name: str, schema: Any, path: tuple[str, ...], refs: frozenset[str]) -> None:
        self._deeper(path, schema, refs)
        if path in self._named:
            return
        self._named.add(path)
        shown = _dotted(path)
        if not _SNAKE.fullmatch(name):
            self.issues.append(SchemaIssue(code="parameter-name", message=(
                f"parameter {shown!r} is not snake_case; models follow snake_case names best "
                f"(e.g. {snake_case(name)!r})")))
        merged = _merged(self.root, schema)
        description = merged.get("description")
        if len(path) > 1 and not description:
            self.issues.append(SchemaIssue(code="undocumented-parameter", message=(
                f"parameter {shown!r} has no description; give the field one (Field(description=...))")))
        if isinstance(description, str) and _free_text_enum(merged, description):
            self.issues.append(SchemaIssue(code="free-text-enum", message=(
                f"parameter {shown!r} lists its allowed values in its description; declare them as an enum "
                "(a Literal[...] or an Enum) so models and validation both know them")))


def _types(schema: Mapping[str, Any]) -> list[str]:
    t = schema.get("type")
    return [t] if isinstance(t, str) else [x for x in t if isinstance(x, str)] if isinstance(t, list) else []


def _resolve(root: Mapping[str, Any], ref: str) -> Any:
    node: Any = root
    for part in ref[2:].split("/"):
        node = node.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(node, Mapping) else None
    return node


def _merged(root: Mapping[str, Any], schema: Any) -> Mapping[str, Any]:
    """``schema`` with one local ``$ref`` merged in (the property's own keys win)."""
    if not isinstance(schema, Mapping):
        return {}
    ref = schema.get("$ref")
    target = _resolve(root, ref) if isinstance(ref, str) and ref.startswith("#/") else None
    return {**target, **schema} if isinstance(target, Mapping) else schema


def _free_text_enum(schema: Mapping[str, Any], description: str) -> bool:
    """A string without an enum whose description spells out a list of allowed values."""
    if "enum" in schema or "const" in schema:
        return False
    alternatives = [s for key in ("anyOf", "oneOf") for s in schema.get(key) or () if isinstance(s, Mapping)]
    if any("enum" in s or "const" in s for s in alternatives):
        return False
    types = {t for s in (schema, *alternatives) for t in _types(s)}
    if types - {"string", "null"} or (types and "string" not in types):
        return False
    description = description[:_DESCRIPTION_READ]
    if _NAMED_CHOICES.search(description) or _BRACKETED_CHOICES.search(description):
        return True
    return any(not _EXAMPLES.search(description[:m.start()])  # examples are not the allowed values
               for m in _QUOTED_CHOICES.finditer(description))
