"""What a tool looks like to search: its text fields, and the tokenizer shared by tools and queries.

Names are split on snake_case, camelCase, kebab-case and digits (``getWeatherByCity2`` → ``get weather by
city 2``), words are lower-cased, English stop words dropped and words stemmed (Snowball, via PyStemmer), so
``"searching flights"`` meets ``search_flight``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import Stemmer
from bm25s.stopwords import STOPWORDS_EN

from toolrig import BaseTool

__all__ = ["FIELDS", "ToolText", "normalize_name", "tokenize", "tool_text"]

FIELDS = ("name", "description", "parameters", "tags")
"""The fields of a tool that search reads, in the order hits report them."""

_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_STOP = frozenset(STOPWORDS_EN)
_STEMMER = Stemmer.Stemmer("english")
_MAX_TEXT = 20_000  # characters of one field read per tool: a huge description must not stall indexing


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    return str(_STEMMER.stemWord(word))


def words(text: str) -> list[str]:
    """Lower-cased words of ``text``, identifiers split (no stemming, stop words kept)."""
    return [w.lower() for w in _WORD.findall(text[:_MAX_TEXT])]


def tokenize(text: str) -> list[str]:
    """Search tokens of ``text``: split identifiers, lower case, stop words out, stemmed."""
    return [_stem(w) for w in words(text) if w not in _STOP]


def normalize_name(text: str) -> str:
    """A name reduced to its words (``Get-Weather``, ``get_weather``, ``getWeather`` → ``get weather``)."""
    return " ".join(words(text))


def _with_values(description: str, schema: Any) -> str:
    """``description`` followed by the values an enum (or its items' enum) allows: ``"unit (celsius, kelvin)"``
    lets a query that names a value (``"in kelvin"``) find the tool."""
    if not isinstance(schema, Mapping):
        return description
    values = schema.get("enum")
    items = schema.get("items")
    if values is None and isinstance(items, Mapping):
        values = items.get("enum")
    if not isinstance(values, list) or not values:
        return description
    shown = ", ".join(str(v) for v in values[:50] if isinstance(v, str | int | float) and not isinstance(v, bool))
    return f"{description} ({shown})".strip() if shown else description


def _schema_parts(schema: Any, depth: int = 0) -> Iterator[tuple[str, str]]:
    """``(parameter name, its description)`` for every property, nested ones included (bounded depth)."""
    if not isinstance(schema, Mapping) or depth > 6:
        return
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for key, sub in props.items():
            desc = sub.get("description") if isinstance(sub, Mapping) else None
            yield str(key), _with_values(desc if isinstance(desc, str) else "", sub)
            yield from _schema_parts(sub, depth + 1)
    for key in ("items", "additionalProperties"):
        yield from _schema_parts(schema.get(key), depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list):
            for option in options:
                yield from _schema_parts(option, depth + 1)
    defs = schema.get("$defs")
    if isinstance(defs, Mapping):
        for sub in defs.values():
            yield from _schema_parts(sub, depth + 1)


@dataclass(frozen=True, kw_only=True)
class ToolText:
    """The searchable text of one tool version.

    Attributes:
        name: the tool name.
        version: the tool version.
        title: a human title (MCP ``annotations.title``), or "".
        description: the description.
        parameters: parameter names and descriptions (with their enum values), one ``name: description``
            per line.
        tags: the tags, space-separated.
        aliases: other names that count as an exact name match.
        digest: a hash of everything above: equal digests mean an unchanged tool.
    """

    name: str
    version: str
    title: str
    description: str
    parameters: str
    tags: str
    aliases: tuple[str, ...]
    digest: str

    def field_text(self, field: str) -> str:
        """The text of one of :data:`FIELDS` (``name`` includes the title and aliases)."""
        if field == "name":
            return " ".join((self.name, self.title, *self.aliases))
        return str(getattr(self, field))

    def field_tokens(self) -> dict[str, list[str]]:
        """Tokens per field."""
        return {f: tokenize(self.field_text(f)) for f in FIELDS}

    def document(self) -> str:
        """One text for an embedding model: title or name, description, then the parameters."""
        head = self.title or self.name.replace("_", " ")  # the model's own word pieces split camelCase
        params = self.parameters.replace("\n", "; ")
        text = f"{head}: {self.description}".strip()
        if params:
            text += f" Parameters: {params}"
        if self.tags:
            text += f" Tags: {self.tags}"
        return text[:4000]


def _aliases(meta: Mapping[str, Any]) -> tuple[str, ...]:
    raw = meta.get("aliases", ())
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, Iterable):
        return tuple(str(a) for a in raw)
    return ()


def tool_text(tool: BaseTool) -> ToolText:
    """The searchable text of ``tool`` (aliases from ``spec.metadata["aliases"]``)."""
    spec = tool.spec
    lines = [f"{n}: {d}" if d else n for n, d in _schema_parts(spec.input_schema)]
    title = spec.annotations.title if spec.annotations is not None and spec.annotations.title else ""
    text = ToolText(name=spec.name, version=spec.version, title=title[:_MAX_TEXT],
                    description=spec.description[:_MAX_TEXT], parameters="\n".join(lines)[:_MAX_TEXT],
                    tags=" ".join(sorted(spec.tags)), aliases=_aliases(spec.metadata), digest="")
    fields = [text.name, text.version, text.title, text.description, text.parameters, text.tags, text.aliases]
    digest = hashlib.blake2b(json.dumps(fields).encode(), digest_size=12).hexdigest()
    return replace(text, digest=digest)
