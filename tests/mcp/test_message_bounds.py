"""The pieces that bound an upstream's messages: lines, SSE events, which request an oversized message answered,
and the count of JSON values, each checked against a plain reference on generated inputs."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

import mcp_types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig.mcp.client._sse_events import EventSplitter, event_data
from toolrig.mcp.shared._lines import KEEP, LineSplitter, Oversized
from toolrig.mcp.shared._oversized import MAX_VALUES, Awaiting, origin_of, too_many_values

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=150)


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


def split_all(splitter: LineSplitter, chunks: list[bytes]) -> list[bytes | Oversized]:
    out: list[bytes | Oversized] = []
    for chunk in chunks:
        out.extend(splitter.feed(chunk))
    last = splitter.end()
    return out if last is None else [*out, last]


@SETTINGS
@given(lines=st.lists(st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")), max_size=12),
       limit=st.integers(1, 40), cuts=st.lists(st.integers(0, 10_000), max_size=8), trailing=st.booleans())
def test_lines_come_out_as_split_does_and_long_ones_as_their_ends(lines: list[bytes], limit: int, cuts: list[int],
                                                                  trailing: bool) -> None:
    data = b"\n".join(lines) + (b"\n" if trailing and lines else b"")
    got = split_all(LineSplitter(limit), chunked(data, cuts))
    expected = data.split(b"\n")
    if expected and expected[-1] == b"":
        expected.pop()
    assert len(got) == len(expected)
    for line, want in zip(got, expected, strict=True):
        if len(want) <= limit:
            assert line == want
        else:
            assert line == Oversized(head=want[:KEEP], tail=want[-KEEP:], size=len(want))


def test_a_long_line_is_never_held_and_shows_while_it_arrives() -> None:
    splitter = LineSplitter(100)
    assert splitter.feed(b'{"id": 7, "result": "' + b"x" * 10_000) == []
    skipping = splitter.skipping
    assert skipping is not None and skipping.size == 10_021 and skipping.head.startswith(b'{"id": 7')
    for _ in range(100):
        assert splitter.feed(b"y" * 100_000) == []
    done = splitter.feed(b'"}\n{"id": 8}\n')
    assert isinstance(done[0], Oversized) and done[0].size == 10_021 + 10_000_000 + 2 and done[0].tail.endswith(b'y"}')
    assert done[1:] == [b'{"id": 8}'] and splitter.skipping is None


# -- which request an oversized message answered -----------------------------------------------------------------------
def _answer(request_id: int | str, result: Any, order: str) -> bytes:
    members = {"jsonrpc": "2.0", "id": request_id, "result": result}
    keys = {"python": ["jsonrpc", "id", "result"], "typescript": ["result", "jsonrpc", "id"],
            "middle": ["jsonrpc", "result", "id"]}[order]
    return json.dumps({k: members[k] for k in keys}, separators=(",", ":")).encode()


json_text = st.text(alphabet=st.sampled_from('ab,"{}[]:\\ \n\u00e9id'), max_size=40)


@SETTINGS
@given(request_id=st.one_of(st.integers(0, 10**9), st.text(min_size=1, max_size=12)),
       order=st.sampled_from(["python", "typescript", "middle"]), filler=json_text, size=st.integers(5_000, 30_000))
def test_the_id_of_an_oversized_answer_is_read_from_its_ends(request_id: int | str, order: str, filler: str,
                                                             size: int) -> None:
    result = {"content": [{"type": "text", "text": filler * (size // max(len(filler), 1)) + '", "id": 666}'}],
              "isError": False, "tail": filler}
    message = _answer(request_id, result, order)
    origin = origin_of(message[:KEEP], message[-KEEP:])
    assert not origin.from_server and origin.id == request_id


@SETTINGS
@given(request_id=st.integers(0, 10**6), method=st.sampled_from(["sampling/createMessage", "notifications/message"]),
       filler=json_text, first=st.booleans())
def test_a_server_message_is_never_taken_for_an_answer(request_id: int, method: str, filler: str, first: bool) -> None:
    params = {"data": filler * 2_000 + ',"id": 5}', "more": filler}
    members = {"method": method, "params": params, "jsonrpc": "2.0", "id": request_id}
    keys = ["method", "params", "jsonrpc", "id"] if first else ["params", "jsonrpc", "method", "id"]
    message = json.dumps({k: members[k] for k in keys}).encode()
    origin = origin_of(message[:KEEP], message[-KEEP:])
    assert origin.from_server and origin.id is None


def test_an_id_that_may_be_cut_short_is_not_believed() -> None:
    head = b'{"jsonrpc":"2.0","id":12'  # 123? the rest is not known
    assert origin_of(head, b"x" * 100).id is None
    assert origin_of(b'{"jsonrpc":"2.0","id":12,"result":{"a":"', b"").id == 12


def test_a_nested_id_at_the_end_is_not_the_message_s() -> None:
    tail = b'aaaa"}],"meta":{"x":1,"id":99}}}'  # the inner object's id, then the end of "result", of the message
    assert origin_of(b'{"result":{"content":[{"text":"aaaa', tail).id is None


# -- counting JSON values ---------------------------------------------------------------------------------------------
def _reference_count(value: Any) -> int:
    """``{``, ``[`` and ``,`` of the compact rendering, counted outside strings: containers plus separators."""
    if isinstance(value, dict):
        return 1 + max(len(value) - 1, 0) + sum(_reference_count(v) for v in value.values())
    if isinstance(value, list):
        return 1 + max(len(value) - 1, 0) + sum(_reference_count(v) for v in value)
    return 0


json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), json_text),
                           lambda inner: st.one_of(st.lists(inner, max_size=6),
                                                   st.dictionaries(json_text, inner, max_size=6)), max_leaves=40)


@SETTINGS
@given(value=json_values, limit=st.integers(0, 60))
def test_too_many_values_agrees_with_a_count_of_the_parsed_value(value: Any, limit: int) -> None:
    message = json.dumps(value, ensure_ascii=False).encode()
    assert too_many_values(message, limit) == (_reference_count(value) > limit)


def test_a_swarm_of_items_is_too_many_and_a_long_text_full_of_commas_is_not() -> None:
    swarm = json.dumps({"content": [{"type": "text", "text": "a"}] * 40_000}).encode()
    assert len(swarm) < 2_000_000 and too_many_values(swarm)
    csv = json.dumps({"content": [{"type": "text", "text": "1,2,[3],{4}\n" * 200_000}]}).encode()
    assert not too_many_values(csv) and csv.count(b",") > MAX_VALUES


# -- SSE events --------------------------------------------------------------------------------------------------------
def _events(splitter: EventSplitter, chunks: list[bytes]) -> list[bytes | Oversized]:
    out: list[bytes | Oversized] = []
    for chunk in chunks:
        out.extend(splitter.feed(chunk))
    last = splitter.end()
    return out if last is None else [*out, last]


@SETTINGS
@given(sizes=st.lists(st.integers(0, 300), min_size=1, max_size=6), limit=st.integers(40, 250),
       cuts=st.lists(st.integers(0, 5_000), max_size=8), crlf=st.booleans())
def test_events_pass_whole_and_long_ones_are_dropped(sizes: list[int], limit: int, cuts: list[int],
                                                     crlf: bool) -> None:
    end = b"\r\n" if crlf else b"\n"
    events = [b"event: message" + end + b"data: " + b"d" * n + end + end for n in sizes]
    got = _events(EventSplitter(limit), chunked(b"".join(events), cuts))
    assert len(got) == len(events)
    for out, event in zip(got, events, strict=True):
        if len(event) <= limit:
            assert out == event
        else:
            assert isinstance(out, Oversized) and out.head.startswith(b"event: message")


def test_an_event_with_invalid_utf8_is_passed_on_as_valid_utf8() -> None:
    (event,) = EventSplitter(1_000).feed(b"data: {\"a\": \"\xff\xfe\"}\n\n")
    assert isinstance(event, bytes) and event.decode("utf-8") == 'data: {"a": "\ufffd\ufffd"}\n\n'


def test_the_json_of_an_event_s_data() -> None:
    assert event_data(b"event: message\ndata: {\"id\": 3,", b"\"x\"}\n") == (b'{"id": 3,', b'"x"}')
    assert event_data(b"id: 9\ndata:{\"a\"", b"aa\ndata: \"b\"}\r\n") == (b'{"a"', b'"b"}')


# -- requests awaited --------------------------------------------------------------------------------------------------
def test_a_request_is_awaited_until_answered_or_cancelled() -> None:
    awaiting = Awaiting()
    awaiting.sent(mcp_types.JSONRPCRequest(jsonrpc="2.0", id=1, method="tools/call"))
    awaiting.sent(mcp_types.JSONRPCRequest(jsonrpc="2.0", id=2, method="tools/call"))
    assert 1 in awaiting and "2" in awaiting and len(awaiting) == 2
    awaiting.received(mcp_types.JSONRPCResponse(jsonrpc="2.0", id="1", result={}))
    awaiting.sent(mcp_types.JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled",
                                                params={"requestId": 2}))
    assert len(awaiting) == 0


def test_a_random_id_chosen_by_the_test_is_found_in_a_huge_answer() -> None:
    rng = random.Random(7)
    for _ in range(20):
        request_id = rng.randrange(10**9)
        message = _answer(request_id, {"content": [{"type": "text", "text": "z" * rng.randrange(5_000, 50_000)}]},
                          rng.choice(["python", "typescript"]))
        splitter = LineSplitter(1_000)
        (item,) = splitter.feed(message + b"\n")
        assert isinstance(item, Oversized) and origin_of(item.head, item.tail).id == request_id


# -- the cap, configured per server ------------------------------------------------------------------------------------
def test_max_message_bytes_is_read_from_a_server_entry_and_checked() -> None:
    import pytest

    from toolrig.mcp import MCPConfigError, parse_target
    from toolrig.mcp.client._transports import DEFAULT_MAX_MESSAGE_BYTES, SDK_SSE_EVENT_LIMIT, message_limit

    assert parse_target({"command": "srv", "max_message_bytes": 4_000_000}).max_message_bytes == 4_000_000
    assert message_limit(parse_target({"url": "https://x.example/mcp", "max_message_bytes": 50_000})) == 50_000
    assert message_limit(parse_target("https://x.example/mcp")) == DEFAULT_MAX_MESSAGE_BYTES
    assert message_limit(parse_target("https://x.example/sse")) == SDK_SSE_EVENT_LIMIT  # the SDK's SSE client
    for bad in (0, -5, 1.5, "10MB", True, 100):
        with pytest.raises(MCPConfigError, match="max_message_bytes"):
            parse_target({"command": "srv", "max_message_bytes": bad})


def test_the_default_cap_fits_the_largest_result_the_output_stage_accepts() -> None:
    from toolrig.mcp.client._transports import DEFAULT_MAX_MESSAGE_BYTES
    from toolrig.runtime.stages._output import OutputLimits

    hard = OutputLimits().hard_limit
    assert hard is not None
    assert 2 * 4 * hard <= DEFAULT_MAX_MESSAGE_BYTES  # UTF-8 at 4 bytes a character, as text and structured


def test_the_server_reads_the_id_of_an_oversized_request_not_of_a_notification() -> None:
    from toolrig.mcp.shared._oversized import request_id_of

    big = b"p" * 20_000
    request = b'{"jsonrpc":"2.0","id":"r-7","method":"tools/call","params":{"pad":"' + big + b'"}}'
    notification = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"pad":"' + big + b'","id":3}}'
    assert request_id_of(request[:KEEP], request[-KEEP:]) == "r-7"
    assert request_id_of(notification[:KEEP], notification[-KEEP:]) is None


def test_an_mcp_toolset_takes_the_cap_as_an_option() -> None:
    import pytest

    from toolrig import DefinitionError
    from toolrig.mcp import MCPToolset

    assert MCPToolset("https://x.example/mcp", max_message_bytes=2_000_000).target.max_message_bytes == 2_000_000
    with pytest.raises(DefinitionError):
        MCPToolset("https://x.example/mcp", max_message_bytes=10)
