"""What a tool returns: :class:`ToolResult`, a list of typed parts plus an error flag.

:func:`to_result` is the one place that turns any return value into a ToolResult.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolrig.errors import ResultConversionError

__all__ = [
    "AudioPart",
    "ImagePart",
    "JsonPart",
    "Part",
    "ResourcePart",
    "TextPart",
    "ToolResult",
    "is_text_mime",
    "sniff_mime_type",
    "text_of_bytes",
    "to_result",
]


@dataclass(frozen=True, slots=True)
class TextPart:
    """Plain text for the model."""

    text: str
    type: Literal["text"] = "text"

    def render(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class JsonPart:
    """Structured content (any JSON value)."""

    data: Any
    type: Literal["json"] = "json"

    def render(self) -> str:
        return _RENDER(self.data)


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image, as bytes with a mime type."""

    data: bytes
    mime_type: str = "image/png"
    type: Literal["image"] = "image"

    def render(self) -> str:
        return f"[image {self.mime_type}, {len(self.data)} bytes]"

    @property
    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")


@dataclass(frozen=True, slots=True)
class AudioPart:
    """Audio, as bytes with a mime type."""

    data: bytes
    mime_type: str = "audio/wav"
    type: Literal["audio"] = "audio"

    def render(self) -> str:
        return f"[audio {self.mime_type}, {len(self.data)} bytes]"

    @property
    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")


@dataclass(frozen=True, slots=True)
class ResourcePart:
    """A file or resource: a URI with optional inline text or bytes."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: bytes | None = None
    name: str | None = None
    type: Literal["resource"] = "resource"

    def render(self) -> str:
        if self.text is not None:
            return self.text
        size = f", {len(self.blob)} bytes" if self.blob is not None else ""
        return f"[resource {self.uri} ({self.mime_type or 'unknown type'}{size})]"


_RENDER = json.JSONEncoder(ensure_ascii=False, default=str).encode
"""``json.dumps(value, ensure_ascii=False, default=str)`` without building an encoder per call."""

Part = TextPart | JsonPart | ImagePart | AudioPart | ResourcePart
_PART_TYPES = (TextPart, JsonPart, ImagePart, AudioPart, ResourcePart)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The parts a tool produced, and whether they describe an error."""

    parts: tuple[Part, ...] = ()
    is_error: bool = False
    meta: dict[str, Any] = field(default_factory=dict)
    _text: str | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def text_result(cls, text: str, *, is_error: bool = False) -> ToolResult:
        """A result made of one text part."""
        return cls(parts=(TextPart(text),), is_error=is_error)

    @classmethod
    def error(cls, message: str) -> ToolResult:
        """An error result with one text part."""
        return cls(parts=(TextPart(message),), is_error=True)

    @property
    def text(self) -> str:
        """The model-facing rendering: every part rendered, joined by blank lines (computed once)."""
        text = self._text
        if text is None:
            parts = self.parts
            text = parts[0].render() if len(parts) == 1 else "\n\n".join(p.render() for p in parts)
            object.__setattr__(self, "_text", text)
        return text

    @property
    def structured(self) -> Any:
        """The structured value: the data of the first JSON part, else None."""
        for part in self.parts:
            if isinstance(part, JsonPart):
                return part.data
        return None

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (binary data base64-encoded)."""
        out = []
        for part in self.parts:
            item = {f.name: getattr(part, f.name) for f in dataclasses.fields(part)}
            for key in ("data", "blob"):
                if isinstance(item.get(key), bytes):
                    item[key] = base64.b64encode(item[key]).decode("ascii")
            out.append(item)
        data: dict[str, Any] = {"parts": out, "is_error": self.is_error}
        if self.meta:
            data["meta"] = dict(self.meta)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolResult:
        """Rebuild a result from :meth:`to_dict` output (base64 data decoded), checking every field's type.

        Raises:
            ValueError: not the form :meth:`to_dict` writes (an unknown part type, a field of the wrong type).
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"a result must be an object, got {type(data).__name__}")
        items = data.get("parts", ())
        meta = data.get("meta") or {}
        if not isinstance(items, list | tuple) or not isinstance(meta, Mapping):
            raise ValueError("a result's parts must be a list and its meta an object")
        parts = tuple(_part_from_dict(p) for p in items)
        return cls(parts=parts, is_error=data.get("is_error") is True, meta=dict(meta))


