"""to_result and ToolResult: every kind of return value, rendering, structured data, wire form."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
from typing import Any

import pytest
from pydantic import BaseModel, Field

from toolrig import (
    AudioPart,
    ImagePart,
    JsonPart,
    ResourcePart,
    TextPart,
    ToolResult,
    to_result,
    tool,
)
from toolrig._results import parts_of, sniff_mime_type
from toolrig.errors import ResultConversionError

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 8
WAV = b"RIFF\x00\x00\x00\x00WAVEfmt "


class Point(BaseModel):
    x: int
    y: int = Field(alias="Y", default=0)


@dataclasses.dataclass
class Box:
    width: float
    label: str = "box"


class Colour(enum.Enum):
    RED = "red"


def test_str_becomes_text() -> None:
    result = to_result("hello")
    assert result.parts == (TextPart("hello"),)
    assert result.text == "hello"
    assert result.structured is None
    assert result.is_error is False


def test_none_becomes_no_parts() -> None:
    result = to_result(None)
    assert result.parts == ()
    assert result.text == ""


@pytest.mark.parametrize(("value", "data", "text"), [
    ({"a": 1, "b": [True, None]}, {"a": 1, "b": [True, None]}, '{"a": 1, "b": [true, null]}'),
    ([1, "two"], [1, "two"], '[1, "two"]'),
    ((1, 2), [1, 2], "[1, 2]"),
    ({3}, [3], "[3]"),
    (42, 42, "42"),
    (2.5, 2.5, "2.5"),
    (False, False, "false"),
    (Colour.RED, "red", '"red"'),
    (datetime.date(2024, 5, 1), "2024-05-01", '"2024-05-01"'),
    ({"when": datetime.datetime(2024, 5, 1, 12)}, {"when": "2024-05-01T12:00:00"},
     '{"when": "2024-05-01T12:00:00"}'),
    ({"name": "café"}, {"name": "café"}, '{"name": "café"}'),
])
def test_json_like_values_become_a_json_part(value: Any, data: Any, text: str) -> None:
    result = to_result(value)
    assert result.parts == (JsonPart(data),)
    assert result.structured == data
    assert result.text == text


def test_pydantic_model_is_dumped_by_alias_like_its_output_schema() -> None:
    result = to_result(Point(x=1, Y=2))
    assert result.structured == {"x": 1, "Y": 2}

    @tool
    def where() -> Point:
        """Where."""
        return Point(x=1)

    assert set(where.spec.output_schema["properties"]) == {"x", "Y"}  # type: ignore[index]


def test_nested_models_and_dataclasses() -> None:
    result = to_result({"points": [Point(x=1)], "box": Box(2.0)})
    assert result.structured == {"points": [{"x": 1, "Y": 0}], "box": {"width": 2.0, "label": "box"}}
    assert to_result(Box(1.5)).structured == {"width": 1.5, "label": "box"}
    assert to_result([Point(x=3)]).structured == [{"x": 3, "Y": 0}]


def test_non_finite_floats_become_null_so_the_json_is_valid() -> None:
    # Before the fix the part held NaN and .text / to_dict() produced invalid JSON ("NaN").
    result = to_result({"ratio": float("nan"), "top": float("inf")})
    assert result.structured == {"ratio": None, "top": None}
    json.loads(result.text)
    json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert to_result(float("-inf")).structured is None


def test_bytes_nested_in_data_are_utf8_or_base64() -> None:
    assert to_result({"b": b"text"}).structured == {"b": "text"}
    # Before the fix, non-UTF-8 bytes inside a dict raised UnicodeDecodeError out of to_result.
    assert to_result({"b": b"\xff\x00"}).structured == {"b": "_wA="}  # URL-safe base64


def test_unknown_objects() -> None:
    class Thing:
        def __str__(self) -> str:
            return "a thing"

    assert to_result(Thing()).parts == (TextPart("a thing"),)
    assert to_result({"thing": Thing()}).structured == {"thing": "a thing"}


def test_circular_data_is_a_clear_error() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ResultConversionError, match="refers to itself"):
        to_result(loop)


def test_objects_without_text_of_their_own_are_a_clear_error_not_a_repr() -> None:
    class Weird:
        pass

    for value in (Weird(), [1, Weird()], {"w": Weird()}, lambda: None, object()):
        with pytest.raises(ResultConversionError, match="no JSON form") as caught:
            to_result(value)
        assert " at 0x" not in str(caught.value)


@pytest.mark.parametrize(("data", "part"), [
    (PNG, ImagePart(PNG, "image/png")),
    (JPEG, ImagePart(JPEG, "image/jpeg")),
    (b"GIF89a...", ImagePart(b"GIF89a...", "image/gif")),
    (b"RIFF\x00\x00\x00\x00WEBPVP8 ", ImagePart(b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp")),
    (WAV, AudioPart(WAV, "audio/wav")),
    (b"ID3\x03", AudioPart(b"ID3\x03", "audio/mpeg")),
    (b"%PDF-1.7", ResourcePart(uri="data:application/pdf", mime_type="application/pdf", blob=b"%PDF-1.7")),
    (b"\x00\x01", ResourcePart(uri="data:application/octet-stream", mime_type="application/octet-stream",
                               blob=b"\x00\x01")),
])
def test_bytes_are_sniffed(data: bytes, part: Any) -> None:
    assert to_result(data).parts == (part,)
    assert to_result(bytearray(data)).parts == (part,)
    assert to_result(memoryview(data)).parts == (part,)


def test_bytes_with_a_mime_type() -> None:
    assert to_result(b"raw", mime_type="image/jpeg").parts == (ImagePart(b"raw", "image/jpeg"),)
    assert to_result(b"raw", mime_type="audio/ogg").parts == (AudioPart(b"raw", "audio/ogg"),)
    zipped = to_result(b"PK", mime_type="application/zip").parts[0]
    assert isinstance(zipped, ResourcePart) and zipped.blob == b"PK" and zipped.mime_type == "application/zip"


def test_text_bytes_are_decoded_for_the_model() -> None:
    result = to_result(b"a,b\n1,2", mime_type="text/csv")
    part = result.parts[0]
    assert isinstance(part, ResourcePart) and part.text == "a,b\n1,2" and part.blob is None
    assert result.text == "a,b\n1,2"
    assert to_result(b'{"a": 1}', mime_type="application/json").text == '{"a": 1}'
    assert to_result(b"<a/>", mime_type="application/vnd.api+xml").text == "<a/>"
    binary = to_result(b"\xff\xfe", mime_type="text/plain").parts[0]
    assert isinstance(binary, ResourcePart) and binary.blob == b"\xff\xfe"


def test_sniff_mime_type() -> None:
    assert sniff_mime_type(PNG) == "image/png"
    assert sniff_mime_type(b"OggS") == "audio/ogg"
    assert sniff_mime_type(b"fLaC") == "audio/flac"
    assert sniff_mime_type(b"") == "application/octet-stream"


def test_parts_pass_through() -> None:
    part = ImagePart(PNG)
    assert to_result(part).parts == (part,)
    assert to_result([TextPart("a"), part]).parts == (TextPart("a"), part)


def test_mixed_list_of_parts_and_values() -> None:
    # Before the fix the whole list was serialised as JSON (and image bytes crashed it).
    result = to_result(["Here is the chart:", ImagePart(PNG), {"rows": 3}])
    assert result.parts == (TextPart("Here is the chart:"), ImagePart(PNG), JsonPart({"rows": 3}))
    assert result.text == 'Here is the chart:\n\n[image image/png, 16 bytes]\n\n{"rows": 3}'
    assert result.structured == {"rows": 3}
    nested = to_result((ToolResult.text_result("a"), TextPart("b")))
    assert nested.parts == (TextPart("a"), TextPart("b"))


def test_tool_result_passes_through_unchanged() -> None:
    given = ToolResult(parts=(TextPart("x"),), is_error=True, meta={"k": 1})
    assert to_result(given) is given


def test_error_results() -> None:
    result = ToolResult.error("city not found")
    assert result.is_error and result.text == "city not found"
    assert ToolResult.text_result("ok").is_error is False
    assert ToolResult.text_result("bad", is_error=True).is_error is True


def test_resource_rendering() -> None:
    assert ResourcePart(uri="file:///a.txt", text="contents").render() == "contents"
    assert ResourcePart(uri="file:///a.bin", mime_type="application/x", blob=b"12").render() == (
        "[resource file:///a.bin (application/x, 2 bytes)]")
    assert ResourcePart(uri="s3://b/k").render() == "[resource s3://b/k (unknown type)]"


def test_audio_and_image_base64() -> None:
    assert ImagePart(b"ab").base64 == "YWI="
    assert AudioPart(b"ab").base64 == "YWI="
    assert AudioPart(b"ab").render() == "[audio audio/wav, 2 bytes]"


def test_to_dict_is_json_ready() -> None:
    result = ToolResult(parts=(
        TextPart("t"), JsonPart({"a": 1}), ImagePart(b"img", "image/png"), AudioPart(b"snd", "audio/wav"),
        ResourcePart(uri="file:///x", mime_type="text/plain", blob=b"xyz", name="x"),
    ), is_error=True)
    data = json.loads(json.dumps(result.to_dict()))
    assert data == {"is_error": True, "parts": [
        {"type": "text", "text": "t"},
        {"type": "json", "data": {"a": 1}},
        {"type": "image", "data": "aW1n", "mime_type": "image/png"},
        {"type": "audio", "data": "c25k", "mime_type": "audio/wav"},
        {"type": "resource", "uri": "file:///x", "mime_type": "text/plain", "text": None, "blob": "eHl6",
         "name": "x"},
    ]}


def test_structured_is_first_json_part() -> None:
    result = ToolResult(parts=(TextPart("a"), JsonPart([1]), JsonPart([2])))
    assert result.structured == [1]


def test_parts_of_flattens() -> None:
    assert parts_of(["a", None, {"b": 1}]) == (TextPart("a"), JsonPart({"b": 1}))


def test_tool_formatter_applies_before_conversion() -> None:
    @tool(formatter=lambda v: f"{v} degrees")
    def temp() -> int:
        """Temperature."""
        return 21

    assert temp.to_result(temp()).text == "21 degrees"


# -- the call and outcome records around a result (calls.py, outcome.py) -------------------------

def test_tool_call_arguments() -> None:
    from toolrig import ToolCall

    call = ToolCall(name="add", arguments='{"a": 1, "b": [2.5]}')
    assert call.parsed_arguments() == {"a": 1, "b": [2.5]}
    assert call.id.startswith("call_") and call.id != ToolCall(name="add").id
    assert ToolCall(name="add", arguments="  ").parsed_arguments() == {}
    assert ToolCall(name="add", arguments={"a": 1}).parsed_arguments() == {"a": 1}
    copy = call.with_arguments({"a": 2})
    assert copy.id == call.id and copy.parsed_arguments() == {"a": 2}
    assert json.loads(json.dumps(call.to_dict())) == {"id": call.id, "name": "add", "arguments": '{"a": 1, "b": [2.5]}'}


@pytest.mark.parametrize(("raw", "words"), [
    ("[1, 2]", "arguments must be a JSON object, got list"),
    ("{bad", "Expecting property name"),
    ('{"x": NaN}', "NaN is not valid JSON"),
    ('{"x": -Infinity}', "-Infinity is not valid JSON"),
    ('{"x": 1e400}', "1e400 is too large for a JSON number"),
    ('{"x": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
])
def test_tool_call_strict_parse(raw: str, words: str) -> None:
    # Before the fix NaN, Infinity and 1e400 were accepted, and deep nesting raised RecursionError.
    from toolrig import ToolCall

    with pytest.raises(ValueError, match=words):
        ToolCall(name="t", arguments=raw).parsed_arguments()


def test_outcomes() -> None:
    from toolrig import ErrorKind, ToolError, ToolOutcome

    ok = ToolOutcome.success("c1", "add", to_result({"sum": 3}), attempts=1)
    assert ok.ok and ok.content == '{"sum": 3}' and ok.structured == {"sum": 3}
    assert ToolOutcome.success("c2", "add", ToolResult.error("no")).ok is False
    error = ToolError.of("timeout", "took too long", seconds=5)
    assert error.kind is ErrorKind.TIMEOUT and error.retryable is True
    assert ToolError.of(ErrorKind.DENIED, "no").retryable is False
    failed = ToolOutcome.failure("c3", "add", error)
    assert failed.content == "Error (timeout): took too long" and failed.structured is None
    data = json.loads(json.dumps(failed.to_dict()))
    assert data["error"] == {"kind": "timeout", "message": "took too long", "retryable": True,
                             "details": {"seconds": 5}}
    assert failed.derive(attempts=2).attempts == 2 and failed.attempts == 0
