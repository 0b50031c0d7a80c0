"""The SSE parsing of toolrig's streamable-HTTP client transport (``EventParser``): httpx2's rules, once per event."""

from __future__ import annotations

from toolrig.mcp.client._sse_parse import EventParser


def _fields(events: list) -> list[tuple[str, bytes, str, int | None]]:
    return [(e.event, e.data, e.id, e.retry) for e in events]


def test_whole_events_with_ids_retry_and_comments() -> None:
    parser = EventParser()
    body = (b": a comment\n"
            b"id: 1\nretry: 250\ndata: \n\n"  # a priming event: an id, empty data
            b"event: message\ndata: {\"a\":\ndata:1}\n\n"
            b"data:{\"b\":2}\r\n\r\n")
    assert _fields(parser.feed(body)) == [
        ("message", b"", "1", 250),
        ("message", b"{\"a\":\n1}", "1", None),  # the last id stays with the stream's later events
        ("message", b"{\"b\":2}", "1", None),
    ]


def test_a_line_cut_between_pieces_and_an_unfinished_event() -> None:
    parser = EventParser()
    assert parser.feed(b"event: note\nda") == []
    assert _fields(parser.feed(b"ta: x\n\nid: 7\ndata: y\n")) == [("note", b"x", "", None)]
    assert parser.feed(b"data: z") == []  # no blank line before the end of the body: never passed on


def test_an_id_with_a_nul_is_ignored_and_a_bad_retry_too() -> None:
    parser = EventParser()
    assert _fields(parser.feed(b"id: a\0b\nretry: soon\ndata: 1\n\n")) == [("message", b"1", "", None)]
