"""Building requests from arguments: whatever the model sends, the request stays on the API's host and path."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st
from openapi_helpers import PETSTORE

from toolrig.errors import ModelRetry
from toolrig.openapi import from_openapi

TOOLS = from_openapi(PETSTORE, base_url="https://pets.example/api/v3")


def request_for(name: str, values: dict[str, object]) -> Any:
    from toolrig.openapi._document import Document, load_document
    from toolrig.openapi._operations import operations
    from toolrig.openapi._request import build_request

    doc, _ = load_document(PETSTORE)
    [op] = list(operations(Document(doc), only=[name]))
    return build_request(op, "https://pets.example/api/v3", values, None)


@given(st.text(min_size=1, max_size=60))
def test_a_path_value_never_leaves_its_segment(username: str) -> None:
    values = TOOLS.get("getUserByName").validate({"username": username})  # type: ignore[union-attr]
    if username in (".", ".."):  # the whole segment: /user/.. is /api/v3 once collapsed
        with pytest.raises(ModelRetry, match="segment"):
            request_for("getUserByName", values)
        return
    request = request_for("getUserByName", values)
    parts = urlsplit(request.url)
    assert parts.scheme == "https" and parts.hostname == "pets.example"
    assert parts.query == "" and parts.fragment == ""
    head, _, segment = parts.path.rpartition("/")
    assert head == "/api/v3/user" and unquote(segment) == username


@given(st.text(max_size=40), st.text(max_size=40))
def test_query_values_are_encoded_and_kept(username: str, password: str) -> None:
    request = request_for("loginUser", {"username": username, "password": password})
    parts = urlsplit(request.url)
    assert parts.hostname == "pets.example" and parts.path == "/api/v3/user/login"
    assert parse_qsl(parts.query, keep_blank_values=True) == [("username", username), ("password", password)]


@given(st.text(max_size=40))
def test_header_values_cannot_split_the_request(value: str) -> None:
    if not value.isascii():
        with pytest.raises(ModelRetry, match="ASCII"):
            request_for("deletePet", {"petId": 1, "api_key": value})
        return
    request = request_for("deletePet", {"petId": 1, "api_key": value})
    sent = request.headers["api_key"]
    assert sent.isprintable() and sent == sent.strip(" ")  # no CR, LF, NUL or other control character
    assert request.method == "DELETE" and request.url == "https://pets.example/api/v3/pet/1"
