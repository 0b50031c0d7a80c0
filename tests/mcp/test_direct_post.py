"""The streamable-HTTP client's POSTs handed straight to the bounded transport (:mod:`toolrig.mcp.client._direct`):
only while nothing of the ``httpx2.AsyncClient``'s would act on them, and the client's settings kept when it would.
A real socket server on 127.0.0.1 (``test_lean_http.serving``) records what arrives.
"""

from __future__ import annotations

import anyio
import anyio.abc
import httpx2
import pytest
from test_lean_http import echo, ok, serving

from toolrig.mcp.client._direct import DirectPost
from toolrig.mcp.client._http_bounds import BoundedTransport
from toolrig.mcp.client._lean_http import LeanTransport
from toolrig.mcp.client._redirects import next_within_origin

pytestmark = pytest.mark.anyio


def bounded() -> BoundedTransport:
    return BoundedTransport(LeanTransport(), limit=1 << 20, server="up")


def head(request: bytes) -> bytes:
    return request.split(b"\r\n\r\n")[0].lower()


async def test_a_plain_client_posts_directly_with_its_headers_and_the_requests_own() -> None:
    transport = bounded()
    async with serving() as (url, server), httpx2.AsyncClient(transport=transport, headers={"x-team": "a"}) as http:
        direct = DirectPost(http, transport)
        assert direct.usable()
        response = await direct.send(httpx2.URL(url), {"x-call": "1", "x-team": "b"}, b'{"n":1}')
        assert response is not None
        assert await response.aread() == b'{"n":1}'
        await response.aclose()
    sent = head(server.requests[0])
    assert b"\r\nx-call: 1" in sent and b"\r\nx-team: b" in sent and b"x-team: a" not in sent
    assert b"\r\naccept-encoding: identity" in sent  # the bounded transport's own rule still applies


@pytest.mark.parametrize("setting", ["auth", "cookies", "params", "hooks", "closed"])
async def test_whatever_the_client_would_do_to_a_request_sends_it_through_the_client(setting: str) -> None:
    async def hook(request: httpx2.Request) -> None:
        pass

    transport = bounded()
    http = httpx2.AsyncClient(
        transport=transport, auth=httpx2.BasicAuth("u", "p") if setting == "auth" else None,
        cookies={"affinity": "1"} if setting == "cookies" else None,
        params={"key": "v"} if setting == "params" else None,
        event_hooks={"request": [hook]} if setting == "hooks" else None)
    if setting == "closed":
        await http.aclose()
    assert not DirectPost(http, transport).usable()
    await http.aclose()


async def test_a_redirect_goes_back_to_the_client_which_follows_it_within_the_origin() -> None:
    async def moved(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await stream.send(b"HTTP/1.1 307 Temporary Redirect\r\nlocation: /mcp2\r\ncontent-length: 0\r\n\r\n")
        return True

    transport = bounded()
    async with serving(moved, moved, echo) as (url, server), httpx2.AsyncClient(transport=transport) as http:
        direct = DirectPost(http, transport)
        assert await direct.send(httpx2.URL(url), {}, b'{"n":1}') is None
        assert not direct.usable()  # the session's POSTs go through the client from now on
        response = await http.send(http.build_request("POST", url, content=b'{"n":1}'), stream=True)
        following = next_within_origin(response)
        await response.aclose()
        assert following is not None
        response = await http.send(following)
        assert response.content == b'{"n":1}'
    assert [r.split(b" ")[1] for r in server.requests] == [b"/mcp", b"/mcp", b"/mcp2"]


async def test_a_cookie_set_by_the_server_is_kept_and_sent_by_the_client_from_then_on() -> None:
    async def cookie(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await stream.send(ok().replace(b"\r\n\r\n", b"\r\nset-cookie: affinity=node-2; Path=/\r\n\r\n", 1))
        return True

    transport = bounded()
    async with serving(cookie) as (url, server), httpx2.AsyncClient(transport=transport) as http:
        direct = DirectPost(http, transport)
        response = await direct.send(httpx2.URL(url), {}, b'{"n":1}')
        assert response is not None
        await response.aclose()
        assert http.cookies.get("affinity") == "node-2"
        assert not direct.usable()
        await http.post(url, content=b'{"n":2}')
    assert b"\r\ncookie: affinity=node-2" in head(server.requests[1])


async def test_the_clients_timeouts_bound_a_direct_post() -> None:
    async def silent(stream: anyio.abc.SocketStream, request: bytes) -> bool:
        await anyio.sleep_forever()  # never answers (cancelled when the server stops)
        return False

    transport = bounded()
    async with serving(silent) as (url, _), httpx2.AsyncClient(
            transport=transport, timeout=httpx2.Timeout(5.0, read=0.2)) as http:
        with pytest.raises(httpx2.ReadTimeout):
            await DirectPost(http, transport).send(httpx2.URL(url), {}, b'{"n":1}')


async def test_credentials_in_the_url_leave_the_post_to_the_client_which_sends_them() -> None:
    transport = bounded()
    async with serving() as (url, server), httpx2.AsyncClient(transport=transport) as http:
        with_user = httpx2.URL(url.replace("http://", "http://ann:s3cret@"))
        direct = DirectPost(http, transport)
        assert await direct.send(with_user, {}, b"{}") is None and not direct.usable()
        assert server.requests == []  # nothing went out directly
        response = await http.post(with_user, content=b"{}")
        assert response.status_code == 200
    assert b"\r\nauthorization: basic " in head(server.requests[0])

@pytest.mark.parametrize(("client_headers", "headers", "content"), [
    ({"x-team": "a"}, {"accept": "application/json", "x-team": "b", "Mcp-Session-Id": "s1"}, b'{"n":1}'),
    ({}, {"content-type": "application/json"}, b"[]"),
    ({"X-Dup": "1"}, {"x-dup": "2", "x-dup-2": "3"}, b"{}"),
    ({"host": "elsewhere"}, {"x": "1"}, b"{}"),  # framing of the caller's: httpx2 builds it
    ({}, {"Content-Length": "2"}, b"{}"),
    ({}, {"transfer-encoding": "chunked"}, b"{}"),
    ({}, {"x": "1"}, b""),  # no body: httpx2's Content-Length: 0
])
async def test_the_post_is_the_request_the_client_would_build(
        client_headers: dict[str, str], headers: dict[str, str], content: bytes) -> None:
    transport = bounded()
    async with httpx2.AsyncClient(transport=transport, headers=client_headers) as http:
        direct = DirectPost(http, transport)
        url = httpx2.URL("http://127.0.0.1:8123/mcp")
        for _ in range(2):  # the second from the kept merge
            mine = direct.request(url, headers, content)
            theirs = http.build_request("POST", url, headers=headers, content=content)
            assert (mine.method, mine.url, mine.headers.raw, mine.content, mine.extensions) == (
                theirs.method, theirs.url, theirs.headers.raw, theirs.content, theirs.extensions)
            assert isinstance(mine.stream, httpx2.ByteStream)
        http.headers["x-team"] = "changed"  # a change of the client's headers is seen by the next POST
        http.timeout = httpx2.Timeout(1.5)
        mine = direct.request(url, headers, content)
        theirs = http.build_request("POST", url, headers=headers, content=content)
        assert (mine.headers.raw, mine.extensions) == (theirs.headers.raw, theirs.extensions)
