"""How many tokens the tool definitions take: tiktoken where installed and loadable, else an estimate.

What is measured is what a provider receives: each tool's OpenAI Chat Completions definition as compact
JSON (:func:`toolrig.providers.to_openai`). tiktoken needs its encoding file, which it downloads on first
use; where that fails (no network, no cache), the estimate is used: one token per 3.5 characters, about what
tiktoken's ``o200k_base`` counts for JSON schemas (short keys and punctuation are tokens of their own).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from functools import cache

from toolrig import BaseTool

__all__ = ["TokenCounter", "definition_text", "estimate_tokens", "tiktoken_counter", "token_counter"]

log = logging.getLogger("toolrig.discovery")

TokenCounter = Callable[[str], int]
"""Counts the tokens of a text."""


def estimate_tokens(text: str) -> int:
    """About how many tokens ``text`` is (ceil of characters / 3.5)."""
    return math.ceil(len(text) / 3.5)


@cache
def tiktoken_counter(encoding: str = "o200k_base") -> TokenCounter | None:
    """A counter using tiktoken's ``encoding``, or None when tiktoken or the encoding is not available."""
    try:
        import tiktoken

        enc = tiktoken.get_encoding(encoding)
    except Exception as exc:  # not installed, or the encoding file cannot be fetched: estimate instead
        log.info("tiktoken unavailable (%s: %s); estimating tokens", type(exc).__name__, exc)
        return None

    def count(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    return count


def token_counter() -> TokenCounter:
    """tiktoken's counter when available, else :func:`estimate_tokens`."""
    return tiktoken_counter() or estimate_tokens


def definition_text(tool: BaseTool) -> str:
    """The compact JSON of ``tool``'s OpenAI definition (what the context window holds)."""
    from toolrig.providers import to_openai

    return json.dumps(to_openai([tool])[0], separators=(",", ":"), ensure_ascii=False)
