"""Discovery: find the right tools among many, show a model only what it needs, and pick tools by rule.

* :class:`ToolSearch` ranks a toolset's tools for a query: BM25 (``bm25s``) over names, descriptions,
  parameters and tags; embeddings (:class:`Embedder`; the ``embeddings`` extra's :func:`default_embedder`,
  :class:`MiniLMEmbedder` and :class:`WordLlamaEmbedder` in one :class:`CombinedEmbedder`); or both fused.
  An exact name or alias always ranks first; the index follows the toolset as it changes.
* :class:`UsageLog` (from :meth:`UsageLog.record`, a runtime hook or stage, or the audit log) makes past
  outcomes improve later rankings: successes raise a tool for similar queries, failures lower it, old
  evidence fades, one user's weight is capped; shared across processes through a :class:`UsageStore`
  (SQLite, Redis, PostgreSQL).
* :class:`ProgressiveToolset` exposes only core tools plus ``search_tools`` / ``describe_tool`` /
  ``call_tool`` once all definitions would take too much of the context window.
* Selection strategies: :class:`RuleSelector`, :class:`RetrievalSelector`, :class:`LLMSelector`,
  :class:`HybridSelector`.
"""

from __future__ import annotations

from toolrig.discovery._bundled import default_embedder, embeddings_available
from toolrig.discovery._embed import (
    CACHE_ENV,
    CachedEmbedder,
    CombinedEmbedder,
    Embedder,
    EmbeddingError,
    default_cache_dir,
)
from toolrig.discovery._meta import CALL_TOOL, DESCRIBE_TOOL, SEARCH_TOOLS
from toolrig.discovery._minilm import MiniLMEmbedder
from toolrig.discovery._progressive import ProgressiveToolset
from toolrig.discovery._search import Filters, Fusion, Method, SearchHit, ToolSearch
from toolrig.discovery._select import (
    Chooser,
    HybridSelector,
    LLMSelector,
    RetrievalSelector,
    RuleSelector,
    Selection,
    SelectionRule,
    Selector,
    select_sync,
)
from toolrig.discovery._text import FIELDS
from toolrig.discovery._tokens import TokenCounter, estimate_tokens, token_counter
from toolrig.discovery._usage import META_TOOLS, ToolUsage, UsageEvent, UsageLog, UsageRecorder
from toolrig.discovery._usage_open import open_usage_store
from toolrig.discovery._usage_store import SqliteUsageStore, UsageStore
from toolrig.discovery._wordllama import WordLlamaEmbedder

__all__ = [
    "CACHE_ENV",
    "CALL_TOOL",
    "DESCRIBE_TOOL",
    "FIELDS",
    "META_TOOLS",
    "SEARCH_TOOLS",
    "CachedEmbedder",
    "Chooser",
    "CombinedEmbedder",
    "Embedder",
    "EmbeddingError",
    "Filters",
    "Fusion",
    "HybridSelector",
    "LLMSelector",
    "Method",
    "MiniLMEmbedder",
    "ProgressiveToolset",
    "RetrievalSelector",
    "RuleSelector",
    "SearchHit",
    "Selection",
    "SelectionRule",
    "Selector",
    "SqliteUsageStore",
    "TokenCounter",
    "ToolSearch",
    "ToolUsage",
    "UsageEvent",
    "UsageLog",
    "UsageRecorder",
    "UsageStore",
    "WordLlamaEmbedder",
    "default_cache_dir",
    "default_embedder",
    "embeddings_available",
    "estimate_tokens",
    "open_usage_store",
    "select_sync",
    "token_counter",
]
