"""The approval renderer leaves nothing invisible or terminal-controlling: prompt-injection escapes and the
big list of naughty strings, alone, embedded and at the end of a value."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import CallContext, ToolCall
from toolrig.policy import visible
from toolrig.policy.approvals import render_request

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "security"
HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})


def assert_harmless(text: str) -> None:
    for c in text:
        if c == "\n":
            continue
        code = ord(c)
        assert c == " " or unicodedata.category(c) not in HIDDEN, f"U+{code:04X} survived in {text[:80]!r}"
        assert not (0xFE00 <= code <= 0xFE0F or 0xE0000 <= code <= 0xE01EF), f"U+{code:04X} survived"
    assert "\x1b" not in text and "\x9b" not in text


def corpus(shared_dir: Path) -> list[str]:
    escapes = json.loads((DATA / "prompt_injection_tag_escapes.json").read_text(encoding="utf-8"))["entries"]
    naughty = json.loads((DATA / "naughty_strings_blns.json").read_text(encoding="utf-8"))
    values = [e["payload"] for e in escapes] + [s for s in naughty if isinstance(s, str)]
    assert len(values) > 500
    return values


def test_every_payload_is_made_visible(shared_dir: Path) -> None:
    for value in corpus(shared_dir):
        for variant in (value, f"before {value} after", f"tail: {value}"):
            shown = visible(variant)
            assert_harmless(shown)
            assert "\n" not in shown or "\n" not in variant  # newlines are written as \\n
            if variant.isascii() and variant.isprintable() and "\\" not in variant:
                assert shown == variant  # plain text is left alone


def test_the_full_approval_prompt_is_harmless(shared_dir: Path) -> None:
    for value in corpus(shared_dir):
        call = ToolCall(name="shell", arguments={"command": value, "nested": {"k": [value]}, value: 1})
        text = render_request(call, CallContext(user=value), reason=value)
        for line in text.split("\n"):
            assert_harmless(line)


@settings(deadline=None, max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_any_text_is_rendered_harmless(text: str) -> None:
    assert_harmless(visible(text))
