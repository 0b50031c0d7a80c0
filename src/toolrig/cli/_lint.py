"""Definition lint for ``toolrig check``: problems a model or an operator would trip over.

Core definition checks (legal names, JSON-safe schemas, LLM-friendly types) already fail at
definition time; these are the softer findings a definition can still have, the schema's quality
among them (:mod:`toolrig.cli._schemalint`: snake_case names, nesting depth, nested descriptions,
enums written as free text).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum

from toolrig._define import BaseTool
from toolrig._spec import Permission
from toolrig.cli._schemalint import schema_issues

__all__ = ["MIN_DESCRIPTION_WORDS", "Finding", "Severity", "lint_tool", "lint_tools"]

MIN_DESCRIPTION_WORDS = 3
"""A description shorter than this many words rarely tells a model when to use the tool."""


class Severity(StrEnum):
    """``error`` always fails ``toolrig check``; ``warning`` fails it only with ``--strict``."""

    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One lint finding about one tool."""

    code: str
    severity: Severity
    message: str

    def to_dict(self) -> dict[str, str]:
        """Plain form."""
        return {"code": self.code, "severity": self.severity.value, "message": self.message}


def lint_tool(tool: BaseTool) -> list[Finding]:
    """The findings for one tool, in a stable order."""
    return list(_lint(tool))


def _lint(tool: BaseTool) -> Iterator[Finding]:
    spec = tool.spec
    if not spec.description.strip():
        yield Finding(code="missing-description", severity=Severity.WARNING,
                      message="the tool has no description; say what it does, when to use it and what it returns")
    elif len(spec.description.split()) < MIN_DESCRIPTION_WORDS:
        yield Finding(code="short-description", severity=Severity.WARNING,
                      message=f"description {spec.description!r} is too short to tell a model when to use "
                              "the tool; say what it does and returns")
    properties = spec.input_schema.get("properties", {})
    for pname, schema in properties.items():
        if isinstance(schema, dict) and not schema.get("description") and "$ref" not in schema:
            yield Finding(code="undocumented-parameter", severity=Severity.WARNING,
                          message=f"parameter {pname!r} has no description; add it to the docstring's Args")
    for issue in schema_issues(spec.input_schema):
        yield Finding(code=issue.code, severity=Severity.WARNING, message=issue.message)
    if spec.permission in (Permission.DESTRUCTIVE, Permission.SYSTEM) and not spec.requires_approval:
        yield Finding(code="no-approval", severity=Severity.WARNING,
                      message=f"permission is {spec.permission.value} but requires_approval is False; "
                              "a human should confirm such calls")
    if spec.deprecated:
        yield Finding(code="deprecated", severity=Severity.WARNING, message=f"deprecated: {spec.deprecated}")


def lint_tools(tools: Sequence[BaseTool]) -> dict[str, list[Finding]]:
    """Findings per tool key (``name@version``), including duplicates across the whole set."""
    out = {t.spec.key: lint_tool(t) for t in tools}
    for key, count in Counter(t.spec.key for t in tools).items():
        if count > 1:
            out[key].insert(0, Finding(code="duplicate", severity=Severity.ERROR,
                                       message=f"{count} tools are defined as {key}; a registry keeps only one"))
    return out
