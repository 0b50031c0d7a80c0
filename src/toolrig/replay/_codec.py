"""What a cassette keeps of one call, and how a kept outcome becomes an outcome again.

A recorded call is plain data: the tool's name and version, its validated arguments as canonical JSON, the
run step or call id it was made under (its *lane*), and the outcome the tool body gave — its result parts, or
its error and the classes of the exception behind it (so the retry stage decides the same way on replay).
Secrets are redacted before anything is kept: in the arguments, in text and JSON result parts, in error
messages. Binary parts (images, audio, blobs) are kept as they are (base64).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from toolrig._outcome import ToolError, ToolOutcome
from toolrig._results import ToolResult
from toolrig.redact import Redactor
from toolrig.runtime import Invocation
from toolrig.runtime.executors import exception_from_data, exception_to_data
from toolrig.state import canonical_arguments

__all__ = ["call_document", "canonical_key", "lane_of", "outcome_from_data", "outcome_to_data", "redacted_arguments",
           "scrub"]

_EXCEPTION_KEYS = ("type", "message", "bases", "retry_after", "errors")
_MIN_SECRET = 4
"""Shorter secret values are not searched for in results (they would blank out ordinary text)."""


def _plain_arguments(inv: Invocation) -> Any:
    """The validated arguments as JSON data (sorted keys); values with no JSON form become their repr."""
    values = inv.values if inv.values is not None else inv.arguments or {}
    text = canonical_arguments(values)
    if text is None:
        text = json.dumps(dict(values), sort_keys=True, default=repr, ensure_ascii=False)
    return json.loads(text)


def _secret_parameters(inv: Invocation) -> set[str]:
    """Parameters the tool's schema marks secret (``writeOnly`` or ``format: password``, as pydantic's SecretStr)."""
    if inv.tool is None:
        return set()
    properties = inv.tool.spec.input_schema.get("properties") or {}
    return {name for name, schema in properties.items() if isinstance(schema, Mapping)
            and (schema.get("writeOnly") is True or schema.get("format") == "password")}


def redacted_arguments(inv: Invocation, redactor: Redactor) -> tuple[Any, list[str]]:
    """The validated arguments with secrets redacted, and the secret values found in them (for :func:`scrub`).

    Secret: a value under a key the redactor names sensitive, of a parameter the schema marks secret, or text the
    redactor's rules changed.
    """
    plain = _plain_arguments(inv)
    marked = _secret_parameters(inv)
    if isinstance(plain, dict) and marked:
        plain = {k: "[REDACTED]" if k in marked and v is not None else v for k, v in plain.items()}
    original = _plain_arguments(inv)
    redacted = redactor.value(plain)
    raw = [_revealed((inv.values or {}).get(name)) for name in marked]  # a SecretStr's own value, not its mask
    found = _changed(original, redacted) + [text for text in raw if text is not None and len(text) >= _MIN_SECRET]
    return redacted, sorted(set(found), key=len, reverse=True)


def _revealed(value: Any) -> str | None:
    reveal = getattr(value, "get_secret_value", None)
    if callable(reveal):
        value = reveal()
    return None if value is None else str(value)


def _changed(original: Any, redacted: Any) -> list[str]:
    """The text of every leaf of ``original`` that redaction replaced (a whole subtree: all its leaves)."""
    if original == redacted:
        return []
    if isinstance(original, Mapping) and isinstance(redacted, Mapping):
        return [s for k in original for s in _changed(original[k], redacted.get(k))]
    if isinstance(original, list) and isinstance(redacted, list) and len(original) == len(redacted):
        return [s for a, b in zip(original, redacted, strict=True) for s in _changed(a, b)]
    return [text for text in _leaves(original) if len(text) >= _MIN_SECRET]


def _leaves(value: Any) -> list[str]:
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _leaves(v)]
    if isinstance(value, list):
        return [s for v in value for s in _leaves(v)]
    return [] if value is None or isinstance(value, bool) else [str(value)]


def scrub(value: Any, secrets: list[str]) -> Any:
    """``value`` with every secret found in the arguments replaced wherever it appears (a tool echoing a key)."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, "[REDACTED]")
        return value
    if isinstance(value, Mapping):
        return {k: scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, secrets) for v in value]
    return value


def call_document(inv: Invocation, arguments: Any) -> dict[str, Any]:
    """What identifies a call in a cassette: ``{"tool", "version", "arguments"}`` (arguments as redacted)."""
    tool = inv.tool
    name = tool.spec.name if tool is not None else inv.call.name
    version = tool.spec.version if tool is not None else None
    return {"tool": name, "version": version, "arguments": arguments}


def canonical_key(document: Mapping[str, Any]) -> str:
    """One string per distinct call document (canonical JSON)."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)


def lane_of(inv: Invocation) -> str:
    """Which of several identical calls this is: the workflow step (stable across runs), else the call id."""
    ctx = inv.context
    return ctx.step_id if ctx.step_id is not None else inv.call.id


def _redacted_part(part: dict[str, Any], redactor: Redactor) -> dict[str, Any]:
    out = dict(part)
    for key in ("text", "uri"):
        if isinstance(out.get(key), str):
            out[key] = redactor.text(out[key])
    if out.get("type") == "json":
        out["data"] = redactor.value(out.get("data"))
    return out


def outcome_to_data(outcome: ToolOutcome, redactor: Redactor, secrets: Sequence[str] = ()) -> dict[str, Any]:
    """The kept form of a tool body's outcome (redacted, ``secrets`` scrubbed; the exception by its classes, no
    traceback)."""
    data: dict[str, Any] = {"ok": outcome.ok}
    if outcome.result is not None:
        result = outcome.result.to_dict()
        result["parts"] = [_redacted_part(p, redactor) for p in result["parts"]]
        if "meta" in result:
            result["meta"] = redactor.value(result["meta"])
        data["result"] = result
    if outcome.error is not None:
        error = outcome.error.to_dict()
        data["error"] = {**error, "message": redactor.text(error["message"]),
                         "details": redactor.value(error["details"])}
    if outcome.exception is not None:
        raw = exception_to_data(outcome.exception)
        kept = {k: raw[k] for k in _EXCEPTION_KEYS if k in raw}
        kept["message"] = redactor.text(str(kept.get("message", "")))
        data["exception"] = kept
    scrubbed: dict[str, Any] = scrub(data, list(secrets))
    return scrubbed


def outcome_from_data(inv: Invocation, data: Mapping[str, Any]) -> ToolOutcome:
    """The outcome a recording stands for, as the tool body's would be for ``inv`` (its call id, attempt).

    Raises:
        ValueError: ``data`` is not what :func:`outcome_to_data` writes.
    """
    if not isinstance(data, Mapping):
        raise ValueError("a recorded outcome must be an object")
    name = inv.tool.spec.name if inv.tool is not None else inv.call.name
    meta = {"replayed": True}
    exception = data.get("exception")
    exc = exception_from_data(exception) if isinstance(exception, Mapping) else None
    if data.get("error") is not None:
        error = ToolError.from_dict(data["error"])
        return ToolOutcome.failure(inv.call.id, name, error, attempts=inv.attempt, repairs=inv.repairs, meta=meta,
                                   exception=exc)
    if data.get("result") is None:
        raise ValueError("a recorded outcome needs a result or an error")
    result = ToolResult.from_dict(data["result"])
    return ToolOutcome.success(inv.call.id, name, result, attempts=inv.attempt, repairs=inv.repairs, meta=meta)
