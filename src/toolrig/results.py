"""What a tool returns: :class:`ToolResult`, a list of typed parts plus an error flag.

:func:`to_result` is the one place that turns any return value into a ToolResult.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_jsonable_python

__all__ = [
    "AudioPart",
    "ImagePart",
    "JsonPart",
    "Part",
    "ResourcePart",
    "TextPart",
    "ToolResult",
    "sniff_mime_type",
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
        return json.dumps(self.data, ensure_ascii=False, default=str)


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


Part = TextPart | JsonPart | ImagePart | AudioPart | ResourcePart
_PART_TYPES = (TextPart, JsonPart, ImagePart, AudioPart, ResourcePart)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The parts a tool produced, and whether they describe an error."""

    parts: tuple[Part, ...] = ()
    is_error: bool = False
    meta: dict[str, Any] = field(default_factory=dict)

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
        """The model-facing rendering: every part rendered, joined by blank lines."""
        return "\n\n".join(p.render() for p in self.parts)

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
        return {"parts": out, "is_error": self.is_error}


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


def _bytes_part(data: bytes, mime_type: str | None) -> Part:
    mime = mime_type or sniff_mime_type(data)
    if mime.startswith("image/"):
        return ImagePart(data, mime)
    if mime.startswith("audio/"):
        return AudioPart(data, mime)
    return ResourcePart(uri="data:" + mime, mime_type=mime, blob=data)


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    try:
        return to_jsonable_python(value)
    except PydanticSerializationError:
        return None


def to_result(value: Any, *, mime_type: str | None = None) -> ToolResult:
    """Turn whatever a tool returned into a :class:`ToolResult`.

    ``str`` → text; ``bytes`` → image/audio/resource part by ``mime_type`` (or sniffed);
    a part or a list of parts → those parts; ``None`` → no parts; pydantic models,
    dataclasses, dicts, lists and scalars → a JSON part; anything else → its ``str()``.
    """
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult()
    if isinstance(value, str):
        return ToolResult(parts=(TextPart(value),))
    if isinstance(value, bytes | bytearray | memoryview):
        return ToolResult(parts=(_bytes_part(bytes(value), mime_type),))
    if isinstance(value, _PART_TYPES):
        return ToolResult(parts=(value,))
    if isinstance(value, Sequence) and value and all(isinstance(v, _PART_TYPES) for v in value):
        return ToolResult(parts=tuple(value))
    data = _jsonable(value)
    if data is None:
        return ToolResult(parts=(TextPart(str(value)),))
    return ToolResult(parts=(JsonPart(data),))


def parts_of(values: Iterable[Any]) -> tuple[Part, ...]:
    """Flatten several return values into one tuple of parts."""
    out: list[Part] = []
    for v in values:
        out.extend(to_result(v).parts)
    return tuple(out)
