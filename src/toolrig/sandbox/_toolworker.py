"""The sandboxed tool worker: reads one JSON request on stdin, replies with JSON on the private channel.

Run inside the sandbox as ``python -I -S -u worker.py``; the request's ``path`` (the host's
``sys.path`` entries, bound read-only) is put on ``sys.path`` before toolrig is imported. See
:mod:`toolrig.sandbox._protocol` for the messages.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    """Serve the one request on stdin."""
    request = json.loads(sys.stdin.buffer.read())
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.path[:0] = [str(p) for p in request.get("path", [])]
    egress = request.get("egress")
    if egress:  # network by allow-list: a loopback port relayed to the host's proxy
        from toolrig.sandbox._relay import start_relay

        start_relay(str(egress["socket"]))
    from toolrig.sandbox._protocol import run_request

    reply = run_request(request)
    try:
        data = json.dumps(reply, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")
    except (TypeError, ValueError) as exc:
        data = json.dumps({"kind": "error", "error": {"type": "builtins.TypeError", "message": str(exc)}}).encode()
    channel = os.environ.get("TOOLRIG_REPLY", "")
    if channel.startswith("fd:"):
        view = memoryview(data)
        while view:
            view = view[os.write(int(channel[3:]), view):]
    elif channel.startswith("file:"):
        with open(channel[5:], "wb") as handle:
            handle.write(data)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
