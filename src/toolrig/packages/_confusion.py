"""Dependency confusion: a tool package whose name shadows or imitates a well-known distribution.

The rule (see ``docs/packages.md``, "Dependency confusion"): compare names in compact form (PEP 503 normalised,
separators removed: ``Python_Date.Util`` -> ``pythondateutil``) with :data:`WELL_KNOWN` and toolrig's own names.

- the same compact name as a well-known distribution (``requests``, ``python-dateutil`` written ``pythondateutil``)
  is ``name-shadows``: a tool package must not take the name of a package others depend on;
- within one edit (insert, delete, substitute or swap two neighbours) of a well-known name of at least five
  characters (``reqeusts``, ``numpyy``, ``toolrlg``) is ``name-typosquat``;
- a ``requires`` entry (a tool package it builds on) is checked the same way, and must also be one of the
  distribution's own dependencies.

Limits, said plainly: :data:`WELL_KNOWN` is a fixed snapshot of popular names (not the whole index), so a squat of
a less popular name, a squat two edits away, or a look-alike in another script is not caught here; names shorter
than five characters are only checked for exact shadowing (too many honest neighbours). Whether a name resolves to
the package its author meant depends on the index configuration, which the scan cannot see: install with one index
(``toolrig package install`` downloads with ``--no-deps`` and scans what it got).
"""

from __future__ import annotations

import re

__all__ = ["OWN_NAMES", "WELL_KNOWN", "compact", "confusion", "edit_distance", "normalise"]

OWN_NAMES = frozenset({"toolrig"})
_WORDS = """
aiohttp aiosignal anthropic anyio appdirs argcomplete argon2-cffi arrow asgiref astroid async-timeout attrs
autopep8 azure-core azure-identity azure-storage-blob babel backoff bcrypt beautifulsoup4 black bleach blinker
boto boto3 botocore build cachetools certifi cffi chardet charset-normalizer click colorama coverage crewai
cryptography cython dataclasses-json decorator defusedxml deprecated dill distlib distro django docker docutils
dnspython email-validator et-xmlfile exceptiongroup fastapi fastjsonschema filelock flake8 flask frozenlist fsspec
gitdb gitpython google-api-core google-auth google-cloud-storage googleapis-common-protos greenlet grpcio gunicorn
h11 httpcore httplib2 httpx huggingface-hub idna importlib-metadata iniconfig isodate isort itsdangerous jinja2
jmespath joblib jsonpatch jsonpointer jsonschema keyring langchain langchain-core langchain-community langsmith
lxml markdown markupsafe marshmallow matplotlib mccabe mcp mock more-itertools msgpack multidict mypy
mypy-extensions networkx nltk numpy oauthlib openai openai-agents openpyxl opentelemetry-api opentelemetry-sdk
orjson packaging pandas paramiko pathspec pexpect pillow pip platformdirs playwright pluggy poetry poetry-core
portalocker prompt-toolkit protobuf psutil psycopg psycopg2 psycopg2-binary ptyprocess pyarrow pyasn1
pyasn1-modules pycparser pycryptodome pydantic pydantic-ai pydantic-core pydantic-settings pyflakes pygments
pyjwt pylint pymysql pynacl pyopenssl pyparsing pypdf pyproject-hooks pytest pytest-cov python-dateutil
python-dotenv python-multipart pytz pyyaml redis regex requests requests-oauthlib rich rsa ruamel-yaml ruff
s3transfer scikit-learn scipy selenium setuptools shellingham six smmap smolagents sniffio sortedcontainers
soupsieve sqlalchemy starlette sympy tabulate tenacity tiktoken tokenizers toml tomli tomlkit torch tqdm
transformers typer types-requests typing-extensions typing-inspect tzdata tzlocal ujson urllib3 uv uvicorn
virtualenv watchfiles wcwidth websocket-client websockets werkzeug wheel wrapt xmltodict yarl zipp
"""
WELL_KNOWN = frozenset(_WORDS.split())
"""A snapshot of widely used distribution names (PEP 503 normalised)."""

_MIN_FUZZY = 5


_VALID_NAME = re.compile(r"[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]", re.ASCII)


def normalise(name: str) -> str:
    """PEP 503: lower-case, runs of ``-``, ``_`` and ``.`` become ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def compact(name: str) -> str:
    """The name with every separator removed (``python-dateutil`` -> ``pythondateutil``)."""
    return re.sub(r"[-_.]+", "", name).lower()


def edit_distance(a: str, b: str, limit: int = 2) -> int:
    """Optimal string alignment distance (insert, delete, substitute, swap neighbours), capped at ``limit``."""
    if abs(len(a) - len(b)) >= limit:
        return limit
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], prev2[j - 2] + 1)
        prev2, prev = prev, row
        if min(row) >= limit:
            return limit
    return min(prev[-1], limit)


def confusion(name: str, *, known: frozenset[str] = WELL_KNOWN | OWN_NAMES) -> tuple[str, str] | None:
    """``(rule, reason)`` when ``name`` shadows or imitates a known name, or is no valid distribution name at all
    (``name-invalid``: letters from other scripts, full-width or invisible characters imitate names whatever the
    edit distance), else None."""
    if not _VALID_NAME.fullmatch(name):
        return "name-invalid", (f"{name!r} is not a valid distribution name (PEP 508: ASCII letters, digits, '.', "
                                "'-', '_'); look-alike or invisible characters imitate other names")
    mine = compact(name)
    if not mine:
        return None
    for other in sorted(known):
        theirs = compact(other)
        if mine == theirs:
            if normalise(name) == normalise(other) and other in OWN_NAMES:
                return None
            return "name-shadows", f"{name!r} takes the name of the well-known package {other!r}"
        if min(len(mine), len(theirs)) >= _MIN_FUZZY and edit_distance(mine, theirs) <= 1:
            return "name-typosquat", f"{name!r} is one edit away from the well-known package {other!r}"
    return None
