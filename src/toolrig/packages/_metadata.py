"""A package's static metadata: name, version, dependencies, entry points, manifest, and its install-time code.

Read from the files only: a wheel's ``.dist-info`` (``METADATA``, ``entry_points.txt``, ``RECORD``) and manifest
file, or a source tree's ``pyproject.toml`` (``[project]``, ``[build-system]``, ``[tool.toolrig]``, hatch hooks),
``PKG-INFO`` and ``setup.py``.
"""

from __future__ import annotations

import base64
import configparser
import csv
import hashlib
import io
import tomllib
from dataclasses import dataclass, field
from email.parser import HeaderParser
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

from toolrig.packages._archive import PackageFiles
from toolrig.packages._findings import Finding
from toolrig.packages._manifest import MANIFEST_FILE, Manifest, ManifestError, parse_manifest

__all__ = ["ENTRY_POINT_GROUP", "KNOWN_BACKENDS", "PackageMetadata", "read_metadata"]

ENTRY_POINT_GROUP = "toolrig.tools"
KNOWN_BACKENDS = frozenset({"setuptools.build_meta", "hatchling.build", "flit_core.buildapi", "poetry.core.masonry.api",
                            "pdm.backend", "maturin", "scikit_build_core.build", "mesonpy", "uv_build",
                            "setuptools.build_meta:__legacy__", "pdm.pep517.api", "whey", "sipbuild.api"})


@dataclass
class PackageMetadata:
    """What a package says about itself."""

    name: str = ""
    version: str = ""
    dependencies: list[Requirement] = field(default_factory=list)
    entry_points: dict[str, str] = field(default_factory=dict)
    manifest: Manifest = field(default_factory=lambda: Manifest(declared=False))
    manifest_table: dict[str, Any] = field(default_factory=dict)
    install_time: set[str] = field(default_factory=set)
    modules: set[str] = field(default_factory=set)
    findings: list[Finding] = field(default_factory=list)

    def problem(self, file: str, rule: str, reason: str, severity: str = "high") -> None:
        self.findings.append(Finding(file=file, line=0, rule=rule, severity=severity,  # type: ignore[arg-type]
                                     reason=reason))


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _requirements(values: list[str], meta: PackageMetadata, where: str) -> list[Requirement]:
    out = []
    for value in values:
        try:
            out.append(Requirement(value))
        except InvalidRequirement:
            meta.problem(where, "metadata", f"dependency {value[:80]!r} does not parse")
    return out


def _set_manifest(meta: PackageMetadata, where: str, data: bytes) -> None:
    try:
        manifest = parse_manifest(data)
        table = tomllib.loads(_text(data)).get("tool", {}).get("toolrig", {})
    except (ManifestError, tomllib.TOMLDecodeError) as exc:
        meta.problem(where, "manifest", f"the manifest is malformed: {exc}")
        return
    if not manifest.declared:
        return
    if meta.manifest.declared and table != meta.manifest_table:
        meta.problem(where, "manifest-conflict", "two manifests in the package say different things")
        return
    meta.manifest, meta.manifest_table = manifest, table


def _check_record(files: PackageFiles, dist_info: str, meta: PackageMetadata) -> None:
    record_name = f"{dist_info}/RECORD"
    if record_name not in files.files:
        meta.problem(record_name, "record-mismatch", "the wheel has no RECORD")
        return
    listed: dict[str, str] = {}
    for row in csv.reader(io.StringIO(_text(files.files[record_name]))):
        if row:
            listed[row[0]] = row[1] if len(row) > 1 else ""
    unsigned = {record_name, f"{dist_info}/RECORD.jws", f"{dist_info}/RECORD.p7s"}
    for name, data in files.files.items():
        if name in unsigned:
            continue
        expected = listed.get(name)
        if expected is None:
            meta.problem(name, "record-mismatch", "in the wheel but not in its RECORD")
            continue
        algorithm, _, digest = expected.partition("=")
        if algorithm != "sha256":
            meta.problem(name, "record-mismatch", f"RECORD gives no sha256 hash ({algorithm or 'none'})")
            continue
        actual = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        if actual != digest:
            meta.problem(name, "record-mismatch", "its content does not match the hash in RECORD")


