"""What stands between a browser and the console: token, session cookie, CSRF, Host and Origin, headers.

The console prints one URL with a per-run token (``/login?token=...``). Opening it exchanges the token for a
session: an ``HttpOnly``, ``SameSite=Strict`` cookie naming a random session id the server keeps in memory, and a
CSRF token for that session. Without a valid session nothing is served (401), static files included.

Every request must carry a ``Host`` the console listens as (a DNS-rebinding page names its own host: 421). Every
state-changing request (anything but GET / HEAD) must carry the console's own ``Origin`` (403 otherwise) and the
session's CSRF token, as the ``X-CSRF-Token`` header (htmx sends it on every request) or the ``csrf`` field of
an urlencoded form (403 otherwise). Every response carries a strict Content-Security-Policy
(``script-src 'self'``: no inline script, no eval), ``nosniff``, no framing and no caching.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

__all__ = ["COOKIE", "CSP", "ConsoleGuard", "Sessions"]

COOKIE = "toolrig_console"
"""The session cookie's name starts so; each run adds a suffix of its own (:attr:`Sessions.cookie`): cookies are not
kept apart by port, and two consoles on one host must not sign each other out."""
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
MAX_FORM_BYTES = 2_000_000
"""The largest request body the console reads (a form with a big JSON argument fits)."""
MAX_SESSIONS = 1_000

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


@dataclass
class Sessions:
    """The per-run token and the sessions it was exchanged for (in memory: a restart logs everyone out)."""

    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    cookie: str = field(default_factory=lambda: f"{COOKIE}_{secrets.token_hex(4)}")
    _csrf: dict[str, str] = field(default_factory=dict)

    def token_matches(self, given: str) -> bool:
        """Whether ``given`` is the run's token (constant time)."""
        return hmac.compare_digest(given.encode(), self.token.encode())

    def open(self) -> str:
        """A new session id (the oldest session is dropped beyond :data:`MAX_SESSIONS`)."""
        if len(self._csrf) >= MAX_SESSIONS:
            self._csrf.pop(next(iter(self._csrf)))
        sid = secrets.token_urlsafe(32)
        self._csrf[sid] = secrets.token_urlsafe(32)
        return sid

    def csrf(self, sid: str | None) -> str | None:
        """The CSRF token of session ``sid`` (None: no such session)."""
        return None if not sid else self._csrf.get(sid)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _cookie(scope: Scope, name: str) -> str | None:
    raw = _header(scope, b"cookie") or ""
    for part in raw.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


async def _plain(send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
        *_HEADERS, *(extra or [])]})
    await send({"type": "http.response.body", "body": body})


class ConsoleGuard:
    """ASGI middleware enforcing the module docstring's rules in front of ``app``.

    Args:
        app: the console application.
        sessions: the token and sessions.
        hosts: the ``Host`` values accepted (``127.0.0.1:PORT``, ``localhost:PORT`` ...).
        origin: the console's own origin (``http://127.0.0.1:PORT``); POSTs must carry it (or another of
            ``hosts`` as ``http://HOST``).
    """

    def __init__(self, app: ASGIApp, sessions: Sessions, *, hosts: set[str], origins: set[str]) -> None:
        self.app = app
        self.sessions = sessions
        self.hosts = {h.lower() for h in hosts}
        self.origins = {o.lower() for o in origins}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # the console speaks no websocket
            await send({"type": "websocket.close", "code": 1008})
            return
        host = (_header(scope, b"host") or "").lower()
        if host not in self.hosts:
            await _plain(send, 421, "this console does not answer to that host name")
            return
        if scope["path"] == "/login":
            await self._login(scope, send)
            return
        sid = _cookie(scope, self.sessions.cookie)
        csrf = self.sessions.csrf(sid)
        if csrf is None:
            await _plain(send, 401, "not signed in: open the full URL toolrig console printed when it started")
            return
        scope.setdefault("state", {})["csrf"] = csrf
        if scope["method"] not in ("GET", "HEAD"):
            origin = (_header(scope, b"origin") or "").lower()
            if origin not in self.origins:
                await _plain(send, 403, "refused: this request does not come from the console's own page (Origin)")
                return
            replayed = await self._checked_body(scope, receive, send, csrf)
            if replayed is None:
                return
            receive = replayed
        await self.app(scope, receive, _with_headers(send))

    async def _login(self, scope: Scope, send: Send) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        given = (query.get("token") or [""])[0]
        if scope["method"] != "GET" or not given or not self.sessions.token_matches(given):
            await _plain(send, 403, "wrong or missing token: open the full URL toolrig console printed")
            return
        sid = self.sessions.open()
        cookie = f"{self.sessions.cookie}={sid}; HttpOnly; SameSite=Strict; Path=/".encode()
        await send({"type": "http.response.start", "status": 303, "headers": [
            (b"location", b"/tools"), (b"set-cookie", cookie), (b"content-length", b"0"), *_HEADERS]})
        await send({"type": "http.response.body", "body": b""})

    async def _checked_body(self, scope: Scope, receive: Receive, send: Send, csrf: str) -> Receive | None:
        """The request's body read (capped) and its CSRF token checked; a ``receive`` replaying it, or None
        when the request was refused (answered already)."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_FORM_BYTES:
                await _plain(send, 413, "request body too large")
                return None
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        given = _header(scope, b"x-csrf-token")
        if given is None and (_header(scope, b"content-type") or "").startswith("application/x-www-form-urlencoded"):
            fields = parse_qs(body.decode("utf-8", "replace")).get("csrf")
            given = fields[0] if fields else None
        if given is None or not hmac.compare_digest(given.encode(), csrf.encode()):
            await _plain(send, 403, "refused: missing or wrong CSRF token (reload the page)")
            return None
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return replay


def _with_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            present = {k.lower() for k, _ in message.get("headers", [])}
            message["headers"] = [*message.get("headers", []), *(h for h in _HEADERS if h[0] not in present)]
        await send(message)

    return sending

