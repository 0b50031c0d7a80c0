"""OpenAPI both ways: an API's operations as tools, and tools as an OpenAPI 3.1 document.

* :func:`from_openapi` — one tool per operation of an OpenAPI 3 document (a dict, a file or a URL): operationId as
  the name, path / query / header parameters and the body as one input schema (``$ref`` s resolved), GET read-only
  and DELETE destructive; calls go out with httpx through the SSRF guard, to the API's own host only.
* :func:`to_openapi` — ``POST /tools/{name}`` per tool, the arguments as the JSON body and the outcome as the
  answer; ``toolrig serve --openapi`` serves exactly that (same pipeline, same auth) beside MCP.
* :func:`validate_openapi` — check a document with ``openapi-spec-validator`` (the ``openapi`` extra).
"""

from __future__ import annotations

from typing import Any

from toolrig.openapi._from import afrom_openapi, from_openapi
from toolrig.openapi._operations import Argument, Operation
from toolrig.openapi._to import ERROR_STATUS, OUTCOME_SCHEMA, to_openapi

__all__ = [
    "ERROR_STATUS",
    "OUTCOME_SCHEMA",
    "Argument",
    "Operation",
    "afrom_openapi",
    "from_openapi",
    "to_openapi",
    "validate_openapi",
]


def validate_openapi(document: Any) -> None:
    """Raise when ``document`` is not a valid OpenAPI document (``openapi-spec-validator``'s error, unchanged).

    Raises:
        ImportError: the ``openapi`` extra is not installed.
    """
    try:
        from openapi_spec_validator import validate
    except ImportError as exc:
        raise ImportError("openapi-spec-validator is not installed: pip install 'toolrig[openapi]'") from exc
    validate(document)
