"""The stdio server's wire on a pipe is read and written on the event loop without blocking it (no worker thread
per line or per answer), and loses nothing when the other end is slow."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import anyio
import pytest

from toolrig.mcp.server._stdio import _CheckedLines, _nonblocking, _streams, _Wire

pytestmark = pytest.mark.anyio


async def _ticks_while(work: Any) -> tuple[Any, int]:
    """Run ``work()``; how often another task got the loop meanwhile (0 when the work blocked it throughout)."""
    ticks = 0
    done = anyio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await anyio.sleep(0.001)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        try:
            result = await work()
        finally:
            done.set()
    return result, ticks


async def test_answers_larger_than_the_pipe_reach_a_slow_reader_whole_without_blocking_the_loop() -> None:
    read_end, write_end = os.pipe()
    assert _streams(write_end)
    payload = "".join(f'{{"jsonrpc":"2.0","id":{i},"result":{{"text":"{"x" * 500}"}}}}\n' for i in range(400))
    received = bytearray()

    def slow_reader() -> None:
        while chunk := os.read(read_end, 4096):
            received.extend(chunk)
            time.sleep(0.001)

    reader = threading.Thread(target=slow_reader)
    reader.start()
    try:
        with _nonblocking(write_end):
            wire = _Wire(write_end)

            async def send_all() -> None:
                for line in payload.splitlines(keepends=True):
                    await wire.write(line)
                    await wire.flush()

            _, ticks = await _ticks_while(send_all)
    finally:
        os.close(write_end)
        reader.join(10)
        os.close(read_end)
    assert received.decode() == payload  # > 64 KiB: the pipe was full, and the writer waited for room
    assert ticks > 0


async def test_lines_arriving_in_pieces_are_read_whole_on_the_loop() -> None:
    read_end, write_end = os.pipe()
    assert _streams(read_end)
    messages = [b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                b'{"jsonrpc":"2.0","id":7,"method":"ping"}']

    def trickle() -> None:
        for message in messages:
            for i in range(0, len(message), 5):
                os.write(write_end, message[i:i + 5])
                time.sleep(0.002)
            os.write(write_end, b"\n")
        os.close(write_end)

    writer = threading.Thread(target=trickle)
    source = os.fdopen(read_end, "rb", closefd=False)
    try:
        with _nonblocking(read_end):
            lines = _CheckedLines(source, 1 << 20, nonblocking=True)
            writer.start()

            async def read_all() -> list[str]:
                return [line async for line in lines]

            got, ticks = await _ticks_while(read_all)
    finally:
        writer.join(10)
        os.close(read_end)
    assert got == [m.decode() for m in messages]
    assert ticks > 0


def test_files_and_closed_descriptors_are_not_streamed(tmp_path: Any) -> None:
    with open(os.devnull, "rb") as null, open(tmp_path / "file", "wb") as file:
        assert not _streams(null.fileno()) and not _streams(file.fileno())
    read_end, write_end = os.pipe()
    os.close(read_end)
    os.close(write_end)
    assert not _streams(read_end)
