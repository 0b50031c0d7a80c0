"""A real PostgreSQL server for tests: initdb + postgres in a temp dir, on a free loopback port, stopped by PID.

PostgreSQL refuses to run as root; as root the server runs as the system user ``toolrig-pg`` (created by
``.ci/run``) through ``setpriv``. Skips with a reason when the binaries or that user are missing (fails
under CI, which installs both).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from mcp_helpers import free_port, wait_for_port

USER = "toolrig-pg"


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (.ci/run installs PostgreSQL and creates {USER})")
    pytest.skip(reason)


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    if found:
        return found[-1]
    path = shutil.which(name)
    if path is None:
        _missing(f"PostgreSQL's {name} is not installed")
    assert path is not None
    return path


def _as_user() -> tuple[list[str], int | None, int | None]:
    if os.geteuid() != 0:
        return [], None, None
    try:
        entry = pwd.getpwnam(USER)
    except KeyError:
        _missing(f"running as root, and the user {USER} that PostgreSQL would run as does not exist")
        raise
    prefix = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups"]
    return prefix, entry.pw_uid, entry.pw_gid


def _wait_until_it_accepts(url: str, proc: subprocess.Popen[bytes]) -> None:
    """An open port is not a ready server: until its startup ends, it answers 'the database system is starting
    up'. Connect until it accepts (at most 600 tries, 0.1 s apart)."""
    import psycopg

    for _ in range(600):
        try:
            psycopg.connect(url, connect_timeout=10).close()
            return
        except psycopg.OperationalError as exc:
            if proc.poll() is not None or "starting up" not in str(exc):
                raise
            time.sleep(0.1)
    raise TimeoutError(f"PostgreSQL at {url} still starting up after 600 tries")


@contextmanager
def postgres_server(workdir: Path) -> Iterator[str]:
    """Yield the URL of a fresh PostgreSQL server (database ``postgres``, user ``toolrig``, trust auth).

    The data directory is a new temp dir of its own (pytest's are not reachable by another user); ``workdir``
    receives the server log.
    """
    initdb, postgres = _bin("initdb"), _bin("postgres")
    prefix, uid, gid = _as_user()
    root = Path(tempfile.mkdtemp(prefix="toolrig-pg-"))
    if uid is not None and gid is not None:
        os.chown(root, uid, gid)
    data = root / "data"
    subprocess.run([*prefix, initdb, "-D", str(data), "-U", "toolrig", "--auth=trust", "--no-sync", "-E", "UTF8"],
                   check=True, capture_output=True, timeout=120)
    port = free_port()
    log = open(workdir / "postgres.log", "ab")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([*prefix, postgres, "-D", str(data), "-p", str(port), "-k", str(root),
                             "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=50"],
                            stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_port(port, proc, timeout=60)
        url = f"postgresql://toolrig@127.0.0.1:{port}/postgres"
        _wait_until_it_accepts(url, proc)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)  # fast shutdown
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        log.close()
        shutil.rmtree(root, ignore_errors=True)
