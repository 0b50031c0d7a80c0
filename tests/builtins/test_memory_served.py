"""``toolrig serve --http`` with ``[builtins] memory`` and two bearer tokens: Alice's remember never reaches Bob."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))

from served import sdk_client, toolrig_serve

pytestmark = pytest.mark.anyio

SECRET = "sk-" + "q" * 40


def _text(result: object) -> str:
    return "\n".join(getattr(c, "text", "") for c in getattr(result, "content", []))


async def test_two_authenticated_clients_never_share_memories(tmp_path: Path) -> None:
    store = tmp_path / "memories.db"  # outside the root (a store inside it is refused)
    (tmp_path / "project").mkdir()
    config = tmp_path / "toolrig.toml"
    config.write_text(f"""name = "memory"
[serve.auth]
audience = "http://127.0.0.1/mcp"
tokens = {{ "tok-alice" = "alice", "tok-bob" = "bob" }}

[builtins]
root = {json.dumps(str(tmp_path / "project"))}
files = false
memory = {{ store = {json.dumps(str(store))} }}

[policy]
allow = ["*"]

[runtime]
audit = false
""", encoding="utf-8")
    with toolrig_serve(tmp_path, config) as served:
        async with sdk_client(served.url, "tok-alice") as alice, sdk_client(served.url, "tok-bob") as bob:
            names = {t.name for t in (await alice.list_tools()).tools}
            assert {"remember", "recall", "forget"} <= names
            stored = await alice.call_tool("remember", {"text": f"alice's wifi password is {SECRET}"})
            assert not stored.is_error, _text(stored)
            assert SECRET not in _text(stored)
            mine = await alice.call_tool("recall", {"query": "wifi password"})
            assert "alice's wifi password" in _text(mine) and "[REDACTED" in _text(mine)
            memory_id = json.loads(_text(stored))["remembered"]["id"]
            for query in ("wifi password", "alice", ""):
                theirs = await bob.call_tool("recall", {"query": query})
                assert not theirs.is_error and "wifi" not in _text(theirs), _text(theirs)
            stolen = await bob.call_tool("forget", {"id": memory_id})
            assert stolen.is_error
            assert "alice's wifi password" in _text(await alice.call_tool("recall", {"query": "wifi"}))
