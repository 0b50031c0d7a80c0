"""``scan(path)``: the whole static scan of a wheel, an sdist or a source folder (see ``docs/packages.md``)."""

from __future__ import annotations

import ast
import hashlib
from importlib.metadata import Distribution
from pathlib import Path, PurePosixPath

from packaging.utils import canonicalize_name

from toolrig.packages._archive import MAX_FILE_BYTES, PackageFiles, read_package
from toolrig.packages._astscan import Effect, scan_python, text_findings
from toolrig.packages._bandit import bandit_findings
from toolrig.packages._compare import compare
from toolrig.packages._confusion import confusion
from toolrig.packages._findings import Finding, ScanReport
from toolrig.packages._metadata import PackageMetadata, read_metadata

__all__ = ["installed_files", "scan", "scan_files"]

_NATIVE = (".so", ".pyd", ".dll", ".dylib")
_COMPILED = (".pyc", ".pyo")
_STARTUP = frozenset({"sitecustomize", "usercustomize"})


def _file_rules(name: str, data: bytes) -> list[Finding]:
    base = PurePosixPath(name).name
    stem = base.rsplit(".", 1)[0]
    out: list[Finding] = []

    def add(rule: str, severity: str, reason: str) -> None:
        out.append(Finding(file=name, line=0, rule=rule, severity=severity, reason=reason))  # type: ignore[arg-type]

    if base.endswith(".pth"):
        add("pth-file", "critical", "a .pth file runs code (or changes sys.path) in every Python process")
    elif base.endswith(_NATIVE) or ".cpython-" in base:
        add("native-code", "high", "compiled native code: the scan cannot see what it does")
    elif base.endswith(_COMPILED):
        add("compiled-code", "high", "compiled Python bytecode: the scan cannot see what it does")
    if stem in _STARTUP and base.endswith(".py"):
        add("startup-hook", "critical", f"{base} runs in every Python process that can import it")
    return out


def _is_python(name: str, data: bytes) -> bool:
    return name.endswith((".py", ".pyw")) or (data.startswith(b"#!") and b"python" in data.split(b"\n", 1)[0])


def _install_time(name: str, meta: PackageMetadata) -> bool:
    return any(name == path or (path.endswith("/") and name.startswith(path)) for path in meta.install_time)


def _module_files(names: set[str], module: str) -> bool:
    """Whether the package holds ``module`` (``a.b``: ``a/b.py`` or ``a/b/__init__.py``, also under ``src/``)."""
    base = module.replace(".", "/")
    candidates = {f"{base}.py", f"{base}/__init__.py"}
    return any(n in candidates or n.removeprefix("src/") in candidates or
               (n.split("/", 2)[0].endswith(".data") and n.split("/", 2)[-1] in candidates) for n in names)


def _package_rules(meta: PackageMetadata, names: set[str]) -> list[Finding]:
    out: list[Finding] = []

    def add(rule: str, severity: str, reason: str, file: str = "") -> None:
        out.append(Finding(file=file, line=0, rule=rule, severity=severity, reason=reason))  # type: ignore[arg-type]

    if meta.name:
        found = confusion(meta.name)
        if found:
            add(found[0], "high", found[1])
    if not meta.entry_points:
        add("not-a-tool-package", "high", "no entry point in the 'toolrig.tools' group (found statically)")
    declared = set(meta.manifest.tools)
    for ep_name, value in meta.entry_points.items():
        top = value.split(":", 1)[0].split(".", 1)[0].strip()
        module = value.split(":", 1)[0].strip()
        if meta.modules and top not in meta.modules:
            add("foreign-entry-point", "high", f"entry point {ep_name} = {value} loads code from outside the package")
        elif not _module_files(names, module):
            add("missing-entry-point-module", "high", f"entry point {ep_name} = {value}: the package has no {module}")
        if meta.manifest.declared and value.replace(" ", "") not in declared:
            add("undeclared-tool", "high", f"entry point {ep_name} = {value} is not in the manifest's tools")
    values = {v.replace(" ", "") for v in meta.entry_points.values()}
    for ref in sorted(declared - values):
        add("tool-not-exposed", "medium", f"the manifest lists {ref} but no toolrig.tools entry point loads it")
    dependencies = {canonicalize_name(r.name) for r in meta.dependencies}
    for req in meta.manifest.requires:
        found = confusion(req.name)
        if found:
            add(found[0], "high", f"requires: {found[1]}")
        if canonicalize_name(req.name) not in dependencies:
            add("requires-undeclared", "high",
                f"requires {req.name}, which is not among the distribution's own dependencies")
    return out


