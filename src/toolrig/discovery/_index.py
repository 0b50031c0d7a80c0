"""The search index of one toolset: slots of tool texts, their BM25 index and (optionally) vectors.

A tool is identified by name and *digest* (a hash of its searchable text and version): a new version or an
edited description is a remove plus an add. :meth:`SearchIndex.apply` makes those changes in place (masking
removed slots, appending new ones to the BM25 delta and the vector matrix); :meth:`SearchIndex.build` makes a
fresh, compact index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from toolrig import BaseTool
from toolrig.discovery._bm25 import Bm25Index
from toolrig.discovery._embed import CachedEmbedder
from toolrig.discovery._text import FIELDS, ToolText, normalize_name

__all__ = ["HYBRID_B", "HYBRID_FIELDS", "SearchIndex", "Slot"]

_FIELD_WEIGHTS = {"name": 2, "parameters": 2}  # times a field's tokens count: a word of the name or of a
# parameter says more than one of a long description (parameters at 2: ToolLens dev BM25 recall@5 0.322 → 0.329)
HYBRID_B = 0.0
HYBRID_FIELDS: Mapping[str, int] = {"name": 2, "parameters": 5}
"""BM25 where it stands beside embeddings (hybrid by score): ``b = 0`` (no length normalisation), parameter
words at 5.
Beside a dense model, BM25's part is whether the query's words are in the tool's text at all, not how densely:
ToolLens dev hybrid recall@5 0.387 → 0.399, MetaTool dev 0.813 → 0.817 (bench/README.md, branch ``recall8``;
tuned on dev only). BM25 alone keeps ``b = 0.5`` and parameters at 2 (there these settings lower both)."""


@dataclass(frozen=True, kw_only=True)
class Slot:
    """One indexed tool version."""

    tool: BaseTool
    text: ToolText
    tokens: Mapping[str, Sequence[str]]

    @classmethod
    def of(cls, tool: BaseTool, text: ToolText) -> Slot:
        return cls(tool=tool, text=text, tokens=text.field_tokens())

    def document(self, fields: Mapping[str, int] | None = None) -> list[str]:
        """The BM25 document: every field's tokens, repeated as ``fields`` (field → times; default: the name's
        and the parameters' twice) says."""
        weights = _FIELD_WEIGHTS if fields is None else fields
        out: list[str] = []
        for f in FIELDS:
            out.extend(list(self.tokens[f]) * weights.get(f, 1))
        return out


class SearchIndex:
    """Slots, a BM25 index over them, vectors when an embedder is given, and exact-name lookups.

    Args:
        slots: the tools to index.
        embedder: computes document vectors (None: no dense search).
        aliases: extra exact-match names, alias → tool name.
        k1, b: BM25 parameters.
        fields: times each field's tokens count in the BM25 document (None: name and parameters twice).
    """

    def __init__(self, slots: Sequence[Slot], *, embedder: CachedEmbedder | None = None,
                 aliases: Mapping[str, str] | None = None, k1: float = 1.2, b: float = 0.5,
                 fields: Mapping[str, int] | None = None) -> None:
        self.fields = dict(fields) if fields is not None else None
        self.embedder = embedder
        self.user_aliases = dict(aliases or {})
        self.slots: list[Slot | None] = list(slots)
        self.bm25 = Bm25Index([s.document(self.fields) for s in slots], k1=k1, b=b)
        self.alive = np.ones(len(slots), dtype=bool)
        self.by_name: dict[str, int] = {s.text.name: i for i, s in enumerate(slots)}
        self.vectors: np.ndarray | None = None
        if embedder is not None:
            self.vectors = embedder.embed([s.text.document() for s in slots]) if slots else None
        self._exact: dict[str, str] | None = None

    @property
    def size(self) -> int:
        """Slots, removed ones included."""
        return len(self.slots)

    def live(self) -> int:
        """Tools indexed now."""
        return len(self.by_name)

    def digests(self) -> dict[str, str]:
        """Tool name → digest of what is indexed."""
        return {name: s.text.digest for name, i in self.by_name.items() if (s := self.slots[i]) is not None}

    def apply(self, removed: Sequence[str], added: Sequence[Slot]) -> None:
        """Remove tools by name and add new slots, without rebuilding."""
        for name in removed:
            i = self.by_name.pop(name, None)
            if i is not None:
                self.bm25.remove(i)
                self.alive[i] = False
                self.slots[i] = None
        if added:
            new_vectors = None
            if self.embedder is not None:
                new_vectors = self.embedder.embed([s.text.document() for s in added])
            for s in added:
                self.by_name.pop(s.text.name, None)
                i = self.bm25.add(s.document(self.fields))
                self.slots.append(s)
                self.by_name[s.text.name] = i
            self.alive = np.append(self.alive, np.ones(len(added), dtype=bool))
            if new_vectors is not None:
                self.vectors = new_vectors if self.vectors is None else np.vstack([self.vectors, new_vectors])
        self._exact = None

    def exact(self, query: str) -> str | None:
        """The tool whose name (or alias) the query is, ignoring case and separators."""
        if self._exact is None:
            table: dict[str, str] = {}
            for name, i in self.by_name.items():
                slot = self.slots[i]
                for alias in slot.text.aliases if slot is not None else ():
                    table.setdefault(normalize_name(alias), name)
            for alias, name in self.user_aliases.items():
                if name in self.by_name:
                    table[normalize_name(alias)] = name
            for name in self.by_name:  # a real name beats an alias
                table[normalize_name(name)] = name
            self._exact = table
        key = normalize_name(query)
        return self._exact.get(key) if key else None
