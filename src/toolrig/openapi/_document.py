"""Reading an OpenAPI document: from a dict, a file (JSON or YAML) or a URL (fetched through the SSRF guard), and
resolving its ``$ref`` s.

Only references inside the document (``#/...``) are followed; a reference to another file or URL is refused (it
would be a fetch the caller did not ask for). Parameters, request bodies and path items are inlined; schemas are
gathered as ``$defs`` of the tool's input schema, so recursive models stay finite.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toolrig._yaml_text import yaml_problem
from toolrig.errors import DefinitionError

__all__ = ["Document", "aload_document", "load_document"]

_MAX_HOPS = 64
_MAX_SPEC_BYTES = 20_000_000
_MAX_NODES = 2_000_000  # values in the document as read, a YAML alias counted each time it is used
_MAX_DEPTH = 200
_NAMES = "\x00names"  # where _definition keeps ref -> name beside the definitions (never a schema name)


def load_document(source: Any, *, fetch_options: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], str | None]:
    """The document as a dict, and the URL it came from (None for a dict or a file).

    Args:
        source: a mapping, a path (``.json``, ``.yaml``, ``.yml``), or an ``http(s)://`` URL.
        fetch_options: for :class:`~toolrig.guards.SafeHTTPClient` when ``source`` is a URL (``rules=``,
            ``resolver=`` ...).
    """
    if isinstance(source, Mapping):
        _bounded(source, "the OpenAPI document")
        return _checked(json.loads(json.dumps(source))), None
    text = str(source)
    if text.startswith(("http://", "https://")):
        return _checked(_parse(_fetch(text, dict(fetch_options or {})), text)), text
    path = Path(text).expanduser()
    try:
        with path.open("rb") as handle:
            data = handle.read(_MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise DefinitionError(f"cannot read the OpenAPI document {text!r}: {exc.strerror or exc}") from exc
    if len(data) > _MAX_SPEC_BYTES:
        raise DefinitionError(f"the OpenAPI document {text!r} is larger than {_MAX_SPEC_BYTES:,} bytes")
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DefinitionError(f"the OpenAPI document {text!r} is not UTF-8 text: {exc}") from exc
    return _checked(_parse(raw, text)), None


async def aload_document(source: Any, *, fetch_options: Mapping[str, Any] | None = None
                         ) -> tuple[dict[str, Any], str | None]:
    """:func:`load_document` for async code: a URL is fetched in this event loop (a file is read as it is)."""
    text = str(source)
    if not isinstance(source, Mapping) and text.startswith(("http://", "https://")):
        try:
            raw = await fetch_text(text, dict(fetch_options or {}))
        except DefinitionError:
            raise
        except Exception as exc:
            raise DefinitionError(f"cannot fetch the OpenAPI document {text}: {exc}") from exc
        return _checked(_parse(raw, text)), text
    return load_document(source, fetch_options=fetch_options)


def _parse(raw: str, where: str) -> Any:
    """The document in ``raw`` (JSON or YAML), within :data:`_MAX_NODES` values and :data:`_MAX_DEPTH` levels."""
    try:
        return _bounded(json.loads(raw), where)
    except ValueError:
        pass
    except RecursionError:
        raise DefinitionError(f"{where} is nested too deeply") from None
    import yaml

    try:
        return _bounded(yaml.safe_load(raw), where)
    except yaml.YAMLError as exc:
        raise DefinitionError(f"{where} is neither JSON nor YAML: {yaml_problem(exc)}") from exc
    except RecursionError:
        raise DefinitionError(f"{where} is nested too deeply") from None


def _bounded(doc: Any, where: str) -> Any:
    """``doc`` if it has at most :data:`_MAX_NODES` values, counted as they would be walked (a YAML alias, or an
    object shared in a dict, each time it is reached: a few lines of aliases can stand for billions of values),
    and at most :data:`_MAX_DEPTH` levels (a cycle exceeds both); else :class:`DefinitionError`."""
    count = 0
    pending: list[tuple[Any, int]] = [(doc, 0)]
    while pending:
        node, depth = pending.pop()
        count += 1
        if count > _MAX_NODES or depth > _MAX_DEPTH:
            what = f"more than {_MAX_NODES:,} values" if count > _MAX_NODES else f"more than {_MAX_DEPTH} levels"
            raise DefinitionError(f"{where} has {what} (YAML aliases or references that expand without end?)")
        if isinstance(node, Mapping):
            pending.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list | tuple):
            pending.extend((v, depth + 1) for v in node)
    return doc


def _checked(doc: Any) -> dict[str, Any]:
    if not isinstance(doc, dict) or not isinstance(doc.get("paths", {}), dict):
        raise DefinitionError("an OpenAPI document is an object with 'openapi' and 'paths'")
    version = str(doc.get("openapi", ""))
    if not version.startswith("3."):
        found = f"swagger {doc['swagger']}" if "swagger" in doc else repr(version or "no version")
        raise DefinitionError(f"only OpenAPI 3.x documents are read ({found}); convert a Swagger 2 document first")
    return doc


async def fetch_text(url: str, options: dict[str, Any]) -> str:
    """The body at ``url``, fetched through the SSRF guard (status 200 and within the size cap, or an error)."""
    from toolrig.guards import SafeHTTPClient

    options.setdefault("max_bytes", _MAX_SPEC_BYTES)
    async with SafeHTTPClient(**options) as client:
        result = await client.fetch(url, headers={"accept": "application/json, application/yaml"})
    if result.status != 200 or result.truncated:
        size = " (too large)" if result.truncated else ""
        raise DefinitionError(f"fetching {url} gave HTTP {result.status}{size}")
    return result.text()


def _fetch(url: str, options: dict[str, Any]) -> str:
    """:func:`fetch_text` on a thread of its own (callable with or without a running event loop; inside one, the
    loop waits: async code uses :func:`aload_document`)."""
    import anyio

    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["text"] = anyio.run(fetch_text, url, options)
        except Exception as exc:
            box["error"] = exc

    worker = threading.Thread(target=run, name="toolrig-openapi-fetch")
    worker.start()
    worker.join()
    if "error" in box:
        error = box["error"]
        if isinstance(error, DefinitionError):
            raise error
        raise DefinitionError(f"cannot fetch the OpenAPI document {url}: {error}") from error
    return str(box["text"])


class Document:
    """An OpenAPI document with its references resolved on demand."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self.doc = doc

    def pointer(self, ref: str) -> Any:
        """The value a local reference (``#/components/...``) points at."""
        if not ref.startswith("#"):
            raise DefinitionError(f"$ref {ref!r}: only references inside the document ('#/...') are followed")
        node: Any = self.doc
        for raw in ref[1:].split("/")[1:] if ref != "#" else []:
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise DefinitionError(f"$ref {ref!r} points at nothing")
        return node

    def deref(self, node: Any) -> Any:
        """``node`` with top-level references followed (parameters, request bodies, path items)."""
        for _ in range(_MAX_HOPS):
            if not (isinstance(node, Mapping) and isinstance(node.get("$ref"), str)):
                return node
            node = self.pointer(node["$ref"])
        raise DefinitionError("a $ref chain is too long (a cycle?)")

    def schema(self, schema: Any, defs: dict[str, Any] | None = None) -> dict[str, Any]:
        """A JSON Schema (2020-12) for a request's ``schema``: component references rewritten to ``#/$defs/...``;
        OpenAPI 3.0's ``nullable`` and ``example`` turned into JSON Schema; ``xml`` hints and ``readOnly`` properties
        (which a request does not send) dropped.

        The referenced schemas (and theirs) go into ``defs`` when given (one collection shared by the properties
        of one tool, put at its root by the caller), else under the result's own ``$defs``.
        """
        own = defs is None
        collected: dict[str, Any] = {} if defs is None else defs
        out = self._convert(schema, collected)
        if not isinstance(out, dict):
            out = {} if out is True else {"not": {}}
        if own:
            collected.pop(_NAMES, None)
            if collected:
                out = {**out, "$defs": {**out.get("$defs", {}), **collected}}
        return out

    @staticmethod
    def finish(defs: dict[str, Any]) -> dict[str, Any]:
        """The definitions a shared ``defs`` collected (without the bookkeeping)."""
        return {k: v for k, v in defs.items() if k != _NAMES}

    def _convert(self, node: Any, defs: dict[str, Any]) -> Any:
        if isinstance(node, list):
            return [self._convert(v, defs) for v in node]
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            return {"$ref": self._definition(ref, defs)}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("xml", "discriminator", "externalDocs") or key.startswith("x-"):
                continue
            if key == "example":
                out.setdefault("examples", [value])
            elif key in ("properties", "$defs", "patternProperties", "dependentSchemas"):
                out[key] = {k: self._convert(v, defs) for k, v in value.items()} if isinstance(value, Mapping) \
                    else value
            elif key in ("enum", "const", "default", "examples", "required"):
                out[key] = value
            else:
                out[key] = self._convert(value, defs)
        if out.pop("nullable", False) is True:
            out = _nullable(out)
        return _without_read_only(node, out)

    def _definition(self, ref: str, defs: dict[str, Any]) -> str:
        names: dict[str, str] = defs.setdefault(_NAMES, {})
        if ref not in names:
            base = ref.rsplit("/", 1)[-1].replace("~1", "_").replace("~0", "_") or "root"
            base = "".join(c if c.isalnum() or c in "_-." else "_" for c in base)
            name, n = base, 1
            while name in defs:
                n += 1
                name = f"{base}_{n}"
            names[ref] = name
            defs[name] = {}  # placeholder first: a recursive schema refers to itself
            defs[name] = self._convert(self.pointer(ref), defs)
        return f"#/$defs/{names[ref]}"


def _without_read_only(node: Mapping[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """``out`` without the properties marked ``readOnly`` (a request does not send them: ids, timestamps ...)."""
    props = node.get("properties")
    if not isinstance(props, Mapping) or not isinstance(out.get("properties"), dict):
        return out
    hidden = {k for k, v in props.items() if isinstance(v, Mapping) and v.get("readOnly") is True}
    if not hidden:
        return out
    out["properties"] = {k: v for k, v in out["properties"].items() if k not in hidden}
    if isinstance(out.get("required"), list):
        out["required"] = [r for r in out["required"] if r not in hidden]
    return out


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str):
        out = {**schema, "type": [kind, "null"]}
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        return out
    return {"anyOf": [schema, {"type": "null"}]}
