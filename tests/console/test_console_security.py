"""The console's guard, against a real ``toolrig console`` process: token, session cookie, Host, Origin, CSRF,
headers; approvals bound to what was shown and decided once; the audit export."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from console_helpers import running, write_config
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from toolrig import CallContext, ToolCall
from toolrig.mcp import open_pins
from toolrig.policy import ApprovalQueue


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    folder = tmp_path_factory.mktemp("console")
    config = write_config(folder)
    with running(["console", "--config", str(config)], folder) as run:
        run.folder = folder
        yield run


@pytest.fixture
def client(console: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=console.base, timeout=30) as http:
        answer = http.get(console.url)
        assert answer.status_code == 303
        yield http


def csrf_of(client: httpx.Client, path: str = "/tools/shout") -> str:
    match = re.search(r'name="csrf" value="([^"]+)"', client.get(path).text)
    assert match
    return match.group(1)


@pytest.mark.parametrize("path", ["/tools", "/tools/shout", "/static/htmx.min.js", "/approvals/events", "/audit",
                                  "/audit/export.jsonl", "/workflows", "/"])
def test_nothing_is_served_without_a_session(console: Any, path: str) -> None:
    answer = httpx.get(console.base + path, timeout=30)
    assert answer.status_code == 401
    assert "content-security-policy" in answer.headers


def test_the_token_is_exchanged_for_a_strict_http_only_cookie(console: Any) -> None:
    wrong = httpx.get(console.base + "/login?token=guess", timeout=30)
    assert wrong.status_code == 403 and "set-cookie" not in wrong.headers
    assert httpx.get(console.base + "/login", timeout=30).status_code == 403
    right = httpx.get(console.url, timeout=30)
    assert right.status_code == 303 and right.headers["location"] == "/tools"
    cookie = right.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    assert console.url.split("token=")[1] not in cookie  # the session id is not the token


def test_every_page_carries_a_strict_policy(client: httpx.Client) -> None:
    for path in ("/tools", "/tools/shout", "/approvals", "/audit", "/workflows", "/static/console.js"):
        answer = client.get(path)
        assert answer.status_code == 200, path
        policy = answer.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe" not in policy and "default-src 'none'" in policy
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["x-frame-options"] == "DENY"
        if path.startswith("/static"):
            continue
        tree = HTMLParser(answer.text)
        assert all(node.attributes.get("src") for node in tree.css("script")), "no inline script"
        handlers = [(node.tag, name) for node in tree.css("*") for name in node.attributes if name.startswith("on")]
        assert not handlers, "no inline event handler"
        assert not tree.css("[style]"), "no inline style"


def test_a_foreign_host_is_refused_even_with_a_session(client: httpx.Client, console: Any) -> None:
    assert client.get("/tools", headers={"host": "attacker.example"}).status_code == 421
    port = console.base.rsplit(":", 1)[1]
    assert client.get("/tools", headers={"host": f"localhost:{port}"}).status_code == 200


def test_a_post_without_the_csrf_token_or_from_another_origin_is_refused(client: httpx.Client, console: Any) -> None:
    token = csrf_of(client)
    form = {"arg/text": "hi"}
    assert client.post("/tools/shout/run", data=form, headers={"origin": console.base}).status_code == 403
    assert client.post("/tools/shout/run", data={**form, "csrf": "forged"},
                       headers={"origin": console.base}).status_code == 403
    assert client.post("/tools/shout/run", data={**form, "csrf": token},
                       headers={"origin": "http://attacker.example"}).status_code == 403
    assert client.post("/tools/shout/run", data={**form, "csrf": token}).status_code == 403  # no Origin at all
    done = client.post("/tools/shout/run", data=form, headers={"origin": console.base, "x-csrf-token": token})
    assert done.status_code == 200 and "HI" in done.text
    other = httpx.Client(base_url=console.base, timeout=30)  # another session's token does not fit this one
    other.get(console.url)
    assert other.post("/tools/shout/run", data={**form, "csrf": token},
                      headers={"origin": console.base}).status_code == 403


async def _file(queue_path: Path, record: str) -> Any:
    queue = ApprovalQueue(queue_path)
    try:
        return await queue.submit(ToolCall(name="delete_record", arguments={"record": record}),
                                  CallContext(user="u", agent="a"), "asked by rule delete_record", "1.0.0")
    finally:
        await queue.aclose()


async def _file_in_session(queue_path: Path, record: str, session: str | None) -> Any:
    queue = ApprovalQueue(queue_path)
    try:
        return await queue.submit(ToolCall(name="delete_record", arguments={"record": record}),
                                  CallContext(user="u", agent="a", session=session), "asked by rule delete_record",
                                  "1.0.0")
    finally:
        await queue.aclose()


async def _remembered(queue_path: Path, record: str, session: str) -> Any:
    """What a waiting runtime's queue answers for this call now (an allow Decision, or None: it would ask)."""
    queue = ApprovalQueue(queue_path)
    try:
        return await queue._remembered(ToolCall(name="delete_record", arguments={"record": record}),
                                       CallContext(user="u", agent="a", session=session), "1.0.0")
    finally:
        await queue.aclose()


async def _get(queue_path: Path, request_id: str) -> Any:
    queue = ApprovalQueue(queue_path)
    try:
        return await queue.get(request_id)
    finally:
        await queue.aclose()


