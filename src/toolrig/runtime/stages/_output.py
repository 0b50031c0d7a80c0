"""Stage: the output the model sees — hard size cap, JSON array capping, redaction, truncation with a notice.

Per-tool formatters run earlier, when the innermost handler converts the raw return value
(:meth:`toolrig._define.BaseTool.to_result`); this stage works on the resulting outcome, in order:

1. a result longer than ``hard_limit`` characters fails with ``output_too_large``;
2. JSON lists longer than ``max_items`` keep their first items (at any depth);
3. binary parts (images, audio, blobs) larger than ``max_binary_bytes`` are dropped;
4. secrets are redacted from the text, the JSON data, resource URIs and texts, and error messages;
5. content longer than ``max_chars`` is cut, keeping its beginning.

Each cut adds a notice stating what was dropped. For internal tools the notices are appended to
the content; for ``trust="external"`` tools they go to ``outcome.meta["notices"]`` and the fence
stage places them after the closing delimiter, outside the attacker-controlled text, and the limit the
content was held to is noted in ``outcome.meta["max_chars"]`` (the MCP server holds an external tool's
structured content to it too).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolrig._define import BaseTool
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig._results import AudioPart, ImagePart, JsonPart, Part, ResourcePart, TextPart, ToolResult
from toolrig._spec import Trust
from toolrig.redact import DEFAULT_REDACTOR, Redactor
from toolrig.runtime._chain import CallNext, Stage, Step, StepResult
from toolrig.runtime._invocation import Invocation
from toolrig.runtime._services import Services

__all__ = ["OutputLimits", "OutputStage", "cap_arrays", "shape_output", "truncate"]

_MAX_DEPTH = 64


@dataclass(frozen=True, kw_only=True)
class OutputLimits:
    """Size limits for what a model sees from one call (None disables a limit).

    Attributes:
        max_chars: content longer than this is truncated (characters).
        max_items: JSON lists longer than this keep their first ``max_items`` items.
        hard_limit: a result whose content is longer than this fails with ``output_too_large``.
        max_binary_bytes: an image, audio or blob part larger than this is dropped, with a notice (5 MiB, the
            largest image most model APIs take).
    """

    max_chars: int | None = 20_000
    max_items: int | None = 100
    hard_limit: int | None = 2_000_000
    max_binary_bytes: int | None = 5 * 1024 * 1024

    def __post_init__(self) -> None:
        for name in ("max_chars", "max_items", "hard_limit", "max_binary_bytes"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"OutputLimits.{name} must be a positive number or None")


def truncate(text: str, max_chars: int) -> tuple[str, str | None]:
    """Keep the beginning of ``text``; return the kept text and a notice (None if nothing was cut).

    The cut moves back to the last line break when one is in the final fifth of the window.
    """
    total = len(text)
    if total <= max_chars:
        return text, None
    cut = max_chars
    newline = text.rfind("\n", max_chars - max_chars // 5, max_chars)
    if newline > 0:
        cut = newline
    notice = (f"[toolrig: output truncated: {total:,} characters in total, the first {cut:,} kept, "
              f"{total - cut:,} dropped. Ask for less (a filter, a page or a range) to see the rest.]")
    return text[:cut], notice


def cap_arrays(data: Any, max_items: int) -> tuple[Any, dict[str, int]]:
    """Cap every list in a JSON-like value at ``max_items`` items.

    Returns:
        the capped value (the same object when nothing was capped) and, per JSON path of a
        capped list, how many items were dropped.
    """
    dropped: dict[str, int] = {}
    return _cap(data, max_items, "$", dropped, 0), dropped


def _cap(data: Any, limit: int, path: str, dropped: dict[str, int], depth: int) -> Any:
    if depth > _MAX_DEPTH:
        return data
    if isinstance(data, list):
        items = data[:limit]
        if len(data) > limit:
            dropped[path] = len(data) - limit
        capped = [_cap(v, limit, f"{path}[{i}]", dropped, depth + 1) for i, v in enumerate(items)]
        same = len(data) <= limit and all(a is b for a, b in zip(capped, data, strict=True))
        return data if same else capped
    if isinstance(data, Mapping):
        out = {k: _cap(v, limit, f"{path}.{k}", dropped, depth + 1) for k, v in data.items()}
        return data if all(out[k] is v for k, v in data.items()) else out
    return data


def _cap_notice(dropped: dict[str, int], limit: int) -> str:
    where = ", ".join(f"{path} ({n:,} dropped)" for path, n in list(dropped.items())[:5])
    more = f" and {len(dropped) - 5} more lists" if len(dropped) > 5 else ""
    return (f"[toolrig: JSON lists capped at their first {limit:,} items: {where}{more}. "
            "Ask for less (a filter or a page) to see the rest.]")


def _binary_size(part: Part) -> int:
    if isinstance(part, ImagePart | AudioPart):
        return len(part.data)
    if isinstance(part, ResourcePart) and part.blob is not None:
        return len(part.blob)
    return 0


def _drop_large_binaries(parts: list[Part], limit: int, notices: list[str]) -> list[Part]:
    kept: list[Part] = []
    for part in parts:
        if _binary_size(part) > limit:
            notices.append(f"[toolrig: {part.render()[1:-1]} dropped: larger than the limit of {limit:,} bytes "
                           "for binary content.]")
        else:
            kept.append(part)
    return kept


def _redact_part(part: Part, redactor: Redactor) -> Part:
    if isinstance(part, TextPart):
        text = redactor.text(part.text)
        return part if text is part.text else TextPart(text)
    if isinstance(part, JsonPart):
        data = redactor.value(part.data)
        return part if data is part.data else JsonPart(data)
    if isinstance(part, ResourcePart):
        uri = redactor.text(part.uri)
        body = None if part.text is None else redactor.text(part.text)
        if uri is part.uri and body is part.text:
            return part
        return dataclasses.replace(part, uri=uri, text=body)
    return part


def _shape_result(result: ToolResult, limits: OutputLimits, redactor: Redactor | None
                    ) -> tuple[ToolResult, list[str], bool]:
    """Cap and redact the parts; returns the new result, notices, and whether anything was capped."""
    notices: list[str] = []
    parts = list(result.parts)
    capped = False
    if limits.max_items is not None:
        for i, part in enumerate(parts):
            if isinstance(part, JsonPart):
                data, dropped = cap_arrays(part.data, limits.max_items)
                if dropped:
                    parts[i] = JsonPart(data)
                    notices.append(_cap_notice(dropped, limits.max_items))
                    capped = True
    if limits.max_binary_bytes is not None:
        size = len(notices)
        parts = _drop_large_binaries(parts, limits.max_binary_bytes, notices)
        capped = capped or len(notices) > size
    if redactor is not None:
        parts = [_redact_part(p, redactor) for p in parts]
    if len(parts) == len(result.parts) and all(a is b for a, b in zip(parts, result.parts, strict=True)):
        return result, notices, capped
    return dataclasses.replace(result, parts=tuple(parts)), notices, capped


def _is_text_of(content: str, result: ToolResult) -> bool:
    """True when ``content`` is the text of ``result``'s only text part (cheap: no rendering)."""
    parts = result.parts
    return len(parts) == 1 and isinstance(parts[0], TextPart) and content == parts[0].text


