"""Record and replay tool I/O at the pipeline boundary, for offline, deterministic tests of agents' tool use.

* :class:`Cassette`: ``Runtime(tools, recorder=Cassette("calls.yaml", mode="once"))`` records what tool bodies
  return (errors and timeouts too) in a versioned YAML or JSON-lines file, secrets redacted, and replays it with
  no tool body running; a call with no recording ends ``replay_miss``, naming the JSON path of the first
  difference from the nearest recording.
* A pytest plugin (:mod:`toolrig.replay.pytest_plugin`, loaded through the ``pytest11`` entry point
  ``toolrig_pytest``): the ``toolrig_cassette`` fixture and the ``--toolrig-record`` option.

See ``docs/replay.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolrig.replay._cassette import Cassette, RecordMode
    from toolrig.replay._file import FORMAT_VERSION, read_cassette

__all__ = ["FORMAT_VERSION", "Cassette", "RecordMode", "read_cassette"]

# Served lazily: pytest loads the plugin module (and so this package) in every run where toolrig is installed.
_LAZY = {"Cassette": "_cassette", "RecordMode": "_cassette", "FORMAT_VERSION": "_file", "read_cassette": "_file"}


def __getattr__(name: str) -> Any:
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(f"toolrig.replay.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'toolrig.replay' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