def scan_files(files: PackageFiles, *, use_bandit: bool = True) -> ScanReport:
    """Scan files already read (see :func:`scan`)."""
    meta = read_metadata(files)
    findings: list[Finding] = [*files.problems, *meta.findings]
    effects: list[Effect] = []
    python: dict[str, bytes] = {}
    for name, data in sorted(files.files.items()):
        findings += _file_rules(name, data)
        if _is_python(name, data):
            result = scan_python(name, data)
            findings += result.findings
            effects += result.effects
            python[name] = data
        else:
            findings += text_findings(name, data.decode("utf-8", "replace"))
    if files.kind == "wheel":
        findings += _install_places(files, meta)
    install_time = frozenset(n for n in python if _install_time(n, meta))
    findings += _setup_commands(python, install_time)
    findings += compare(effects, meta.manifest.capabilities, install_time)
    findings += _package_rules(meta, set(files.files))
    if use_bandit:
        findings += bandit_findings(python)
    unique = sorted(set(findings), key=lambda f: (f.file, f.line, f.rule, f.reason))
    return ScanReport(name=canonicalize_name(meta.name) if meta.name else "", version=meta.version, kind=files.kind,
                      findings=tuple(unique), hashes={n: hashlib.sha256(d).hexdigest() for n, d in files.files.items()},
                      manifest=meta.manifest_table, entry_points=dict(meta.entry_points))


_OUTSIDE_SCHEMES = ("data", "scripts", "headers")


def _install_places(files: PackageFiles, meta: PackageMetadata) -> list[Finding]:
    """Where a wheel's files land beyond its own import packages: ``.data/data/`` (the environment's prefix:
    ``bin/python``, ``lib/.../site-packages/other/``), ``.data/scripts/`` (programs on PATH: a ``git`` shim) and
    ``.data/headers/``; and top-level modules that take the name of a standard-library module or a well-known
    distribution (installed over it, or imported instead of it)."""
    out: list[Finding] = []
    for name in sorted(files.files):
        top, _, rest = name.partition("/")
        scheme = rest.split("/", 1)[0]
        if top.endswith(".data") and scheme in _OUTSIDE_SCHEMES:
            out.append(Finding(file=name, line=0, rule="install-outside", severity="high",
                               reason=f"installed by the '{scheme}' scheme, outside the package's import tree "
                                      "(into the environment's prefix or PATH, over files others own)"))
    import sys

    for module in sorted(meta.modules):
        found = confusion(module)
        if module in sys.stdlib_module_names or (found is not None and found[0] == "name-shadows"):
            out.append(Finding(file=module, line=0, rule="module-shadows", severity="high",
                               reason=f"installs the top-level module {module!r}, which is "
                                      + ("a standard-library module" if module in sys.stdlib_module_names
                                         else "a well-known distribution's") + ": code importing it would get this"))
    return out


def _setup_commands(python: dict[str, bytes], install_time: frozenset[str]) -> list[Finding]:
    """``setup(cmdclass=...)`` in install-time code replaces the install steps."""
    out = []
    for name in install_time:
        try:
            tree = ast.parse(python[name])
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "cmdclass":
                out.append(Finding(file=name, line=node.value.lineno, rule="custom-install-command", severity="high",
                                   reason="cmdclass replaces the install or build steps with the package's own code"))
    return out


def installed_files(dist: Distribution) -> PackageFiles:
    """The files of an installed distribution, as a wheel holds them (bytecode caches and files the installer put
    outside ``site-packages``, such as console scripts, left out)."""
    out = PackageFiles(kind="wheel")
    root = Path(str(dist.locate_file("")))
    for entry in dist.files or ():
        rel = Path(str(entry)).as_posix()
        if ".." in rel.split("/") or "__pycache__" in rel.split("/") or rel.endswith((".pyc", ".pyo")):
            continue
        full = root / rel
        if full.is_symlink() or not full.is_file():
            out.refuse(rel, "not a regular file", rule="symlink")
            continue
        data = full.read_bytes()
        if len(data) > MAX_FILE_BYTES:
            out.refuse(rel, f"larger than {MAX_FILE_BYTES} bytes", rule="archive-limit")
            continue
        out.add(rel, data)
    return out


def scan(path: str | Path, *, use_bandit: bool = True) -> ScanReport:
    """Scan the wheel, sdist or source folder at ``path`` without importing or running any of it.

    Args:
        path: a ``.whl``, an sdist (``.tar.gz``, ``.zip``) or a folder with a ``pyproject.toml``.
        use_bandit: add bandit's findings where bandit is installed (advisory: at most ``medium``).

    Raises:
        UsageError: ``path`` is none of these.
    """
    return scan_files(read_package(path), use_bandit=use_bandit)