def _too_large(outcome: ToolOutcome, size: int, limit: int) -> ToolOutcome:
    error = ToolError.of(
        ErrorKind.OUTPUT_TOO_LARGE,
        f"the result of {outcome.name} has {size:,} characters, over the limit of {limit:,}; "
        "ask for less (a filter, a page or a range)", size=size, limit=limit)
    return ToolOutcome.failure(outcome.call_id, outcome.name, error, attempts=outcome.attempts,
                               repairs=outcome.repairs, meta=outcome.meta)


_SCALARS = (int, float, bool, type(None))


def _untouched(outcome: ToolOutcome, limits: OutputLimits, redactor: Redactor | None) -> bool:
    """True when the general path would return ``outcome`` itself, decided in one look at the content.

    That is: one text part or one JSON part whose rendering is the content; the content within both
    size limits (so no cut); no JSON list that could be over ``max_items`` (a list of more items has
    at least that many commas in the rendering); and nothing the redactor could change — decided by
    one search of the rendering, which holds every key and string of the data.
    """
    result = outcome.result
    if result is None or outcome.error is not None or len(result.parts) != 1:
        return False
    content = outcome.content
    size = len(content)
    if (limits.max_chars is not None and size > limits.max_chars) or (
            limits.hard_limit is not None and size > limits.hard_limit):
        return False
    part = result.parts[0]
    if isinstance(part, TextPart):
        plain = part.text == content
    elif isinstance(part, JsonPart):
        plain = (content is result.text or content == result.text) and (
            type(part.data) in _SCALARS or limits.max_items is None or content.count(",") < limits.max_items)
    else:
        return False
    return plain and (redactor is None or not redactor.may_redact(content) or (redactor.text(content) is content
                      and type(part) is TextPart))


