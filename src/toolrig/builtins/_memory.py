"""``remember`` / ``recall`` / ``forget``: the agent's long-term memory, one per user (and agent), bounded, redacted.

A memory belongs to the *scope* of the call that stored it: the call's ``user`` and, unless
``share_across_agents``, its ``agent`` (both from the :class:`~toolrig.CallContext` the runtime or the MCP server
built from the caller's credential, never from the arguments). A call without a user is ``anonymous`` (one
local person, e.g. ``toolrig serve`` over stdio); ``require_user=True`` refuses such calls instead. Secrets
(:mod:`toolrig.redact`) are replaced before a memory is stored; each memory and each scope are bounded.
``recall`` ranks with BM25 (Snowball stems) unless a ``ranker`` is given.
"""

from __future__ import annotations

import json
import math
import re
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import Stemmer
from cachetools import LRUCache

from toolrig import BaseTool, CallContext, ModelRetry, Tool, ToolAnnotations, current_context
from toolrig.builtins._memstore import MemoryRecord, MemoryStore
from toolrig.builtins._memstores import open_memory_store
from toolrig.redact import DEFAULT_REDACTOR, Redactor

__all__ = ["Bm25Ranker", "Forget", "Memories", "Ranker", "Recall", "Remember", "memory_tools"]

Ranker = Callable[[str, Sequence[str]], Sequence[float]]
"""``(query, documents) -> one score per document`` (higher is better; 0 or less: no match)."""

_WORDS = re.compile(r"\w+", re.UNICODE)
_ID = re.compile(r"^[0-9a-f]{16}$")


class Bm25Ranker:
    """BM25 scores of documents for a query: lower-cased words, English Snowball stems (PyStemmer).

    Scored directly over the few thousand short memories of one owner; each document's stems are kept in a
    bounded LRU (memories do not change), so a recall over 1,000 memories costs a few milliseconds.

    Args:
        k1, b: the BM25 parameters.
        cache: documents whose stems are kept.
    """

    def __init__(self, *, k1: float = 1.2, b: float = 0.75, cache: int = 20_000) -> None:
        self.k1, self.b = k1, b
        self._stems: LRUCache[str, Counter[str]] = LRUCache(maxsize=cache)
        self._lock = threading.Lock()

    def _tokens(self, stemmer: Any, text: str) -> Counter[str]:
        with self._lock:
            found = self._stems.get(text)
        if found is None:
            found = Counter(stemmer.stemWords(_WORDS.findall(text.lower())))
            with self._lock:
                self._stems[text] = found
        return found

    def __call__(self, query: str, documents: Sequence[str]) -> list[float]:
        stemmer = Stemmer.Stemmer("english")
        docs = [self._tokens(stemmer, d) for d in documents]
        terms = set(stemmer.stemWords(_WORDS.findall(query.lower())))
        scores = [0.0] * len(docs)
        if not docs or not terms:
            return scores
        lengths = [d.total() for d in docs]
        average = (sum(lengths) / len(docs)) or 1.0
        for term in terms:
            having = [i for i, d in enumerate(docs) if term in d]
            idf = math.log(1 + (len(docs) - len(having) + 0.5) / (len(having) + 0.5))
            for i in having:
                tf = docs[i][term]
                scores[i] += idf * tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * lengths[i] / average))
        return scores


class Memories:
    """What the three tools share: the store, the bounds, the scope rule, the redactor and the ranker."""

    def __init__(self, store: MemoryStore, *, max_chars: int, max_count: int, max_tags: int,
                 share_across_agents: bool, require_user: bool, redactor: Redactor, ranker: Ranker) -> None:
        self.store, self.max_chars, self.max_count, self.max_tags = store, max_chars, max_count, max_tags
        self.share_across_agents, self.require_user = share_across_agents, require_user
        self.redactor, self.ranker = redactor, ranker

    def scope(self, ctx: CallContext) -> str:
        """The owner of the calling context's memories (JSON of user and agent)."""
        if ctx.user is None and self.require_user:
            raise ModelRetry("memory needs an authenticated user; this call has none, so nothing is remembered "
                             "or recalled")
        agent = None if self.share_across_agents else ctx.agent
        return json.dumps(["user", ctx.user, "agent", agent])

    def tags(self, tags: list[str] | None) -> tuple[str, ...]:
        """The tags, cleaned and bounded."""
        cleaned = tuple(dict.fromkeys(self.redactor.text(str(t)).strip()[:40] for t in tags or () if str(t).strip()))
        if len(cleaned) > self.max_tags:
            raise ModelRetry(f"at most {self.max_tags} tags per memory")
        return cleaned


def _view(record: MemoryRecord, score: float | None = None) -> dict[str, Any]:
    view: dict[str, Any] = {"id": record.id, "text": record.text, "tags": list(record.tags),
                            "created": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="seconds")}
    if score is not None:
        view["score"] = round(score, 3)
    return view


