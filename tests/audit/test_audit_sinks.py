from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import platformdirs
import pytest

from toolrig.audit import (
    AUDIT_ENV,
    AuditLog,
    AuditRecord,
    CallableSink,
    SqliteSink,
    configured_audit_path,
    default_audit_path,
    open_sink,
)


def test_default_is_a_file_in_the_user_data_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(AUDIT_ENV, raising=False)
    expected = Path(platformdirs.user_data_dir("toolrig", appauthor=False)) / "audit.db"
    assert default_audit_path() == expected
    sink = open_sink(None)
    assert isinstance(sink, SqliteSink) and sink.path == str(expected)
    assert configured_audit_path() == expected
    assert AuditLog().path == expected


def test_environment_variable_overrides_the_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(AUDIT_ENV, str(tmp_path / "env.db"))
    sink = open_sink(None)
    assert isinstance(sink, SqliteSink) and sink.path == str(tmp_path / "env.db")
    assert AuditLog().path == tmp_path / "env.db"
    monkeypatch.setenv(AUDIT_ENV, "off")
    assert open_sink(None) is None and configured_audit_path() is None


@pytest.mark.parametrize(("value", "path"), [
    ("sqlite:////var/tmp/x.db", "/var/tmp/x.db"),
    ("sqlite:///relative.db", "relative.db"),
    ("sqlite:///:memory:", ":memory:"),
    ("/tmp/plain.db", "/tmp/plain.db"),
    (Path("/tmp/p.db"), "/tmp/p.db"),
])
def test_paths_and_sqlite_urls(value: str | Path, path: str) -> None:
    sink = open_sink(value)
    assert isinstance(sink, SqliteSink) and sink.path == path


@pytest.mark.parametrize("value", ["redis://localhost/0", "sqlite://", "sqlite:///", "  "])
def test_unsupported_targets_are_refused(value: str) -> None:
    with pytest.raises(ValueError):
        open_sink(value)


def test_sinks_and_callables() -> None:
    class Batches:
        def __init__(self) -> None:
            self.seen: list[Sequence[AuditRecord]] = []

        def write(self, records: Sequence[AuditRecord]) -> None:
            self.seen.append(records)

    custom = Batches()
    assert open_sink(custom) is custom
    got: list[AuditRecord] = []
    sink = open_sink(got.append)
    assert isinstance(sink, CallableSink)
    record = AuditRecord(id="1", call_id="c", time=0.0, tool="t")
    sink.write([record, record])
    assert got == [record, record]
    assert open_sink(False) is None and open_sink("off") is None
    with pytest.raises(TypeError):
        open_sink(42)
