"""Held-out attacks on OpenAPI tools: a model's values never move the request to another path, never override a
credential, never add a header; a document that expands without end (YAML aliases, nesting, a cycle, a device
file) is a bounded DefinitionError; a server or redirect to a private address is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from openapi_helpers import Recorder, Seen, json_answer, recording_server

from toolrig import Runtime, ToolCall
from toolrig.errors import DefinitionError
from toolrig.openapi import from_openapi

pytestmark = pytest.mark.anyio


def _spec(base: str) -> dict[str, Any]:
    return {
        "openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "servers": [{"url": f"{base}/api/v1"}],
        "components": {"securitySchemes": {"q": {"type": "apiKey", "in": "query", "name": "key"},
                                           "h": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
                                           "b": {"type": "http", "scheme": "bearer"}}},
        "security": [{"q": [], "h": [], "b": []}],
        "paths": {"/users/{id}/profile": {"get": {"operationId": "profile", "parameters": [
            {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
            {"name": "key", "in": "query", "schema": {"type": "string"}},
            {"name": "x-api-key", "in": "header", "schema": {"type": "string"}},
            {"name": "AUTHORIZATION", "in": "header", "schema": {"type": "string"}},
            {"name": "X-Note", "in": "header", "schema": {"type": "string"}}]}},
            "/files/{a}{b}": {"get": {"operationId": "two", "parameters": [
                {"name": "a", "in": "path", "required": True, "schema": {"type": "string"}},
                {"name": "b", "in": "path", "required": True, "schema": {"type": "string"}}]}}}}


@pytest.fixture(scope="module")
def _server() -> Any:
    with recording_server() as recorder:
        yield recorder


@pytest.fixture
def api(_server: Recorder) -> Recorder:
    _server.seen.clear()
    _server.answer = json_answer
    return _server


def _tools(api: Recorder, **kwargs: Any) -> Any:
    return from_openapi(_spec(api.base), client_options={"allow_endpoints": [api.endpoint]}, **kwargs)


async def _call(api: Recorder, name: str, arguments: dict[str, Any], **kwargs: Any) -> Any:
    async with Runtime(_tools(api, **kwargs), audit=False) as runtime:
        return await runtime.call(ToolCall(name=name, arguments=arguments))


@pytest.mark.parametrize(("name", "arguments"), [
    ("profile", {"id": ".."}), ("profile", {"id": "."}), ("profile", {"id": ""}),
    ("two", {"a": ".", "b": "."}), ("two", {"a": "", "b": ".."}), ("two", {"a": "", "b": ""}),
])
async def test_a_path_value_that_would_collapse_its_segment_is_refused(api: Recorder, name: str,
                                                                       arguments: dict[str, Any]) -> None:
    outcome = await _call(api, name, arguments)
    assert not outcome.ok and "segment" in outcome.content
    assert api.seen == []  # /api/v1/users/../profile would have been /api/v1/profile


@pytest.mark.parametrize("value", ["../admin", "%2e%2e", "%2e%2e%2fadmin", "a?x=1#f", "u@evil.example", "a\r\nb",
                                   "//evil.example", "...", ".a"])
async def test_other_path_values_stay_in_their_segment(api: Recorder, value: str) -> None:
    outcome = await _call(api, "profile", {"id": value})
    assert outcome.ok, outcome.content
    [seen] = api.seen
    assert seen.path.startswith("/api/v1/users/") and seen.path.endswith("/profile")
    assert seen.path.count("/") == 5 and seen.query == []


async def test_credentials_replace_what_the_model_sends_under_their_names(api: Recorder) -> None:
    outcome = await _call(api, "profile", {"id": "1", "key": "MINE", "x-api-key": "MINE", "AUTHORIZATION": "MINE"},
                          auth={"q": "Q-SECRET", "h": "H-SECRET", "b": "B-TOKEN", "x-note": "plain"})
    assert outcome.ok, outcome.content
    [seen] = api.seen
    assert seen.query == [("key", "Q-SECRET")]  # not key=MINE&key=Q-SECRET (a server may read the first)
    assert seen.headers["x-api-key"] == "H-SECRET" and seen.headers["authorization"] == "Bearer B-TOKEN"
    assert seen.headers["x-note"] == "plain"


@pytest.mark.parametrize("value", ["a\r\nX-Evil: 1", "a\nX-Evil: 1", "a\x00b", "a\x0bX-Evil: 1", "a\x7f"])
async def test_header_values_cannot_add_headers(api: Recorder, value: str) -> None:
    outcome = await _call(api, "profile", {"id": "1", "X-Note": value})
    assert outcome.ok, outcome.content
    [seen] = api.seen
    assert "x-evil" not in seen.headers and seen.headers["x-note"].startswith("a")
    assert seen.headers["x-note"].isprintable()


@pytest.mark.parametrize("value", ["café", "中文", "a\u2028b"])
async def test_header_values_outside_ascii_are_a_clear_refusal(api: Recorder, value: str) -> None:
    outcome = await _call(api, "profile", {"id": "1", "X-Note": value})
    assert not outcome.ok and "ASCII" in outcome.content
    assert api.seen == []


async def test_servers_and_redirects_to_private_addresses_are_refused(api: Recorder) -> None:
    for url in ("http://169.254.169.254/latest", "http://10.0.0.1", "http://[::1]:8080", "http://0x7f000001"):
        tools = from_openapi({**_spec(api.base), "servers": [{"url": url}]}, client_options={})
        async with Runtime(tools, audit=False) as runtime:
            outcome = await runtime.call(ToolCall(name="profile", arguments={"id": "1"}))
        assert not outcome.ok, url
    variables = {**_spec(api.base), "servers": [{"url": "http://{host}/v1", "variables": {
        "host": {"default": "169.254.169.254"}}}]}
    async with Runtime(from_openapi(variables), audit=False) as runtime:
        outcome = await runtime.call(ToolCall(name="profile", arguments={"id": "1"}))
    assert not outcome.ok

    def answer(seen: Seen) -> tuple[int, dict[str, str], bytes]:
        return 307, {"location": "http://127.0.0.1:1/admin"}, b""

    api.answer = answer
    outcome = await _call(api, "profile", {"id": "1"})
    assert not outcome.ok and len(api.seen) == 1
    with pytest.raises(DefinitionError):
        from_openapi({**_spec(api.base), "servers": [{"url": "file:///etc/passwd"}]})


def _alias_bomb(levels: int) -> str:
    lines = ['openapi: "3.0.0"', 'info: {title: t, version: "1"}', 'servers: [{url: "https://x.example"}]',
             "x-a0: &a0 {type: string}"]
    lines += [f"x-a{i}: &a{i} {{type: object, properties: {{p: *a{i - 1}, q: *a{i - 1}, r: *a{i - 1}}}}}"
              for i in range(1, levels + 1)]
    lines.append(f"paths: {{/p: {{post: {{operationId: op, requestBody: {{content: {{application/json: "
                 f"{{schema: *a{levels}}}}}}}}}}}}}")
    return "\n".join(lines) + "\n"


def test_documents_that_expand_without_end_are_a_bounded_error(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_alias_bomb(24))  # 2 KB that stand for 3**24 values
    with pytest.raises(DefinitionError, match="values"):
        from_openapi(bomb)
    small = tmp_path / "small.yaml"
    small.write_text(_alias_bomb(3))
    assert from_openapi(small).get("op") is not None  # aliases as such are fine
    deep = tmp_path / "deep.json"
    deep.write_text('{"openapi": "3.0.0", "paths": {}, "x": ' + "[" * 50_000 + "]" * 50_000 + "}")
    with pytest.raises(DefinitionError, match="deeply"):
        from_openapi(deep)
    deep.write_text('{"openapi": "3.0.0", "paths": {}, "x": ' + "[" * 500 + "]" * 500 + "}")
    with pytest.raises(DefinitionError, match="levels"):
        from_openapi(deep)
    cyclic: dict[str, Any] = {"openapi": "3.0.0", "paths": {}}
    cyclic["x-self"] = cyclic
    with pytest.raises(DefinitionError, match="levels"):
        from_openapi(cyclic, base_url="https://x.example")
    with pytest.raises(DefinitionError, match="larger than"):
        from_openapi("/dev/zero")
    for ref in ("file:///etc/passwd", "http://169.254.169.254/spec.json#/x", "/etc/passwd", "#/components/../x"):
        doc = {"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {"/a": {"post": {
            "operationId": "a", "requestBody": {"content": {"application/json": {"schema": {
                "type": "object", "properties": {"v": {"$ref": ref}}}}}}}}}}
        with pytest.raises(DefinitionError, match=r"\$ref"):
            from_openapi(doc, base_url="https://x.example")


@pytest.mark.parametrize("value", ["0", ".evil.example", "@evil.example", ":80@evil.example"])
async def test_a_path_without_its_leading_slash_cannot_reach_the_host_or_port(api: Recorder, value: str) -> None:
    spec = {"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {"{id}": {"get": {
        "operationId": "g", "parameters": [{"name": "id", "in": "path", "required": True,
                                            "schema": {"type": "string"}}]}}}}
    tools = from_openapi(spec, base_url=api.base, client_options={"allow_endpoints": [api.endpoint]})
    async with Runtime(tools, audit=False) as runtime:
        outcome = await runtime.call(ToolCall(name="g", arguments={"id": value}))
    assert outcome.ok, outcome.content  # http://127.0.0.1:PORT/0, not port PORT0
    assert [seen.path.count("/") for seen in api.seen] == [1]


async def test_a_spec_url_redirecting_to_a_private_address_or_file_is_refused(api: Recorder) -> None:
    def answer(seen: Seen) -> tuple[int, dict[str, str], bytes]:
        where = "file:///etc/passwd" if seen.path == "/file" else "http://169.254.169.254/latest/meta-data"
        return 302, {"location": where}, b""

    api.answer = answer
    for path in ("/metadata", "/file"):
        with pytest.raises(DefinitionError):
            from_openapi(f"{api.base}{path}", client_options={"allow_endpoints": [api.endpoint]})