def shape_output(outcome: ToolOutcome, limits: OutputLimits, redactor: Redactor | None, *,
                    notices_inline: bool = True) -> ToolOutcome:
    """Apply the hard cap, array capping, redaction and truncation to one outcome.

    Args:
        outcome: what the inner stages returned.
        limits: the size limits.
        redactor: the redaction rules, or None for no redaction.
        notices_inline: append notices to the content (else put them in ``meta["notices"]``).
    """
    if _untouched(outcome, limits, redactor):
        return outcome
    return _shape_general(outcome, limits, redactor, notices_inline)


def _shape_general(outcome: ToolOutcome, limits: OutputLimits, redactor: Redactor | None,
                     notices_inline: bool) -> ToolOutcome:
    """:func:`shape_output` without the fast path."""
    content = outcome.content
    if limits.hard_limit is not None and len(content) > limits.hard_limit and outcome.result is not None:
        return _too_large(outcome, len(content), limits.hard_limit)
    result, error, capped = outcome.result, outcome.error, False
    notices: list[str] = []
    scan_content = True
    if result is not None:
        new_result, notices, capped = _shape_result(result, limits, redactor)
        if new_result is not result:
            if content == result.text:  # the usual case: the content is the parts' rendering
                content, scan_content = new_result.text, False
        elif _is_text_of(content, result):  # already scanned as a part
            scan_content = False
        result = new_result
    if redactor is not None:
        if scan_content:
            content = redactor.text(content)
        if error is not None and (message := redactor.text(error.message)) is not error.message:
            error = dataclasses.replace(error, message=message)
    cut_notice = None
    if limits.max_chars is not None:
        content, cut_notice = truncate(content, limits.max_chars)
    if cut_notice is not None:
        notices.append(cut_notice)
    if (content is outcome.content and result is outcome.result and error is outcome.error
            and not notices):
        return outcome
    meta: Mapping[str, Any] = outcome.meta
    if notices and notices_inline:
        content = content + "\n\n" + "\n".join(notices)
    elif notices:
        meta = {**meta, "notices": (*meta.get("notices", ()), *notices)}
    return outcome.derive(content=content, result=result, error=error, meta=meta,
                          truncated=outcome.truncated or capped or cut_notice is not None)


class OutputStage(Stage):
    """Caps, redacts and truncates what the model sees (see the module docstring).

    Args:
        limits: default size limits.
        redactor: redaction rules (default: :data:`toolrig.redact.DEFAULT_REDACTOR`); None disables.
        per_tool: limits for particular tools, by tool name.
    """

    name = "output"

    def __init__(self, *, limits: OutputLimits | None = None, redactor: Redactor | None = DEFAULT_REDACTOR,
                 per_tool: Mapping[str, OutputLimits] | None = None) -> None:
        self.limits = limits or OutputLimits()
        self.redactor = redactor
        self.per_tool = dict(per_tool or {})

    decides = False

    async def __call__(self, inv: Invocation, call_next: CallNext) -> ToolOutcome:
        return self._shape(inv, await call_next(inv))

    def compile(self, tool: BaseTool | None, services: Services) -> Step | None:
        """Shaping an outcome needs no ``await``: always the synchronous form."""
        return self._step

    def _step(self, inv: Invocation) -> StepResult:
        return inv, self._shape

    def _shape(self, inv: Invocation, outcome: ToolOutcome) -> ToolOutcome:
        tool = inv.tool
        external = tool is not None and tool.spec.trust is Trust.EXTERNAL
        limits = self.per_tool.get(outcome.name, self.limits) if self.per_tool else self.limits
        shaped = shape_output(outcome, limits, self.redactor, notices_inline=not external)
        if external and limits.max_chars is not None:
            shaped = shaped.derive(meta={**shaped.meta, "max_chars": limits.max_chars})
        return shaped
