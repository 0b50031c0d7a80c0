"""from_openapi on the Swagger Petstore 3 document: each tool's call reaches a local server with the right method,
path, query, headers and body; bad arguments never leave; only the API's host is reached."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from openapi_helpers import PETSTORE, Recorder, Seen, recording_server

from toolrig import Permission, Runtime, ToolCall, Trust
from toolrig.errors import DefinitionError
from toolrig.openapi import from_openapi

pytestmark = pytest.mark.anyio


@pytest.fixture
def api() -> Any:
    with recording_server() as recorder:
        yield recorder


def petstore(api: Recorder, **kwargs: Any) -> Any:
    return from_openapi(PETSTORE, base_url=f"{api.base}/api/v3", client_options={"allow_endpoints": [api.endpoint]},
                        **kwargs)


def test_one_tool_per_operation_with_honest_permissions(api: Recorder) -> None:
    tools = petstore(api)
    assert len(tools.names()) == 19
    perms = {t.name: t.spec.permission for t in tools.list()}
    assert perms["getPetById"] is Permission.READONLY and perms["findPetsByStatus"] is Permission.READONLY
    assert perms["deletePet"] is Permission.DESTRUCTIVE and perms["deleteUser"] is Permission.DESTRUCTIVE
    assert perms["addPet"] is Permission.WRITE and perms["updateUser"] is Permission.WRITE
    assert all(t.spec.trust is Trust.EXTERNAL for t in tools.list())
    add = tools.get("addPet").spec  # type: ignore[union-attr]
    assert add.input_schema["required"] == ["name", "photoUrls"]  # the body's fields, $refs resolved
    assert add.input_schema["properties"]["category"] == {"$ref": "#/$defs/Category"}
    assert add.input_schema["$defs"]["Tag"]["properties"]["name"] == {"type": "string"}
    assert add.input_schema["properties"]["status"]["enum"] == ["available", "pending", "sold"]
    assert tools.get("getPetById").spec.description == "Find pet by ID.\n\nReturns a single pet."  # type: ignore
    assert petstore(api, operations=["getPetById", "addPet"]).names() == ["addPet", "getPetById"]


CASES: list[tuple[str, dict[str, Any], str, str, list[tuple[str, str]], Any]] = [
    ("getPetById", {"petId": 7}, "GET", "/api/v3/pet/7", [], None),
    ("findPetsByStatus", {"status": "sold"}, "GET", "/api/v3/pet/findByStatus", [("status", "sold")], None),
    ("findPetsByTags", {"tags": ["a b", "c"]}, "GET", "/api/v3/pet/findByTags", [("tags", "a b"), ("tags", "c")],
     None),
    ("addPet", {"name": "rex", "photoUrls": ["u"], "category": {"id": 1, "name": "dogs"}, "status": "pending"},
     "POST", "/api/v3/pet", [], {"name": "rex", "photoUrls": ["u"], "category": {"id": 1, "name": "dogs"},
                                 "status": "pending"}),
    ("updatePet", {"id": 3, "name": "max", "photoUrls": []}, "PUT", "/api/v3/pet", [],
     {"id": 3, "name": "max", "photoUrls": []}),
    ("updatePetWithForm", {"petId": 3, "name": "max", "status": "sold"}, "POST", "/api/v3/pet/3",
     [("name", "max"), ("status", "sold")], None),
    ("deletePet", {"petId": 9, "api_key": "k-1"}, "DELETE", "/api/v3/pet/9", [], None),
    ("placeOrder", {"petId": 5, "quantity": 2, "complete": False}, "POST", "/api/v3/store/order", [],
     {"petId": 5, "quantity": 2, "complete": False}),
    ("loginUser", {"username": "ann", "password": "p&w=1"}, "GET", "/api/v3/user/login",
     [("username", "ann"), ("password", "p&w=1")], None),
    ("updateUser", {"username": "ann", "body": {"email": "a@b.c"}}, "PUT", "/api/v3/user/ann", [],
     {"email": "a@b.c"}),
    ("createUsersWithListInput", {"body": [{"username": "x"}]}, "POST", "/api/v3/user/createWithList", [],
     [{"username": "x"}]),
    ("getUserByName", {"username": "../admin?x=1#y"}, "GET", "/api/v3/user/..%2Fadmin%3Fx%3D1%23y", [], None),
    ("getInventory", {}, "GET", "/api/v3/store/inventory", [], None),
]


@pytest.mark.parametrize(("name", "arguments", "method", "path", "query", "body"), CASES, ids=[c[0] for c in CASES])
async def test_calls_reach_the_server_as_the_document_says(api: Recorder, name: str, arguments: dict[str, Any],
                                                            method: str, path: str, query: list[tuple[str, str]],
                                                            body: Any) -> None:
    async with Runtime(petstore(api), audit=False, approval=lambda *a: True) as runtime:  # deletes ask first
        outcome = await runtime.call(ToolCall(name=name, arguments=arguments))
    assert outcome.ok, outcome.content
    [seen] = api.seen
    assert (seen.method, seen.path, seen.query) == (method, path, query)
    assert json.loads(seen.body) == body if body is not None else seen.body == b""
    if body is not None:
        assert seen.headers["content-type"] == "application/json"
    if name == "deletePet":
        assert seen.headers["api_key"] == "k-1"
    assert outcome.structured == {"method": method, "path": path, "query": [list(q) for q in query]} or \
        outcome.structured == {"method": method, "path": path.replace("%23", "#"), "query": []}


async def test_an_octet_stream_body_and_query(api: Recorder) -> None:
    async with Runtime(petstore(api), audit=False) as runtime:
        outcome = await runtime.call(ToolCall(name="uploadFile", arguments={
            "petId": 2, "additionalMetadata": "front", "body": "raw image bytes"}))
    assert outcome.ok, outcome.content
    [seen] = api.seen
    assert (seen.method, seen.path, seen.query) == ("POST", "/api/v3/pet/2/uploadImage",
                                                    [("additionalMetadata", "front")])
    assert seen.body == b"raw image bytes" and seen.headers["content-type"] == "application/octet-stream"


@pytest.mark.parametrize(("name", "arguments"), [
    ("getPetById", {"petId": "seven"}), ("getPetById", {}), ("findPetsByStatus", {"status": "lost"}),
    ("addPet", {"name": "rex"}), ("addPet", {"name": "rex", "photoUrls": [], "owner": "me"}),
    ("findPetsByTags", {"tags": "a"}), ("placeOrder", {"status": "gone"}), ("getPetById", "{not json"),
])
async def test_bad_arguments_never_leave(api: Recorder, name: str, arguments: Any) -> None:
    async with Runtime(petstore(api), audit=False) as runtime:
        outcome = await runtime.call(ToolCall(name=name, arguments=arguments))
    assert not outcome.ok and outcome.error is not None
    assert outcome.error.kind.value == "invalid_arguments"
    assert api.seen == []


async def test_credentials_by_security_scheme(api: Recorder) -> None:
    tools = petstore(api, auth={"api_key": "secret-1", "X-Trace": "t"})
    async with Runtime(tools, audit=False) as runtime:
        await runtime.call(ToolCall(name="getInventory", arguments={}))
        await runtime.call(ToolCall(name="getOrderById", arguments={"orderId": 1}))
    inventory, order = api.seen
    assert inventory.headers["api_key"] == "secret-1" and inventory.headers["x-trace"] == "t"
    assert "api_key" not in order.headers  # that operation does not ask for it
    bearer = petstore(api, auth={"petstore_auth": "tok"})
    async with Runtime(bearer, audit=False) as runtime:
        await runtime.call(ToolCall(name="addPet", arguments={"name": "a", "photoUrls": []}))
    assert api.seen[-1].headers["authorization"] == "Bearer tok"


async def test_http_errors_and_redirects_fail_the_call(api: Recorder) -> None:
    def answer(seen: Seen) -> tuple[int, dict[str, str], bytes]:
        if seen.path.endswith("/pet/1"):
            return 404, {"content-type": "application/json"}, b'{"message": "Pet not found"}'
        return 302, {"location": "http://169.254.169.254/latest/meta-data"}, b""

    api.answer = answer
    async with Runtime(petstore(api), audit=False) as runtime:
        missing = await runtime.call(ToolCall(name="getPetById", arguments={"petId": 1}))
        moved = await runtime.call(ToolCall(name="getPetById", arguments={"petId": 2}))
    assert not missing.ok and "HTTP 404" in missing.content and "Pet not found" in missing.content
    assert not moved.ok and "redirect" in moved.content
    assert len(api.seen) == 2  # the redirect was not followed


async def test_the_ssrf_guard_applies(api: Recorder) -> None:
    tools = from_openapi(PETSTORE, base_url=f"{api.base}/api/v3", client_options={"allowed_ports": [api.port]})
    async with Runtime(tools, audit=False) as runtime:
        outcome = await runtime.call(ToolCall(name="getPetById", arguments={"petId": 1}))
    assert not outcome.ok and "loopback" in outcome.content.lower()
    assert api.seen == []


def test_documents_that_cannot_be_used(tmp_path: Path, api: Recorder) -> None:
    with pytest.raises(DefinitionError, match="base_url"):
        from_openapi(PETSTORE)  # its server is relative: "/api/v3"
    with pytest.raises(DefinitionError, match="no operation"):
        petstore(api, operations=["stealPets"])
    with pytest.raises(DefinitionError, match="OpenAPI 3"):
        from_openapi({"swagger": "2.0", "paths": {}}, base_url="https://x.example")
    external = {"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {"/a": {"get": {
        "operationId": "a", "parameters": [{"$ref": "other.yaml#/p"}], "responses": {"200": {"description": "ok"}}}}}}
    with pytest.raises(DefinitionError, match="only references inside"):
        from_openapi(external, base_url="https://x.example")
    with pytest.raises(DefinitionError, match="cannot read"):
        from_openapi(tmp_path / "missing.json", base_url="https://x.example")


def test_yaml_files_urls_and_recursive_schemas(tmp_path: Path, api: Recorder) -> None:
    import yaml

    doc = {"openapi": "3.0.3", "info": {"title": "tree", "version": "1"},
           "servers": [{"url": "https://{region}.api.example/v1", "variables": {"region": {"default": "eu"}}}],
           "paths": {"/nodes": {"post": {"operationId": "add node!", "requestBody": {"required": True, "content": {
               "application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}},
               "responses": {"200": {"description": "ok"}}}}},
           "components": {"schemas": {"Node": {"type": "object", "required": ["label", "id"], "properties": {
               "id": {"type": "integer", "readOnly": True},
               "label": {"type": "string", "nullable": True},
               "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}}}}}
    path = tmp_path / "tree.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    [tool] = from_openapi(path).list()
    assert tool.name == "add_node"
    assert tool.spec.metadata["openapi"]["base_url"] == "https://eu.api.example/v1"
    schema = tool.spec.input_schema
    assert schema["properties"]["children"] == {"type": "array", "items": {"$ref": "#/$defs/Node"}}
    assert schema["properties"]["label"] == {"type": ["string", "null"]}
    assert "id" not in schema["properties"] and schema["required"] == ["label"]  # readOnly: the server sets it
    tool.validate({"label": "a", "children": [{"label": None, "children": [{"label": "b"}]}]})

    served = json.dumps(doc).encode()
    api.answer = lambda seen: (200, {"content-type": "application/json"}, served)
    from_url = from_openapi(f"{api.base}/spec.json", client_options={"allow_endpoints": [api.endpoint]})
    assert from_url.names() == ["add_node"]
    with pytest.raises(DefinitionError, match="cannot fetch"):
        from_openapi(f"{api.base}/spec.json")  # loopback: the guard refuses the fetch itself
