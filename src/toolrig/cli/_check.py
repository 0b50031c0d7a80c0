"""``toolrig check``: lint every tool of a source and check it against each provider.

Exit codes: 0 when nothing failed; 1 when the source cannot be loaded, a tool has an
``error`` finding (e.g. a duplicate ``name@version``), or a provider cannot represent part of
a tool (an *unsupported* item). ``--strict`` makes lint warnings fail too. Provider *changes*
(the exporter adapted the schema without losing meaning) are reported, never failures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from rich.markup import escape

from toolrig._define import BaseTool
from toolrig.cli._common import fail, load_tools, print_json, stdout
from toolrig.cli._lint import Finding, Severity, lint_tools
from toolrig.providers import PROVIDERS

__all__ = ["ProviderResult", "ToolCheck", "check_command", "check_tools", "register"]


@dataclass(frozen=True, kw_only=True)
class ProviderResult:
    """How one provider takes one tool."""

    provider: str
    changes: tuple[str, ...]
    unsupported: tuple[str, ...]

    @property
    def status(self) -> str:
        """``unsupported``, ``changed`` or ``ok``."""
        if self.unsupported:
            return "unsupported"
        return "changed" if self.changes else "ok"

    def to_dict(self) -> dict[str, Any]:
        """Plain form."""
        return {"status": self.status, "changes": list(self.changes), "unsupported": list(self.unsupported)}


@dataclass(frozen=True, kw_only=True)
class ToolCheck:
    """Lint findings and provider results for one tool."""

    key: str
    findings: tuple[Finding, ...]
    providers: tuple[ProviderResult, ...]

    def failed(self, *, strict: bool) -> bool:
        """True when this tool makes ``toolrig check`` exit non-zero."""
        failing = {Severity.ERROR, Severity.WARNING} if strict else {Severity.ERROR}
        return any(f.severity in failing for f in self.findings) or any(p.unsupported for p in self.providers)

    def to_dict(self, *, strict: bool) -> dict[str, Any]:
        """Plain form."""
        return {"tool": self.key, "ok": not self.failed(strict=strict),
                "lint": [f.to_dict() for f in self.findings],
                "providers": {p.provider: p.to_dict() for p in self.providers}}


def _provider_result(tool: BaseTool, provider: str) -> ProviderResult:
    from toolrig import providers

    try:
        report = providers.check(tool, provider)
    except Exception as exc:  # an exporter that refuses the tool outright: report it as unsupported
        return ProviderResult(provider=provider, changes=(),
                              unsupported=(f"cannot export: {type(exc).__name__}: {exc}",))
    return ProviderResult(provider=provider, changes=tuple(str(c) for c in report.changes),
                          unsupported=tuple(str(u) for u in report.unsupported))


def check_tools(tools: Sequence[BaseTool], providers: Sequence[str] = PROVIDERS) -> list[ToolCheck]:
    """Lint ``tools`` and check each against ``providers``, sorted by tool key."""
    findings = lint_tools(tools)
    seen: set[str] = set()
    out = []
    for t in sorted(tools, key=lambda t: (t.name, t.spec.parsed_version)):
        if t.spec.key in seen:
            continue
        seen.add(t.spec.key)
        results = tuple(_provider_result(t, p) for p in providers)
        out.append(ToolCheck(key=t.spec.key, findings=tuple(findings[t.spec.key]), providers=results))
    return out


_PROVIDER_HELP = f"Check only these providers (repeatable): {', '.join(PROVIDERS)}."
_STYLE = {"ok": "green", "changed": "yellow", "unsupported": "red", "error": "red", "warning": "yellow"}


def _print_report(checks: Sequence[ToolCheck], *, strict: bool) -> None:
    console = stdout()
    for c in checks:
        mark = "[red]FAIL[/red]" if c.failed(strict=strict) else "[green]ok[/green]"
        console.print(f"[bold]{escape(c.key)}[/bold]  {mark}")
        if not c.findings:
            console.print("  lint: [green]ok[/green]")
        for f in c.findings:
            console.print(f"  lint: [{_STYLE[f.severity]}]{f.severity}[/] {f.code}: {escape(f.message)}")
        for p in c.providers:
            console.print(f"  {p.provider}: [{_STYLE[p.status]}]{p.status}[/]")
            for line in p.unsupported:
                console.print(f"    [red]unsupported[/red]: {escape(line)}")
            for line in p.changes:
                console.print(f"    changed: {escape(line)}")
    failed = sum(c.failed(strict=strict) for c in checks)
    warnings = sum(f.severity is Severity.WARNING for c in checks for f in c.findings)
    colour = "red" if failed else "green"
    console.print(f"[{colour}]{len(checks)} tools checked: {failed} failed, {warnings} lint warnings[/]"
                  + (" (strict)" if strict else ""))


def check_command(
    source: Annotated[str, typer.Option(
        "--from", "-f", metavar="SOURCE", help="Python file, directory or module name to check.")],
    provider: Annotated[list[str] | None, typer.Option(
        "--provider", "-p", metavar="PROVIDER", help=_PROVIDER_HELP)] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Fail on lint warnings too.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Lint every tool in SOURCE and check it against each provider; exit 1 when any fails."""
    provider = provider or []
    unknown = sorted(set(provider) - set(PROVIDERS))
    if unknown:
        fail(f"unknown provider(s) {', '.join(unknown)}; choose from: {', '.join(PROVIDERS)}", code=2)
    tools = load_tools(source)
    if not tools:
        fail(f"no tools found in {source}")
    checks = check_tools(tools, tuple(provider) or PROVIDERS)
    if as_json:
        print_json([c.to_dict(strict=strict) for c in checks])
    else:
        _print_report(checks, strict=strict)
    if any(c.failed(strict=strict) for c in checks):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``check`` to ``app``."""
    app.command("check")(check_command)