def _wheel(files: PackageFiles, meta: PackageMetadata) -> None:
    dist_infos = sorted({n.split("/", 1)[0] for n in files.files if n.split("/", 1)[0].endswith(".dist-info")})
    if len(dist_infos) != 1:
        meta.problem("", "wheel-layout", f"a wheel has exactly one .dist-info folder, this one {len(dist_infos)}")
        return
    dist_info = dist_infos[0]
    headers = HeaderParser().parsestr(_text(files.files.get(f"{dist_info}/METADATA", b"")))
    meta.name, meta.version = headers.get("Name", "") or "", headers.get("Version", "") or ""
    meta.dependencies = _requirements(headers.get_all("Requires-Dist") or [], meta, f"{dist_info}/METADATA")
    parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(_text(files.files.get(f"{dist_info}/entry_points.txt", b"")))
    except configparser.Error as exc:
        meta.problem(f"{dist_info}/entry_points.txt", "metadata", f"entry_points.txt does not parse: {exc}")
    if parser.has_section(ENTRY_POINT_GROUP):
        meta.entry_points = {k: v.strip() for k, v in parser.items(ENTRY_POINT_GROUP)}
    _check_record(files, dist_info, meta)
    for name in sorted(files.files):
        top, _, rest = name.partition("/")
        if top.endswith(".data") and rest.startswith(("purelib/", "platlib/")):
            top, _, rest = rest.partition("/")[2].partition("/")
        if name == f"{dist_info}/{MANIFEST_FILE}" or (rest == MANIFEST_FILE and not top.endswith(".dist-info")):
            _set_manifest(meta, name, files.files[name])
        if not top.endswith((".dist-info", ".data")):
            meta.modules.add(top.removesuffix(".py"))


def _hooks(pyproject: dict[str, Any], meta: PackageMetadata) -> None:
    system = pyproject.get("build-system", {})
    backend = system.get("build-backend")
    if backend is not None and backend not in KNOWN_BACKENDS:
        meta.problem("pyproject.toml", "build-backend", f"unknown build backend {backend!r}: it runs on install")
    for path in system.get("backend-path", []) or []:
        meta.problem("pyproject.toml", "in-tree-backend", f"an in-tree build backend ({path}) runs on install")
        meta.install_time.add(f"{str(path).strip('/')}/")
    hatch = pyproject.get("tool", {}).get("hatch", {})
    tables = [hatch.get("build", {}).get("hooks", {}), hatch.get("metadata", {}).get("hooks", {})]
    tables += [t.get("hooks", {}) for t in hatch.get("build", {}).get("targets", {}).values() if isinstance(t, dict)]
    for table in tables:
        custom = table.get("custom") if isinstance(table, dict) else None
        if isinstance(custom, dict):
            path = str(custom.get("path", "hatch_build.py"))
            meta.install_time.add(path)
            meta.problem(path, "build-hook", "a custom build hook runs on install (scanned as install-time code)",
                         severity="info")
    if pyproject.get("tool", {}).get("setuptools", {}).get("cmdclass"):
        meta.problem("pyproject.toml", "custom-install-command", "[tool.setuptools.cmdclass] replaces install steps")


def _source(files: PackageFiles, meta: PackageMetadata) -> None:
    if "PKG-INFO" in files.files:
        headers = HeaderParser().parsestr(_text(files.files["PKG-INFO"]))
        meta.name, meta.version = headers.get("Name", "") or "", headers.get("Version", "") or ""
    if "setup.py" in files.files:
        meta.install_time.add("setup.py")
        meta.problem("setup.py", "setup-py", "setup.py runs on install (scanned as install-time code)",
                     severity="info")
    data = files.files.get("pyproject.toml")
    if data is not None:
        try:
            pyproject = tomllib.loads(_text(data))
        except tomllib.TOMLDecodeError as exc:
            meta.problem("pyproject.toml", "metadata", f"pyproject.toml does not parse: {exc}")
            pyproject = {}
        project = pyproject.get("project", {})
        meta.name = str(project.get("name", meta.name))
        meta.version = str(project.get("version", meta.version))
        meta.dependencies = _requirements(list(project.get("dependencies", [])), meta, "pyproject.toml")
        group = project.get("entry-points", {}).get(ENTRY_POINT_GROUP, {})
        meta.entry_points = {str(k): str(v) for k, v in group.items()} if isinstance(group, dict) else {}
        _hooks(pyproject, meta)
        _set_manifest(meta, "pyproject.toml", data)
    for name in files.files:
        parts = name.split("/")
        if parts[0] == "src" and len(parts) > 2:
            parts = parts[1:]
        if (len(parts) >= 2 and parts[-1] == "__init__.py") or (len(parts) == 1 and name.endswith(".py")):
            meta.modules.add(parts[0].removesuffix(".py"))


def read_metadata(files: PackageFiles) -> PackageMetadata:
    """The metadata of ``files`` (a wheel's, or an sdist's / source folder's)."""
    meta = PackageMetadata()
    if files.kind == "wheel":
        _wheel(files, meta)
    else:
        _source(files, meta)
    return meta
