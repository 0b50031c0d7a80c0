"""Binary parts of an outcome (images, PDFs) that a provider can show the model natively."""

from __future__ import annotations

import base64

from toolrig._outcome import ToolOutcome
from toolrig._results import ImagePart, ResourcePart

__all__ = ["b64", "data_url", "images", "pdfs"]


def images(outcome: ToolOutcome, accepted: frozenset[str] | None = None) -> list[ImagePart]:
    """The image parts of the outcome's result whose mime type is in ``accepted`` (all if None)."""
    if outcome.result is None:
        return []
    return [p for p in outcome.result.parts
            if isinstance(p, ImagePart) and (accepted is None or p.mime_type in accepted)]


def pdfs(outcome: ToolOutcome) -> list[ResourcePart]:
    """The resource parts carrying a PDF as inline bytes."""
    if outcome.result is None:
        return []
    return [p for p in outcome.result.parts
            if isinstance(p, ResourcePart) and p.blob is not None and p.mime_type == "application/pdf"]


def b64(data: bytes) -> str:
    """Base64 text of ``data``."""
    return base64.b64encode(data).decode("ascii")


def data_url(mime_type: str, data: bytes) -> str:
    """A ``data:`` URL holding ``data``."""
    return f"data:{mime_type};base64,{b64(data)}"
