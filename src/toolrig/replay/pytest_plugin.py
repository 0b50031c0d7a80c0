"""The pytest plugin (entry point ``pytest11``): a ``toolrig_cassette`` fixture and a ``--toolrig-record`` option.

::

    async def test_agent(toolrig_cassette):
        runtime = Runtime(TOOLS, recorder=toolrig_cassette)
        ...

Each test gets ``cassettes/<test module>/<test name>.yaml`` beside its file, replayed strictly by default (no
tool body runs; a call with no recording is ``replay_miss``). ``pytest --toolrig-record`` records every call
afresh; ``--toolrig-record=once`` records only the cassettes that do not exist yet, ``=new_episodes`` adds the
calls a cassette lacks. A test may name its own file and mode: ``@pytest.mark.toolrig_cassette("x.jsonl",
mode="once")`` (a relative path is relative to the test's folder). The ini option ``toolrig_cassette_dir``
changes the folder (default ``cassettes``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # imported when a test asks for a cassette: loading the plugin stays cheap for every pytest run
    from toolrig.replay._cassette import Cassette, RecordMode

__all__ = ["pytest_addoption", "pytest_configure", "toolrig_cassette"]

_MODES = ("record", "replay", "once", "new_episodes")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--toolrig-record[=MODE]`` and the ``toolrig_cassette_dir`` ini option."""
    group = parser.getgroup("toolrig", "toolrig record / replay")
    group.addoption("--toolrig-record", dest="toolrig_record", nargs="?", const="record", default=None,
                    choices=_MODES, metavar="MODE",
                    help="record tool calls into the toolrig_cassette files (MODE: record (default), once, "
                         "new_episodes; replay is what runs without the option)")
    parser.addini("toolrig_cassette_dir", "folder of the toolrig cassettes, beside each test file",
                  default="cassettes")


def pytest_configure(config: pytest.Config) -> None:
    """Declare the ``toolrig_cassette`` marker."""
    config.addinivalue_line("markers", "toolrig_cassette(path=None, mode=None): the cassette file and mode of a "
                                       "test's toolrig_cassette fixture")


def _where(request: pytest.FixtureRequest, marker: pytest.Mark | None) -> Path:
    folder = Path(str(request.node.path)).parent
    named: Any = None if marker is None else (marker.args[0] if marker.args else marker.kwargs.get("path"))
    if named is not None:
        path = Path(str(named))
        return path if path.is_absolute() else folder / path
    module = Path(str(request.node.path)).stem
    name = _UNSAFE.sub("_", request.node.name).strip("_") or "test"
    return folder / str(request.config.getini("toolrig_cassette_dir")) / module / f"{name}.yaml"


@pytest.fixture
def toolrig_cassette(request: pytest.FixtureRequest) -> Cassette:
    """This test's :class:`~toolrig.replay.Cassette`: pass it as ``Runtime(..., recorder=toolrig_cassette)``."""
    from toolrig.replay._cassette import Cassette

    marker = request.node.get_closest_marker("toolrig_cassette")
    option = request.config.getoption("toolrig_record", None)
    marked = None if marker is None else marker.kwargs.get("mode")
    mode: RecordMode = option or marked or "replay"
    return Cassette(_where(request, marker), mode=mode)