def _b64(value: Any) -> bytes:
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"invalid base64 data: {exc}") from None
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    raise ValueError(f"binary data must be base64 text, got {type(value).__name__}")


def _str(item: Mapping[str, Any], key: str, default: str | None = None, *, optional: bool = False) -> Any:
    value = item.get(key, default)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ValueError(f"result part field {key!r} must be a string, got {type(value).__name__}")
    return value


def _part_from_dict(item: Any) -> Part:
    if not isinstance(item, Mapping):
        raise ValueError(f"a result part must be an object, got {type(item).__name__}")
    kind = item.get("type")
    if kind == "text":
        return TextPart(_str(item, "text"))
    if kind == "json":
        return JsonPart(item.get("data"))
    if kind == "image":
        return ImagePart(_b64(item.get("data")), _str(item, "mime_type", "image/png"))
    if kind == "audio":
        return AudioPart(_b64(item.get("data")), _str(item, "mime_type", "audio/wav"))
    if kind == "resource":
        blob = item.get("blob")
        return ResourcePart(uri=_str(item, "uri"), mime_type=_str(item, "mime_type", optional=True),
                            text=_str(item, "text", optional=True), blob=None if blob is None else _b64(blob),
                            name=_str(item, "name", optional=True))
    raise ValueError(f"unknown result part type {kind!r}")


_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"ID3", "audio/mpeg"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
)


