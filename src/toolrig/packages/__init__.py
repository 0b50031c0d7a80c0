"""Tool packages: a manifest of capabilities, a static scan that never runs the code, pinned hashes.

- :func:`scan` -> :class:`ScanReport` (:class:`Finding` records): a wheel, sdist or source folder checked against
  its manifest (:class:`Manifest`, :class:`Capabilities`, :func:`parse_manifest`) without importing it.
- :func:`confusion`: the dependency-confusion rule (a name that shadows or imitates a well-known package).

See ``docs/packages.md``.
"""

from __future__ import annotations

from toolrig.packages._archive import MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES, UsageError, read_package
from toolrig.packages._confusion import WELL_KNOWN, confusion
from toolrig.packages._findings import Finding, ScanReport, Severity
from toolrig.packages._manifest import MANIFEST_FILE, Capabilities, Manifest, ManifestError, parse_manifest
from toolrig.packages._metadata import ENTRY_POINT_GROUP
from toolrig.packages._scan import scan, scan_files

__all__ = [
    "ENTRY_POINT_GROUP",
    "MANIFEST_FILE",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MAX_TOTAL_BYTES",
    "WELL_KNOWN",
    "Capabilities",
    "Finding",
    "Manifest",
    "ManifestError",
    "ScanReport",
    "Severity",
    "UsageError",
    "confusion",
    "parse_manifest",
    "read_package",
    "scan",
    "scan_files",
]
