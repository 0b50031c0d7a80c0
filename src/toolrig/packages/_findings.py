"""What a scan found: :class:`Finding` records and the :class:`ScanReport` that holds them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["BLOCKING", "Finding", "ScanReport", "Severity"]

Severity = Literal["info", "low", "medium", "high", "critical"]
BLOCKING: frozenset[str] = frozenset({"high", "critical"})
"""Severities that block a package (undeclared use, dangerous code); lower ones are shown, not enforced."""


@dataclass(frozen=True, kw_only=True, order=True)
class Finding:
    """One thing the scan noticed.

    Attributes:
        file: the path inside the package (``weather_pkg/tools.py``; ``""`` for the package as a whole).
        line: 1-based line (0 when not about a line).
        rule: a stable rule id (``exec``, ``undeclared-network``, ``pth-file`` ...; ``bandit:B602`` for bandit's).
        severity: ``info`` .. ``critical``; ``high`` and ``critical`` block the package.
        reason: one line for a person.
    """

    file: str
    line: int
    rule: str
    severity: Severity
    reason: str

    @property
    def blocks(self) -> bool:
        """Whether this finding alone blocks the package."""
        return self.severity in BLOCKING

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"rule": self.rule, "file": self.file, "line": self.line, "severity": self.severity,
                "reason": self.reason, "blocks": self.blocks}

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else (self.file or "(package)")
        return f"{where}: {self.severity} [{self.rule}] {self.reason}"


@dataclass(frozen=True, kw_only=True)
class ScanReport:
    """The result of :func:`toolrig.packages.scan`.

    Attributes:
        name: the distribution's name (normalised; ``""`` when it has none).
        version: its version (``""`` when unknown).
        kind: ``wheel``, ``sdist`` or ``directory``.
        findings: everything noticed, sorted by file and line.
        hashes: SHA-256 of every file scanned, by path (what a pin records).
        manifest: the ``[tool.toolrig]`` table as found (``{}`` when there was none).
        entry_points: the ``toolrig.tools`` entry points (name -> ``module:attr``).
    """

    name: str
    version: str
    kind: str
    findings: tuple[Finding, ...]
    hashes: dict[str, str] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    entry_points: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when nothing blocks the package."""
        return not any(f.blocks for f in self.findings)

    @property
    def blocking(self) -> list[Finding]:
        """The findings that block it."""
        return [f for f in self.findings if f.blocks]

    def to_dict(self) -> dict[str, Any]:
        """``{"ok": ..., "findings": [...]}`` plus the package's name, version, kind and entry points."""
        return {"ok": self.ok, "findings": [f.to_dict() for f in self.findings], "name": self.name,
                "version": self.version, "kind": self.kind, "entry_points": self.entry_points}
