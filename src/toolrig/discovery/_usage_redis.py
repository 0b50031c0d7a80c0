"""The Redis usage store: ``usage="redis://host:6379/0"`` (``?prefix=NAME``, default ``toolrig``).

Events are entries of one stream, ``{prefix}:usage``, each ``{"e": <event JSON>}``; ``XADD`` trims it to about
``max_events`` (never fewer), and a reader's cursor is the last entry id it read. Needs the ``redis`` extra.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from toolrig.discovery._usage_store import decode_event, encode_event

__all__ = ["RedisUsageStore"]


def _split_prefix(url: str) -> tuple[str, str | None]:
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefix = next((v for k, v in query if k == "prefix"), None)
    rest = urlencode([(k, v) for k, v in query if k != "prefix"])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, rest, parts.fragment)), prefix


class RedisUsageStore:
    """Usage events in a Redis stream (see the module docstring).

    Args:
        url: a ``redis://`` / ``rediss://`` / ``unix://`` URL; ``?prefix=NAME`` names the key namespace.
        max_events: about how many events the stream keeps.
    """

    def __init__(self, url: str, *, max_events: int = 200_000) -> None:
        import redis

        self.url, prefix = _split_prefix(url)
        self.key = f"{prefix or 'toolrig'}:usage"
        self.max_events = max_events
        self.redis: Any = redis.Redis.from_url(self.url, socket_timeout=10, socket_connect_timeout=10)

    def append(self, events: Sequence[Mapping[str, Any]]) -> None:
        """Append events in one round trip."""
        if not events:
            return
        pipe = self.redis.pipeline(transaction=False)
        for event in events:
            pipe.xadd(self.key, {"e": encode_event(event)}, maxlen=self.max_events, approximate=True)
        pipe.execute()

    def read(self, cursor: Any, limit: int) -> tuple[list[Mapping[str, Any]], Any]:
        """Entries after the stream id ``cursor`` (None: from the oldest kept)."""
        after = cursor if isinstance(cursor, str | bytes) else "0-0"
        answer = self.redis.xread({self.key: after}, count=limit)
        out: list[Mapping[str, Any]] = []
        last = after
        for _, entries in answer or ():
            for entry_id, fields in entries:
                last = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
                text = fields.get(b"e", fields.get("e"))
                if text is not None and (event := decode_event(text)) is not None:
                    out.append(event)
        return out, last

    def close(self) -> None:
        """Close the connection pool."""
        self.redis.close()

    def __repr__(self) -> str:
        return f"RedisUsageStore(key={self.key!r})"
