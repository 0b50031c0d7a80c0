"""One validated call of an operation as an HTTP request: URL (path and query), headers, body; and its answer.

Path values are percent-encoded whole (a ``/`` or ``..`` in a value cannot change the path), and a value that would
make a whole segment ``.``, ``..`` or empty is refused (a client or server collapses those: ``/users/../admin``);
query arrays follow the parameter's style (``form`` + explode by default); booleans are written ``true`` /
``false``; objects in a query or header are sent as JSON; a header value has its control characters turned into
spaces and must be ASCII. Credentials (:class:`Credentials`) are added per the operation's security requirements,
replacing any value of the same header (in any case) or query name the model supplied.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolrig.errors import ModelRetry
from toolrig.openapi._operations import Operation

__all__ = ["Credentials", "Request", "build_request"]


@dataclass(frozen=True, kw_only=True)
class Request:
    """What to send."""

    method: str
    url: str
    headers: dict[str, str]
    content: bytes | None


@dataclass(frozen=True)
class Credentials:
    """How to authenticate, read from ``auth=``: by security scheme name, or plain headers.

    ``{"api_key": "secret"}`` fills the scheme ``api_key`` of ``components.securitySchemes`` (an API key in a
    header or the query; a bearer token for ``http: bearer``; ``"user:password"`` for ``http: basic``); a key that
    names no scheme is sent as a header of that name.
    """

    values: Mapping[str, str]
    schemes: Mapping[str, Any]

    def apply(self, operation: Operation, headers: dict[str, str], query: list[tuple[str, str]]) -> None:
        """Add the credentials the operation's security asks for (and every plain header)."""
        wanted = {name for requirement in operation.security for name in requirement}  # none asked: none sent
        for key, value in self.values.items():
            scheme = self.schemes.get(key)
            if not isinstance(scheme, Mapping):
                _set_header(headers, key, value)
            elif key in wanted:
                _add(scheme, value, headers, query)


def _set_header(headers: dict[str, str], name: str, value: str) -> None:
    """Set ``name`` replacing any header of the same name in another case (a credential is never sent beside a
    value the model chose for the same header)."""
    for key in [k for k in headers if k.lower() == name.lower()]:
        del headers[key]
    headers[name] = value


def _add(scheme: Mapping[str, Any], value: str, headers: dict[str, str], query: list[tuple[str, str]]) -> None:
    kind = scheme.get("type")
    if kind == "apiKey" and scheme.get("in") == "query":
        name = str(scheme.get("name"))
        query[:] = [(k, v) for k, v in query if k != name]  # the credential, not a model's value before it
        query.append((name, value))
    elif kind == "apiKey":
        _set_header(headers, str(scheme.get("name")), value)
    elif kind == "http" and str(scheme.get("scheme", "")).lower() == "basic":
        import base64

        _set_header(headers, "authorization", "Basic " + base64.b64encode(value.encode()).decode())
    else:  # http bearer, oauth2, openIdConnect: a bearer token
        _set_header(headers, "authorization", f"Bearer {value}")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def build_request(operation: Operation, base_url: str, values: Mapping[str, Any],
                  credentials: Credentials | None) -> Request:
    """The request for one call (``values`` already validated against the operation's input schema)."""
    template = operation.path if operation.path.startswith("/") else "/" + operation.path  # else "{id}" runs on
    path = template  # from the base URL into its host or port
    query: list[tuple[str, str]] = []
    headers: dict[str, str] = {"accept": "application/json, */*;q=0.5"}
    content: bytes | None = None
    if operation.flat_body:
        content, headers["content-type"] = _body(operation.body_type or "application/json", dict(values))
    for arg in operation.arguments:
        if arg.name not in values or (values[arg.name] is None and not arg.required):
            continue
        value = values[arg.name]
        if arg.place == "path":
            path = path.replace("{" + arg.wire_name + "}", urllib.parse.quote(_text(value), safe=""))
        elif arg.place == "query":
            if isinstance(value, list) and arg.explode and arg.style in (None, "form"):
                query.extend((arg.wire_name, _text(v)) for v in value)
            elif isinstance(value, list):
                sep = {"spaceDelimited": " ", "pipeDelimited": "|"}.get(arg.style or "", ",")
                query.append((arg.wire_name, sep.join(_text(v) for v in value)))
            else:
                query.append((arg.wire_name, _text(value)))
        elif arg.place == "header":
            _set_header(headers, arg.wire_name, _header_value(arg.wire_name, _text(value)))
        else:
            content, headers["content-type"] = _body(operation.body_type or "application/json", value)
    if credentials is not None:
        credentials.apply(operation, headers, query)
    _check_segments(template, path)
    url = base_url.rstrip("/") + path
    if query:
        url += "?" + urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
    return Request(method=operation.method.upper(), url=url, headers=headers, content=content)


def _header_value(name: str, text: str) -> str:
    """A header value as sent: control characters (CR, LF, NUL ...) become spaces, so a value cannot split the
    request or add a header, and spaces at either end are dropped; text outside ASCII is refused (HTTP/1.1
    headers carry bytes, not text)."""
    cleaned = "".join(" " if ord(c) < 32 or ord(c) == 127 else c for c in text).strip(" ")  # h11: no edge spaces
    if not cleaned.isascii():
        raise ModelRetry(f"the header parameter {name!r} takes ASCII text only (HTTP headers cannot carry "
                         "other characters)")
    return cleaned


def _check_segments(template: str, path: str) -> None:
    """Refuse a path whose values made a whole segment ``.``, ``..`` or empty: clients and servers collapse those
    (``/users/../admin`` is ``/admin``), so the request would reach another path than the operation's."""
    for raw, filled in zip(template.split("/"), path.split("/"), strict=False):
        if "{" in raw and urllib.parse.unquote(filled) in ("", ".", ".."):
            raise ModelRetry(f"a path parameter of {template} cannot make the segment {filled!r}: it would change "
                             "which path the request reaches")


def _body(media: str, value: Any) -> tuple[bytes, str]:
    if media == "application/x-www-form-urlencoded" and isinstance(value, Mapping):
        pairs = [(k, _text(v)) for k, v in value.items() if v is not None]
        return urllib.parse.urlencode(pairs).encode(), media
    if media in ("application/octet-stream", "text/plain") and isinstance(value, str):
        return value.encode(), media
    return json.dumps(value).encode(), media if media.endswith("json") else "application/json"