def sniff_mime_type(data: bytes) -> str:
    """Guess a mime type from magic bytes; ``application/octet-stream`` if unknown."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    return "application/octet-stream"


_TEXT_MIME_SUFFIXES = ("json", "xml", "yaml", "javascript", "csv")
_CONTROL_BYTE = re.compile(rb"[\x00-\x08\x0b\x0e-\x1f\x7f]")


def is_text_mime(mime: str) -> bool:
    """True for a mime type of text: ``text/*``, JSON, XML, YAML, JavaScript, CSV (and their ``+`` forms)."""
    base = mime.split(";", maxsplit=1)[0].strip().lower()
    return base.startswith("text/") or base.endswith(_TEXT_MIME_SUFFIXES)


def text_of_bytes(data: bytes, mime_type: str | None) -> str | None:
    """The text ``data`` holds, or None when it is binary.

    Bytes are text when their mime type says so (decoded as UTF-8, an invalid byte shown as U+FFFD: text is
    never passed on as opaque bytes because it is not valid UTF-8), or when, whatever type they claim, they
    are no known binary format (:func:`sniff_mime_type`) and are valid UTF-8 without control characters other
    than tab, line feed, form feed and carriage return.
    """
    if sniff_mime_type(data) != "application/octet-stream":
        return None
    if mime_type is not None and is_text_mime(mime_type):
        return data.decode("utf-8", errors="replace")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if _CONTROL_BYTE.search(data) is None else None


def _bytes_part(data: bytes, mime_type: str | None) -> Part:
    mime = mime_type or sniff_mime_type(data)
    if mime.startswith("image/"):
        return ImagePart(data, mime)
    if mime.startswith("audio/"):
        return AudioPart(data, mime)
    if is_text_mime(mime):
        with contextlib.suppress(UnicodeDecodeError):  # not UTF-8 after all: kept as a blob
            return ResourcePart(uri="data:" + mime, mime_type=mime, text=data.decode("utf-8"))
    return ResourcePart(uri="data:" + mime, mime_type=mime, blob=data)


_NOT_JSON = object()
_CONTAINERS = (dict, list, tuple, set, frozenset)


def _as_text(value: Any) -> str:
    """``str(value)`` for objects whose class defines ``__str__``; else :class:`ResultConversionError`."""
    if getattr(type(value), "__str__", None) is object.__str__ or callable(value):
        raise ResultConversionError(
            f"the tool returned a {type(value).__qualname__}, which has no JSON form and no text of its own; "
            "return plain data (str, dict, list, a pydantic model or dataclass), or give the tool a formatter")
    return str(value)


_PYDANTIC_CORE: Any = None
"""The ``pydantic_core`` module once :func:`_jsonable` first ran."""


def _jsonable(value: Any) -> Any:
    """Plain JSON data for ``value`` (NaN/Infinity as null, bytes as UTF-8 or URL-safe base64), or _NOT_JSON.

    Models are dumped by alias, as their output schema describes them. Objects inside containers
    that have no JSON form become their ``str()`` when their class defines one; otherwise
    :class:`ResultConversionError` is raised. An unknown object on its own is not JSON (_NOT_JSON).
    """
    global _PYDANTIC_CORE
    if _PYDANTIC_CORE is None:  # on first use: a cheap `import toolrig` (and no import statement per call)
        import pydantic_core

        _PYDANTIC_CORE = pydantic_core
    PydanticSerializationError = _PYDANTIC_CORE.PydanticSerializationError
    to_jsonable_python = _PYDANTIC_CORE.to_jsonable_python
    kind = type(value)
    container = (kind is dict or kind is list or isinstance(value, _CONTAINERS) or dataclasses.is_dataclass(value)
                 or hasattr(kind, "__pydantic_serializer__"))  # a model, without importing pydantic
    for bytes_mode in ("utf8", "base64"):
        try:
            return to_jsonable_python(value, by_alias=True, inf_nan_mode="null", bytes_mode=bytes_mode,
                                      fallback=_as_text if container else _not_json)
        except (PydanticSerializationError, UnicodeDecodeError):
            continue
        except ResultConversionError:
            raise
        except ValueError as exc:
            if "circular" in str(exc).lower():
                raise ResultConversionError(f"the tool returned a {type(value).__qualname__} that refers to itself "
                                            "(circular data has no JSON form)") from None
            break
        except (TypeError, RecursionError):
            break
    return _NOT_JSON


class _NotJson(Exception):
    """Raised by the fallback of a bare unknown object: it is converted by :func:`to_result` instead."""


def _not_json(value: Any) -> Any:
    raise _NotJson


def to_result(value: Any, *, mime_type: str | None = None) -> ToolResult:
    """Turn whatever a tool returned into a :class:`ToolResult`.

    ``str`` → text; ``bytes`` → image/audio/resource part by ``mime_type`` (or sniffed; text
    types decoded); a part → that part; a list mixing parts with other values → each value
    converted and the parts joined; ``None`` → no parts; pydantic models, dataclasses, dicts,
    lists, scalars, dates, enums, paths, UUIDs and decimals → a JSON part (plain JSON: NaN and Infinity
    become ``null``); any other object whose class defines ``__str__`` → that text.

    Raises:
        TypeError: an object with no JSON form and no ``__str__`` of its own (it would read as
            ``<Thing object at 0x...>``): return plain data instead, or give the tool a formatter.
    """
    kind = type(value)
    if kind is dict:  # the usual return value: none of the checks below can match a plain dict
        return _json_result(value)
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult()
    if isinstance(value, str):
        return ToolResult(parts=(TextPart(value),))
    if kind is int or kind is bool or (kind is float and math.isfinite(value)):
        return ToolResult(parts=(JsonPart(value),))  # what _jsonable returns for them, without the call
    if isinstance(value, bytes | bytearray | memoryview):
        return ToolResult(parts=(_bytes_part(bytes(value), mime_type),))
    if isinstance(value, _PART_TYPES):
        return ToolResult(parts=(value,))
    if isinstance(value, list | tuple) and any(isinstance(v, (*_PART_TYPES, ToolResult)) for v in value):
        return ToolResult(parts=parts_of(value))
    return _json_result(value)


def _json_result(value: Any) -> ToolResult:
    """The last resort of :func:`to_result`: a JSON part, else the value's own text."""
    try:
        data = _jsonable(value)
    except _NotJson:
        data = _NOT_JSON
    if data is not _NOT_JSON:
        return ToolResult(parts=(JsonPart(data),))
    return ToolResult(parts=(TextPart(_as_text(value)),))


def parts_of(values: Iterable[Any]) -> tuple[Part, ...]:
    """Flatten several return values into one tuple of parts."""
    out: list[Part] = []
    for v in values:
        out.extend(to_result(v).parts)
    return tuple(out)