class Remember(Tool):
    """Remember a fact for later conversations (recall finds it again; forget removes it).

    Store short, self-contained facts ("the user prefers metric units"), not whole documents.
    Secrets such as API keys and passwords are replaced by a marker before the memory is stored.

    Args:
        text: the fact to remember.
        tags: a few short labels, e.g. ["preferences"].
    """

    name = "remember"
    permission = "write"
    idempotent = False
    annotations = ToolAnnotations(title="Remember", read_only_hint=False, destructive_hint=False,
                                  idempotent_hint=False, open_world_hint=False)
    tags = frozenset({"memory", "builtin"})
    metadata: ClassVar[dict[str, Any]] = {"breaker": False}

    def __init__(self, memories: Memories) -> None:
        self.memories = memories

    async def run(self, text: str, tags: list[str] | None = None) -> dict[str, Any]:
        m = self.memories
        scope = m.scope(current_context())
        if not text.strip():
            raise ModelRetry("give the text to remember")
        if len(text) > m.max_chars:
            raise ModelRetry(f"a memory is at most {m.max_chars:,} characters; this one has {len(text):,}: "
                             "remember a shorter summary")
        stored = m.redactor.text(text.strip())
        record = MemoryRecord(id=secrets.token_hex(8), text=stored, tags=m.tags(tags), created=time.time())
        if not await m.store.add(scope, record, max_count=m.max_count):
            raise ModelRetry(f"the memory is full ({m.max_count:,} memories): forget some before remembering more")
        return {"remembered": _view(record), "redacted": stored != text.strip()}


class Recall(Tool):
    """Recall remembered facts that match a query, best first (an empty query: the most recent).

    Args:
        query: words to look for, e.g. "units preference".
        k: how many memories to return (1-50).
    """

    name = "recall"
    permission = "readonly"
    tags = frozenset({"memory", "builtin"})
    metadata: ClassVar[dict[str, Any]] = {"breaker": False}

    def __init__(self, memories: Memories) -> None:
        self.memories = memories

    async def run(self, query: str = "", k: int = 5) -> dict[str, Any]:
        m = self.memories
        scope = m.scope(current_context())
        k = max(1, min(int(k), 50))
        records = await m.store.all(scope)
        if not query.strip():
            latest = sorted(records, key=lambda r: r.created, reverse=True)[:k]
            return {"memories": [_view(r) for r in latest], "total": len(records)}
        scores = m.ranker(query, [" ".join((r.text, *r.tags)) for r in records])
        ranked = sorted(((s, i) for i, s in enumerate(scores) if s > 0), key=lambda p: (-p[0], -records[p[1]].created))
        return {"memories": [_view(records[i], s) for s, i in ranked[:k]], "total": len(records)}


class Forget(Tool):
    """Forget one remembered fact by its id (as remember or recall returned it).

    Args:
        id: the memory's id, e.g. "3f2a9c0e1b7d4a66".
    """

    name = "forget"
    permission = "write"
    tags = frozenset({"memory", "builtin"})
    metadata: ClassVar[dict[str, Any]] = {"breaker": False}

    def __init__(self, memories: Memories) -> None:
        self.memories = memories

    async def run(self, id: str) -> dict[str, Any]:
        scope = self.memories.scope(current_context())
        if not _ID.match(id.strip()):
            raise ModelRetry("give a memory id as remember or recall returned it (16 hex digits)")
        if not await self.memories.store.delete(scope, id.strip()):
            raise ModelRetry(f"no memory with id {id.strip()!r}; recall lists the ids")
        return {"forgotten": id.strip()}


def memory_tools(store: str | Path | MemoryStore | None = None, *, max_chars: int = 4_000, max_count: int = 1_000,
                 max_tags: int = 10, share_across_agents: bool = False, require_user: bool = False,
                 redactor: Redactor = DEFAULT_REDACTOR, ranker: Ranker | None = None) -> list[BaseTool]:
    """The memory tools: ``remember(text, tags)`` (write), ``recall(query, k)`` (readonly), ``forget(id)`` (write).

    Args:
        store: where memories live: a SQLite path, ``sqlite:///path``, ``redis://...`` (``?prefix=``),
            ``postgresql://...`` (``?table=``) or a :class:`MemoryStore`; None: ``memory.sqlite3`` in the user's
            data folder.
        max_chars: the longest memory.
        max_count: the most memories one scope (user, agent) holds.
        max_tags: the most tags on one memory.
        share_across_agents: one memory per user for all its agents (default: per user and agent).
        require_user: refuse calls without an authenticated user (default: they share the ``anonymous`` memory).
        redactor: what replaces secrets before a memory is stored.
        ranker: ``(query, documents) -> scores`` for recall (default: a :class:`Bm25Ranker`).

    Raises:
        ConfigError: ``store`` is a URL of an unknown kind.
    """
    memories = Memories(open_memory_store(store), max_chars=max_chars, max_count=max_count, max_tags=max_tags,
                        share_across_agents=share_across_agents, require_user=require_user, redactor=redactor,
                        ranker=ranker or Bm25Ranker())
    return [Remember(memories), Recall(memories), Forget(memories)]