def _run(fn: Any, *args: Any) -> Any:
    """``anyio.run(fn, *args)`` in a thread of its own (Playwright's sync API may hold this thread's loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, fn, *args).result(timeout=60)


def test_a_decision_is_bound_to_the_call_shown_and_taken_once(client: httpx.Client, console: Any) -> None:
    queue_path = console.folder / "approvals.db"
    request = _run(_file, queue_path, "x\u200by")
    card = client.get(f"/approvals/{request.id}")
    assert card.status_code == 200 and "x&lt;U+200B&gt;y" in card.text
    token = csrf_of(client)
    headers = {"origin": console.base, "x-csrf-token": token}
    wrong = client.post(f"/approvals/{request.id}/approve", data={"binding": "0" * 64}, headers=headers)
    assert wrong.status_code == 409
    assert _run(_get, queue_path, request.id).status == "pending"
    first = client.post(f"/approvals/{request.id}/deny", data={"binding": request.binding, "reason": "no  way"},
                        headers=headers)
    assert first.status_code == 200 and "denied" in first.text
    again = client.post(f"/approvals/{request.id}/approve", data={"binding": request.binding}, headers=headers)
    assert again.status_code == 409 and "already decided" in again.text
    decided = _run(_get, queue_path, request.id)
    assert decided.status == "denied" and decided.decided_by.endswith("(console): no way")
    assert client.post(f"/approvals/{request.id}/explode", data={}, headers=headers).status_code == 404


def test_the_audit_exports_json_lines_of_the_filtered_rows(client: httpx.Client, console: Any) -> None:
    token = csrf_of(client)
    for text in ("one", "two"):
        client.post("/tools/shout/run", data={"arg/text": text},
                    headers={"origin": console.base, "x-csrf-token": token})
    lines = client.get("/audit/export.jsonl", params={"tool": "shout"}).text.splitlines()
    rows = [json.loads(line) for line in lines]
    assert rows and {r["tool"] for r in rows} == {"shout"}
    found = [json.loads(line) for line in client.get("/audit/export.jsonl", params={"q": "two"}).text.splitlines()]
    assert [r["arguments"] for r in found if r["tool"] == "shout"] == [{"text": "two"}]


def test_another_host_needs_a_token_file(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "toolrig", "console", "--host", "0.0.0.0"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1 and "--token-file" in done.stderr
    short = tmp_path / "token"
    short.write_text("abc")
    done = subprocess.run([sys.executable, "-m", "toolrig", "console", "--host", "0.0.0.0", "--token-file",
                           str(short)], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1 and "at least 16" in done.stderr


def test_an_upstream_servers_tools_are_filtered_by_source_and_show_their_pin(tmp_path: Path) -> None:
    peer = Path(__file__).resolve().parents[1] / "mcp" / "peer_server.py"
    config = write_config(tmp_path, extra=f"[mcpServers.peer]\ncommand = {json.dumps(sys.executable)}\n"
                                          f"args = [{json.dumps(str(peer))}, \"stdio\"]\n")
    open_pins(tmp_path / "mcp.db").approve_launch([sys.executable, str(peer), "stdio"], None, {})
    with running(["console", "--config", str(config)], tmp_path, {"TOOLRIG_MCP_STATE": str(tmp_path / "mcp.db")}) \
            as run, httpx.Client(base_url=run.base, timeout=60) as http:
        http.get(run.url)
        names = re.findall(r'href="/tools/([^"]+)"', http.get("/tools", params={"source": "peer"}).text)
        assert names and all(n.startswith("peer__") for n in names)
        assert "ship" in re.findall(r'href="/tools/([^"]+)"', http.get("/tools", params={"source": "local"}).text)
        page = http.get(f"/tools/{names[0]}").text
        assert re.search(r"<dt>pin</dt><dd>pinned [0-9a-f]{16} \(peer, ", page), page


def test_approve_for_this_session_remembers_the_call_in_its_session_only(client: httpx.Client, console: Any) -> None:
    queue_path = console.folder / "approvals.db"
    request = _run(_file_in_session, queue_path, "r-9", "s-77")
    card = client.get(f"/approvals/{request.id}").text
    assert f'formaction="/approvals/{request.id}/remember"' in card and "Approve for this session" in card
    headers = {"origin": console.base, "x-csrf-token": csrf_of(client)}
    done = client.post(f"/approvals/{request.id}/remember", data={"binding": request.binding}, headers=headers)
    assert done.status_code == 200 and "approved for this session" in done.text
    assert _run(_get, queue_path, request.id).status == "approved"
    assert _run(_remembered, queue_path, "r-9", "s-77") is not None
    assert _run(_remembered, queue_path, "r-9", "s-78") is None
    assert _run(_remembered, queue_path, "r-10", "s-77") is None
    lone = _run(_file_in_session, queue_path, "r-9", None)  # no session: no such button, and the route refuses
    assert "Approve for this session" not in client.get(f"/approvals/{lone.id}").text
    refused = client.post(f"/approvals/{lone.id}/remember", data={"binding": lone.binding}, headers=headers)
    assert refused.status_code == 409 and "no session" in refused.text
    assert _run(_get, queue_path, lone.id).status == "pending"
