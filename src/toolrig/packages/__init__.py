"""Tool packages: a manifest of capabilities, a static scan that never runs the code, pinned hashes.

- :func:`scan` -> :class:`ScanReport` (:class:`Finding` records): a wheel, sdist or source folder checked against
  its manifest (:class:`Manifest`, :class:`Capabilities`, :func:`parse_manifest`) without importing it.
- :func:`confusion`: the dependency-confusion rule (a name that shadows or imitates a well-known package).
- :func:`install_package` -> :class:`InstallResult`: scan a wheel (downloaded or built), install it only if it
  passes, pin the hashes of what was scanned (:func:`pin_record`, in the MCP pin store); :func:`pin_installed`
  adopts a package installed otherwise, scanned from its installed files.
- :func:`load_verified` (``Registry.load_package``) and :func:`check_package`: load an installed package only as
  it was scanned; its tools run sandboxed with the declared hosts as their only network (:func:`apply_capabilities`).

See ``docs/packages.md``.
"""

from __future__ import annotations

from toolrig.packages._archive import MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES, UsageError, read_package
from toolrig.packages._confusion import WELL_KNOWN, confusion
from toolrig.packages._findings import Finding, ScanReport, Severity
from toolrig.packages._install import InstallResult, install_package, pin_installed
from toolrig.packages._load import PACKAGE_KEY, apply_capabilities, check_package, load_verified
from toolrig.packages._manifest import MANIFEST_FILE, Capabilities, Manifest, ManifestError, parse_manifest
from toolrig.packages._metadata import ENTRY_POINT_GROUP
from toolrig.packages._pinning import pin_record, verify_installed
from toolrig.packages._scan import scan, scan_files

__all__ = [
    "ENTRY_POINT_GROUP",
    "MANIFEST_FILE",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MAX_TOTAL_BYTES",
    "PACKAGE_KEY",
    "WELL_KNOWN",
    "Capabilities",
    "Finding",
    "InstallResult",
    "Manifest",
    "ManifestError",
    "ScanReport",
    "Severity",
    "UsageError",
    "apply_capabilities",
    "check_package",
    "confusion",
    "install_package",
    "load_verified",
    "parse_manifest",
    "pin_installed",
    "pin_record",
    "read_package",
    "scan",
    "scan_files",
    "verify_installed",
]
