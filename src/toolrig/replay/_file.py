"""Cassette files: versioned, human-readable YAML (``.yaml`` / ``.yml``, and any other suffix), JSON lines
(``.jsonl``) or one JSON document (``.json``, the same shape as the YAML).

YAML::

    toolrig_cassette: 1
    interactions:
    - tool: search
      version: 1.0.0
      arguments: {query: paris}
      lane: search
      outcome:
        ok: true
        result: {parts: [{type: json, data: [...]}], is_error: false}

JSON lines: a header line ``{"toolrig_cassette": 1}``, then one interaction per line (appended as recorded).
A file of a newer format version is refused rather than misread.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from toolrig._yaml_text import yaml_problem
from toolrig.errors import ConfigError

__all__ = ["FORMAT_VERSION", "append_interaction", "read_cassette", "write_cassette"]

FORMAT_VERSION = 1
"""The cassette format this toolrig writes and reads."""

_HEADER = "toolrig_cassette"


def _is_lines(path: Path) -> bool:
    return path.suffix.lower() in (".jsonl", ".ndjson")


def _is_json(path: Path) -> bool:
    return path.suffix.lower() == ".json"


def _checked(header: Any, path: Path) -> None:
    version = header.get(_HEADER) if isinstance(header, Mapping) else None
    if not isinstance(version, int) or isinstance(version, bool):
        raise ConfigError(f"{path} is not a toolrig cassette (no '{_HEADER}: {FORMAT_VERSION}' header)")
    if version > FORMAT_VERSION:
        raise ConfigError(f"{path} is a version {version} cassette; this toolrig reads version {FORMAT_VERSION} "
                          "(upgrade toolrig, or record it again)")


def read_cassette(path: Path) -> list[dict[str, Any]]:
    """The interactions of the cassette at ``path`` ([] when there is no file).

    Raises:
        ConfigError: the file cannot be read, is not a cassette, or is of a newer format.
    """
    if not path.exists():
        return []
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the cassette {path}: {exc}") from None
    if not text.strip():
        return []
    try:
        items: Any
        if _is_lines(path):
            lines = [json.loads(line) for line in text.splitlines() if line.strip()]
            header, items = lines[0], lines[1:]
        else:
            header = json.loads(text) if _is_json(path) else yaml.safe_load(text)
            items = header.get("interactions") if isinstance(header, Mapping) else None
    except yaml.YAMLError as exc:
        raise ConfigError(f"the cassette {path} cannot be parsed: {yaml_problem(exc)}") from None
    except ValueError as exc:
        raise ConfigError(f"the cassette {path} cannot be parsed: {exc}") from None
    _checked(header, path)
    if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
        raise ConfigError(f"the cassette {path}: 'interactions' must be a list of objects")
    return [dict(i) for i in items]


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks (readable diffs of recorded text)."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _string)


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a crash leaves the old file or the new one, never half of one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def write_cassette(path: Path, interactions: Sequence[Mapping[str, Any]]) -> None:
    """Write the whole cassette (replacing any file at ``path``)."""
    if _is_lines(path):
        lines = [json.dumps({_HEADER: FORMAT_VERSION}), *(json.dumps(i, ensure_ascii=False) for i in interactions)]
        _replace(path, "\n".join(lines) + "\n")
        return
    document = {_HEADER: FORMAT_VERSION, "interactions": [dict(i) for i in interactions]}
    if _is_json(path):
        _replace(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        return
    _replace(path, yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120))


def append_interaction(path: Path, interactions: Sequence[Mapping[str, Any]]) -> None:
    """Add the last of ``interactions`` to the file (JSON lines append; YAML is rewritten whole)."""
    if not _is_lines(path) or not path.exists() or len(interactions) == 1:
        write_cassette(path, interactions)
        return
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(interactions[-1], ensure_ascii=False) + "\n")
