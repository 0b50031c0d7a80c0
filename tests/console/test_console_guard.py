"""The console's guard on its own (in process, around a stand-in app): whatever a request carries, it reaches the
app only with the session cookie, its own Host, and, when it changes state, its own Origin and CSRF token."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from toolrig.console import CSP, Sessions
from toolrig.console._security import ConsoleGuard

HOST = "127.0.0.1:8000"
ORIGIN = "http://127.0.0.1:8000"


async def _reached(request: Request) -> PlainTextResponse:
    body = await request.body()
    return PlainTextResponse(f"reached {request.method} {len(body)}")


def _guarded() -> tuple[TestClient, Sessions]:
    sessions = Sessions()
    app = Starlette(routes=[Route("/{path:path}", _reached, methods=["GET", "POST", "PUT", "DELETE", "PATCH"])])
    guard = ConsoleGuard(app, sessions, hosts={HOST, "localhost:8000"}, origins={ORIGIN})
    return TestClient(guard, base_url=f"http://{HOST}", follow_redirects=False), sessions


CLIENT, SESSIONS = _guarded()
SID = SESSIONS.open()
CSRF = SESSIONS.csrf(SID)


def test_login_sets_the_cookie_and_the_cookie_opens_the_door() -> None:
    client, sessions = _guarded()
    answer = client.get(f"/login?token={sessions.token}")
    assert answer.status_code == 303 and answer.headers["set-cookie"].startswith(sessions.cookie + "=")
    assert sessions.cookie.startswith("toolrig_console_") and Sessions().cookie != sessions.cookie
    assert client.get("/tools").text == "reached GET 0"
    assert client.get("/tools").headers["content-security-policy"] == CSP


@given(method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH"]),
       host=st.sampled_from([HOST, "localhost:8000", "evil.example", "127.0.0.1:9999", "127.0.0.1", ""]),
       origin=st.sampled_from([None, ORIGIN, "http://evil.example", "null", "http://127.0.0.1:8000/", ""]),
       cookie=st.sampled_from([None, "good", "bad", "empty"]),
       csrf_header=st.sampled_from([None, "good", "bad"]),
       csrf_field=st.sampled_from([None, "good", "bad"]),
       path=st.sampled_from(["/tools", "/login", "/static/htmx.min.js", "/approvals/x/approve", "/%2e%2e/etc"]),
       junk=st.text(st.characters(min_codepoint=33, max_codepoint=126, exclude_characters=";"), max_size=30),
       body=st.text(max_size=40))
def test_only_a_complete_request_reaches_the_app(method: str, host: str, origin: str | None, cookie: str | None,
                                                 csrf_header: str | None, csrf_field: str | None, path: str,
                                                 junk: str, body: str) -> None:
    values = {"good": CSRF, "bad": "x" + junk}
    headers: dict[str, str] = {"host": host}
    if origin is not None:
        headers["origin"] = origin
    if cookie is not None:
        headers["cookie"] = f"{SESSIONS.cookie}=" + {"good": SID, "bad": "nope" + junk, "empty": ""}[cookie]
    if csrf_header is not None:
        headers["x-csrf-token"] = str(values[csrf_header])
    data: dict[str, Any] = {"junk": body}
    if csrf_field is not None:
        data["csrf"] = values[csrf_field]
    answer = CLIENT.request(method, path, headers=headers, data=data if method != "GET" else None)
    reached = answer.text.startswith("reached")
    assert "content-security-policy" in answer.headers
    if path == "/login":
        assert not reached
        return
    allowed = host in (HOST, "localhost:8000") and cookie == "good"
    if method != "GET":
        allowed = allowed and origin == ORIGIN and (
            csrf_header == "good" or (csrf_header is None and csrf_field == "good"))
    assert reached == allowed, (answer.status_code, answer.text)
    if not reached:
        assert answer.status_code in (401, 403, 421)


def test_a_body_too_large_is_refused_before_the_app() -> None:
    headers = {"cookie": f"{SESSIONS.cookie}={SID}", "origin": ORIGIN, "x-csrf-token": str(CSRF)}
    answer = CLIENT.post("/tools", headers=headers, content=b"x" * 2_000_001)
    assert answer.status_code == 413
