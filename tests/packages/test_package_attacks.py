"""Held-out attacks on the package scan, through scan() of real folders: source read the way Python reads it
(coding cookies), names reached through walrus bindings, os's own backends (posix, nt) and more program starters,
introspection (frames, function globals, the class tree, whole containers of modules), invalid look-alike names."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolrig.packages import confusion, scan

PYPROJECT = """[project]
name = "{name}"
version = "1.0"
[project.entry-points."toolrig.tools"]
run = "probe.tools:run"
[tool.toolrig]
tools = ["probe.tools:run"]
"""
RUN = b"\ndef run() -> str:\n    return 'x'\n"


def _scan(tmp_path: Path, code: bytes, name: str = "toolrig-probe") -> set[str]:
    folder = tmp_path / "pkg"
    (folder / "probe").mkdir(parents=True)
    (folder / "probe" / "__init__.py").write_text("")
    (folder / "probe" / "tools.py").write_bytes(code + RUN)
    (folder / "pyproject.toml").write_text(PYPROJECT.format(name=name), encoding="utf-8")
    return {f.rule for f in scan(folder, use_bandit=False).blocking}


REFUSED = [
    # code a UTF-8 reader takes for a comment or a string: Python decodes by the cookie (or the BOM)
    (b"# coding: utf-7\nx = 1 #+AAo-import os+AAo-os.system('id')\n", "undeclared-subprocess"),
    (b"# -*- coding: utf_7 -*-\nx = '+ACc-+AAo-import subprocess+AAo-subprocess.run(+ACc-id+ACc-)+AAo-y = +ACc-'\n",
     "undeclared-subprocess"),
    (b"\xef\xbb\xbfimport os\nos.system('id')\n", "undeclared-subprocess"),
    # a walrus binding is the value it binds
    (b"(s := __import__('os')).system('id')\n", "undeclared-subprocess"),
    (b"(m := __import__('sub' + 'process')).run(['id'])\n", "undeclared-subprocess"),
    # os re-exports posix (nt on Windows): every os.* rule holds for them
    (b"import nt\nnt.system('id')\n", "undeclared-subprocess"),
    (b"import posix\nposix.execv('/bin/sh', ['sh'])\n", "undeclared-subprocess"),
    (b"from posix import posix_spawn\nposix_spawn('/bin/id', ['id'], {})\n", "undeclared-subprocess"),
    (b"import nt\nnt.environ\n", "env-all"),
    # other ways to start a program
    (b"import asyncio.subprocess as a\na.create_subprocess_exec('id')\n", "undeclared-subprocess"),
    (b"import _posixsubprocess\n", "undeclared-subprocess"),
    (b"import pydoc\npydoc.pipepager('x', 'id')\n", "undeclared-subprocess"),
    (b"from concurrent.futures.process import ProcessPoolExecutor\n", "undeclared-subprocess"),
    # introspection: what it reaches has no name
    (b"import sys\nsys._getframe().f_builtins['ex' + 'ec']('1')\n", "dynamic-attribute"),
    (b"[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'Popen'][0](['id'])\n",
     "dynamic-attribute"),
    (b"def f(): pass\nf.__globals__['__builtins__']\n", "dynamic-attribute"),
    (b"import inspect\ninspect.currentframe().f_back.f_globals\n", "dynamic-attribute"),
    (b"import gc\n[o for o in gc.get_objects() if getattr(o, '__name__', '') == 'os']\n", "dynamic-attribute"),
    (b"import sys\nfor m in list(sys.modules.values()):\n    m.system('id')\n", "dynamic-attribute"),
    (b"import builtins\n[f for n, f in vars(builtins).items() if n == 'ex' + 'ec'][0]('1')\n", "dynamic-attribute"),
    (b"import os\n[v for k, v in globals().items() if k == 'o' + 's'][0].system('id')\n", "dynamic-attribute"),
    (b"import inspect, os\ndict(inspect.getmembers(os))['sys' + 'tem']('id')\n", "dynamic-attribute"),
    # a module passed around as a value: what is called on it has no name
    (b"for m in [__import__('os')]:\n    m.system('id')\n", "dynamic-attribute"),
    (b"import os\n[m.system('id') for m in (os,)]\n", "dynamic-attribute"),
    (b"import os\nmatch os:\n    case m:\n        m.system('id')\n", "dynamic-attribute"),
    (b"import os\ndef f(m=os):\n    m.system('id')\n", "dynamic-attribute"),
    (b"import os\n(lambda m=os: m.system('id'))()\n", "dynamic-attribute"),
    (b"import os\n*_, m = [1, os]\nm.system('id')\n", "dynamic-attribute"),
    (b"import os, contextlib\nwith contextlib.nullcontext(os) as m:\n    m.system('id')\n", "dynamic-attribute"),
    (b"import subprocess\nd = {'k': subprocess}\nd['k'].run(['id'])\n", "dynamic-attribute"),
    (b"import os\nm = None or os\nm.system('id')\n", "dynamic-attribute"),
    (b"import os\ndef g():\n    return os\ng().system('id')\n", "dynamic-attribute"),
    (b"import sys\nsys.modules.setdefault('x', sys.modules['os']).system('id')\n", "dynamic-attribute"),
    (b"import importlib, os\nimportlib.reload(os).system('id')\n", "dynamic-import"),
    (b"import importlib.machinery as m\nm.BuiltinImporter.load_module('posix').system('id')\n", "dynamic-import"),
]


@pytest.mark.parametrize(("code", "rule"), REFUSED)
def test_refused_variants(tmp_path: Path, code: bytes, rule: str) -> None:
    assert rule in _scan(tmp_path, code)


@pytest.mark.parametrize("code", [
    b"# coding: latin-1\nNAME = '\xe9t\xe9'\n",  # an honest cookie is read, not refused as unparseable
    b"import sys\nif 'os' in sys.modules:\n    pass\nsys.modules.get('json')\n",
    b"(n := len('abc'))\n",
    b"import os\nos.path.join('a', 'b')\n",
    b"import os\nsh = os\nsh.path.join('a', 'b')\nif sh is os:\n    pass\nhasattr(os, 'fork')\n",
    b"import sys\nprint('x', file=sys.stderr)\n",
])
def test_ordinary_code_still_passes(tmp_path: Path, code: bytes) -> None:
    assert _scan(tmp_path, code) == set()


@pytest.mark.parametrize("name", ["r\u0435qu\u0435sts", "t\u043e\u043elrig", "ｒｅｑｕｅｓｔｓ", "requests\u200b",
                                  "n\u00fcmpy-tools", "toolrig-", "-toolrig-x"])
def test_names_that_are_no_valid_distribution_name_are_refused(tmp_path: Path, name: str) -> None:
    found = confusion(name)
    assert found is not None and found[0] in ("name-invalid", "name-shadows")
    assert found[0] in _scan(tmp_path, b"", name=name)


def test_valid_names_are_judged_as_before() -> None:
    assert confusion("toolrig-geo") is None and confusion("weather_tools") is None
    assert confusion("reqeusts") is not None and confusion("reqeusts")[0] == "name-typosquat"  # type: ignore[index]


@pytest.mark.parametrize(("extra", "rule"), [
    ({"toolrig_probe-1.0.data/data/bin/python": "#!/bin/sh\nid\n"}, "install-outside"),
    ({"toolrig_probe-1.0.data/data/lib/python3.11/site-packages/requests/__init__.py": "X = 1\n"},
     "install-outside"),
    ({"toolrig_probe-1.0.data/scripts/git": "#!/bin/sh\nexec /usr/bin/git \"$@\"\n"}, "install-outside"),
    ({"toolrig_probe-1.0.data/headers/x.h": "int x;\n"}, "install-outside"),
    ({"json/__init__.py": "X = 1\n"}, "module-shadows"),
    ({"requests/__init__.py": "X = 1\n"}, "module-shadows"),
    ({"toolrig_probe-1.0.data/purelib/ssl/__init__.py": "X = 1\n"}, "module-shadows"),
    ({"subprocess.py": "X = 1\n"}, "module-shadows"),
])
def test_a_wheel_installs_only_its_own_import_packages(tmp_path: Path, extra: dict[str, str], rule: str) -> None:
    from pkgkit import build_wheel, manifest

    files = {"probe/__init__.py": "", "probe/tools.py": "def run() -> str:\n    return 'x'\n", **extra}
    wheel = build_wheel(tmp_path, "toolrig-probe", "1.0", files, entry_points={"run": "probe.tools:run"},
                        toml=manifest(["probe.tools:run"]))
    assert rule in {f.rule for f in scan(wheel, use_bandit=False).blocking}


def test_a_wheel_with_its_own_packages_and_data_is_fine(tmp_path: Path) -> None:
    from pkgkit import build_wheel, manifest

    files = {"probe/__init__.py": "", "probe/tools.py": "def run() -> str:\n    return 'x'\n",
             "probe/data/cities.json": "[]", "toolrig_probe-1.0.data/purelib/probe_extra/__init__.py": ""}
    wheel = build_wheel(tmp_path, "toolrig-probe", "1.0", files, entry_points={"run": "probe.tools:run"},
                        toml=manifest(["probe.tools:run"]))
    assert scan(wheel, use_bandit=False).ok
