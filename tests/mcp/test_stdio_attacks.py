"""toolrig's stdio server answers every malformed line with a JSON-RPC error, bounded, and keeps serving.

A real server subprocess (the conformance fixture over stdio) is fed garbage, partial JSON, invalid UTF-8,
non-standard JSON, bad envelopes, a batch and an oversized line (the schema-fuzz corpus's raw messages and
bytes among them); after each, a valid request must still be answered.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import FIXTURE, PYTHON

from toolrig.mcp.server._stdio import MAX_LINE_BYTES, problem_of

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "security" / "schema_fuzz_cases.json"
INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "attacker", "version": "1"}}}


class Wire:
    """A server subprocess spoken to line by line, every read bounded in time."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.buffer = b""
        self.selector = selectors.DefaultSelector()
        assert proc.stdout is not None
        os.set_blocking(proc.stdout.fileno(), False)
        self.selector.register(proc.stdout, selectors.EVENT_READ)

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send_json(self, message: Any) -> None:
        self.send(json.dumps(message).encode() + b"\n")

    def receive(self, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            assert left > 0, f"no answer within {timeout} s (got {self.buffer[:200]!r})"
            if self.selector.select(left):
                assert self.proc.stdout is not None
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                assert chunk, f"the server closed its output (exit {self.proc.poll()})"
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        answer: dict[str, Any] = json.loads(line)
        return answer

    def still_serves(self, ident: int) -> None:
        self.send_json({"jsonrpc": "2.0", "id": ident, "method": "tools/list"})
        answer = self.receive()
        assert answer["id"] == ident and "tools" in answer["result"], answer


@contextmanager
def stdio_server() -> Iterator[Wire]:
    proc = subprocess.Popen([PYTHON, str(FIXTURE), "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        wire = Wire(proc)
        wire.send_json(INIT)
        assert wire.receive(60)["id"] == "init"
        wire.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield wire
    finally:
        proc.kill()
        proc.wait(timeout=30)


ATTACKS: list[tuple[bytes, int, Any]] = [
    (b"this is not json", -32700, None),
    (b'{"jsonrpc": "2.0", "id": 5, "method": "tools/li', -32700, None),  # partial JSON
    (b"\xff\xfe\x00\x00", -32700, None),  # invalid UTF-8
    (b'{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"x":NaN}}', -32700, None),
    (b"null", -32600, None),
    (b"[1, 2]", -32600, None),
    (b'[{"jsonrpc":"2.0","id":7,"method":"tools/list"}]', -32600, None),  # a batch
    (b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', -32600, None),
    (b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', -32600, None),
    (b'{"jsonrpc":"1.0","id":8,"method":"tools/list"}', -32600, 8),
    (b'{"jsonrpc":"2.0","id":9,"method":42}', -32600, 9),
    (b'{"jsonrpc":"2.0","id":10}', -32600, 10),  # neither request nor response
]


def test_every_malformed_line_gets_an_error_and_the_server_reads_on() -> None:
    with stdio_server() as wire:
        for n, (line, code, ident) in enumerate(ATTACKS, start=100):
            wire.send(line + b"\n")
            answer = wire.receive()
            assert answer.get("error", {}).get("code") == code and answer.get("id") == ident, (line, answer)
            assert "Traceback" not in answer["error"]["message"]
            assert not re.search(r"/(usr|home|root|work|tmp)/", answer["error"]["message"])  # no file paths
            wire.still_serves(n)
        wire.send(b"\n   \n")  # blank lines are skipped, not answered
        wire.still_serves(1)


def test_an_oversized_line_is_dropped_without_being_held() -> None:
    with stdio_server() as wire:
        wire.send(b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"' + b"x" * (MAX_LINE_BYTES + 10)
                  + b'"}}\n')
        answer = wire.receive(120)
        assert answer["error"]["code"] == -32600 and "over" in answer["error"]["message"]
        assert answer["id"] == 1  # told from the line's first bytes: the client learns which request failed
        wire.still_serves(2)


def expand(entry: Any) -> str:
    """A raw message, or one built from its ``payload_spec`` (a template with ``@@`` filled)."""
    if isinstance(entry, str):
        return entry
    spec = entry["payload_spec"]
    return str(spec["template"]).replace("@@", str(spec["fill"]) * int(spec["count"]))


def test_the_shared_schema_fuzz_messages_and_bytes_are_all_answered() -> None:
    if not SHARED.is_file():
        pytest.skip(f"the shared corpus is not beside the repository ({SHARED})")
    cases = json.loads(SHARED.read_text())
    lines = [expand(m).encode() for m in cases["json_rpc_raw_messages"]]
    lines += [bytes.fromhex(h) for h in cases["raw_bytes_hex"]]
    with stdio_server() as wire:
        for n, line in enumerate(lines, start=200):
            wire.send(line.replace(b"\n", b" ") + b"\n")
            answer = wire.receive()
            if "error" in answer:  # a JSON-RPC error, or a tool result that says isError
                assert answer["error"]["code"] in (-32700, -32600, -32601, -32602), (line, answer)
                assert "Traceback" not in answer["error"]["message"]
            else:
                assert answer["result"].get("isError") is True, (line, answer)
            wire.still_serves(n)


def test_problem_of_agrees_with_the_sdk_on_valid_messages() -> None:
    valid = [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": "x", "result": {}},
             {"jsonrpc": "2.0", "id": 3, "error": {"code": -1, "message": "m"}}]
    for message in valid:
        assert problem_of(json.dumps(message).encode()) is None, message
    assert problem_of(b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"v":Infinity}}') is not None
