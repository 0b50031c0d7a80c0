"""``toolrig package scan | install | pin | verify | list | forget``: tool packages, scanned before they are used.

``scan`` exits 0 when nothing undeclared or dangerous is found, 1 when the package would be blocked, 2 on a
usage error (no such file, not a wheel / sdist / folder); ``--json`` prints ``{"ok": ..., "findings": [...]}``.
``install`` exits 0 when the package was installed and pinned, 1 when it was refused.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from toolrig.cli._common import fail, print_json, stdout
from toolrig.fencing import sanitize

if TYPE_CHECKING:
    from toolrig.packages import ScanReport

__all__ = ["register"]

package_app = typer.Typer(name="package", no_args_is_help=True,
                          help="Tool packages: scan a wheel, sdist or folder without running it; install only what "
                               "passes; verify installed packages against their pins.")
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
_STYLES = {"critical": "bold red", "high": "red", "medium": "yellow", "low": "cyan", "info": "dim"}


def _show(report: ScanReport) -> None:
    console = stdout()
    for finding in report.findings:
        line = Text(f"{sanitize(finding.file) or '(package)'}{':' + str(finding.line) if finding.line else ''}  ")
        line.append(f"{finding.severity:<8}", style=_STYLES[finding.severity])
        line.append(f" {finding.rule}: {sanitize(finding.reason)}")
        console.print(line)
    title = f"{report.name or '(unnamed)'} {report.version}".strip() + f" ({report.kind})"
    blocking = len(report.blocking)
    verdict = (Text(f"{title}: ok, nothing undeclared or dangerous", style="green") if report.ok else
               Text(f"{title}: BLOCKED, {blocking} blocking finding{'s' if blocking != 1 else ''}", style="bold red"))
    console.print(verdict)


@package_app.command("scan")
def scan_command(path: Annotated[str, typer.Argument(metavar="PATH|WHEEL|SDIST",
                                                     help="A source folder, a wheel (.whl) or an sdist (.tar.gz).")],
                 as_json: JsonOpt = False,
                 bandit: Annotated[bool, typer.Option("--bandit/--no-bandit",
                                                      help="Add bandit's advisory findings where installed.")] = True,
                 ) -> None:
    """Scan a tool package without importing or running it (exit 0 ok, 1 blocked, 2 usage error)."""
    from toolrig.packages import UsageError, scan

    try:
        report = scan(path, use_bandit=bandit)
    except UsageError as exc:
        fail(str(exc), code=2)
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        _show(report)
    raise typer.Exit(0 if report.ok else 1)


@package_app.command("install")
def install_command(spec: Annotated[str, typer.Argument(help="A wheel, sdist, source folder or requirement.")],
                    python: Annotated[str | None, typer.Option("--python", metavar="PYTHON",
                                                               help="Install into this interpreter's environment.")]
                    = None,
                    no_deps: Annotated[bool, typer.Option("--no-deps", help="Do not install dependencies.")] = False,
                    offline: Annotated[bool, typer.Option("--offline", help="Never reach a package index.")] = False,
                    as_json: JsonOpt = False) -> None:
    """Scan a tool package's wheel and install it only if the scan passes; pin what was scanned."""
    from toolrig.packages import UsageError, install_package

    try:
        result = install_package(spec, python=python, deps=not no_deps, offline=offline)
    except UsageError as exc:
        fail(str(exc), code=2)
    if as_json:
        print_json({"installed": result.installed, "problems": list(result.problems),
                    "scans": [r.to_dict() for r in result.reports]})
    else:
        for report in result.reports:
            _show(report)
        for problem in result.problems:
            typer.echo(f"refused: {sanitize(problem)}", err=True)
        if result.installed:
            name = result.reports[-1].name
            stdout().print(Text(f"installed and pinned {name} {result.reports[-1].version}", style="green"))
    raise typer.Exit(0 if result.installed else 1)


@package_app.command("pin")
def pin_command(name: Annotated[str, typer.Argument(help="An installed distribution.")],
                as_json: JsonOpt = False) -> None:
    """Scan an already installed package from its installed files and pin it if it passes (exit 1 if not)."""
    from toolrig.errors import LoadError
    from toolrig.packages import pin_installed

    try:
        result = pin_installed(name)
    except LoadError as exc:
        fail(str(exc), code=2)
    if as_json:
        print_json({"pinned": result.installed, "problems": list(result.problems),
                    "scans": [r.to_dict() for r in result.reports]})
    else:
        for report in result.reports:
            _show(report)
        for problem in result.problems:
            typer.echo(f"refused: {sanitize(problem)}", err=True)
        if result.installed:
            stdout().print(Text(f"pinned {result.reports[-1].name} {result.reports[-1].version}", style="green"))
    raise typer.Exit(0 if result.installed else 1)


@package_app.command("verify")
def verify_command(name: Annotated[str, typer.Argument(help="The installed tool package.")]) -> None:
    """Check an installed tool package against its pin (exit 0 it matches, 1 it would be refused)."""
    from toolrig.errors import LoadError
    from toolrig.packages import check_package

    try:
        dist, record = check_package(name)
    except LoadError as exc:
        fail(str(exc))
    stdout().print(Text(f"{name} {dist.version}: matches its scan ({len(record.get('hashes', {}))} files pinned)"))


@package_app.command("list")
def list_command(as_json: JsonOpt = False) -> None:
    """The pinned tool packages."""
    from toolrig.mcp import open_pins

    records: list[dict[str, Any]] = open_pins().package_pins()
    if as_json:
        print_json([{k: r.get(k) for k in ("name", "version", "at", "by", "source", "manifest")} for r in records])
        return
    if not records:
        typer.echo("no tool packages are pinned")
    for record in records:
        typer.echo(f"{record['name']} {record['version']}  ({len(record.get('hashes', {}))} files)")


@package_app.command("forget")
def forget_command(name: Annotated[str, typer.Argument(help="The tool package.")]) -> None:
    """Drop a tool package's pin (it will not load until installed again)."""
    from packaging.utils import canonicalize_name

    from toolrig.mcp import open_pins

    pins, wanted = open_pins(), canonicalize_name(name)
    if pins.package_pin(wanted) is None:  # saying "forgot" would hide a typo in the name
        pinned = ", ".join(sorted(str(r["name"]) for r in pins.package_pins())) or "none"
        fail(f"tool package {wanted!r} is not pinned (pinned: {pinned})")
    pins.forget_package(wanted)
    typer.echo(f"forgot {wanted}")


def register(app: typer.Typer) -> None:
    """Add ``toolrig package ...`` to ``app``."""
    app.add_typer(package_app)
