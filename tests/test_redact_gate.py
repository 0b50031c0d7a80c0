"""The redactor's literal gate: the same answer as a plain ``in`` per hint, whichever way it searches."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import redact
from toolrig.redact import DEFAULT_RULES, Redactor, _literal_search

DEFAULT_HINTS = sorted({h.lower() for r in DEFAULT_RULES for h in r.hints} | set(redact._KEY_HINTS))
ODD = ["İ", "ı", "ß", "ẞ", "K", "k", "ſ", "Σ", "ς", "σ", "\u0307", "ﬁ", "\ud800", "\x00", "🔑", "Ⅻ"]
"""Characters whose lower case is longer, another script's, context-dependent or not a character at all."""

SETTINGS = settings(deadline=None, suppress_health_check=list(HealthCheck), max_examples=150)


def reference(hints: list[str], text: str) -> bool:
    return any(h in text.lower() for h in hints)


@st.composite
def hints_and_text(draw: st.DrawFn) -> tuple[list[str], str]:
    """Hints (the default ones or random ones) and a text made of their pieces, odd characters and noise,
    sometimes padded to just below, at or above the length where the gate changes its way."""
    if draw(st.booleans()):
        hints = DEFAULT_HINTS
    else:
        hints = draw(st.lists(st.text(st.sampled_from("abkKsſ_-:/ İσς"), min_size=1, max_size=5),
                              min_size=1, max_size=12, unique=True))
        hints = sorted({h.lower() for h in hints})
    pieces = st.one_of(
        st.sampled_from(hints),
        st.sampled_from(hints).flatmap(lambda h: st.integers(0, len(h)).map(lambda i: h[:i])),  # near misses
        st.sampled_from(hints).flatmap(lambda h: st.integers(0, len(h)).map(lambda i: h[i:])),
        st.sampled_from(hints).map(str.upper),
        st.sampled_from(ODD),
        st.text(max_size=8),
    )
    text = "".join(draw(st.lists(pieces, max_size=24)))
    pad = draw(st.sampled_from([0, 0, 0, -2, -1, 0, 1, 70_000]))
    if pad:
        filler = draw(st.sampled_from(["x", "İ", " ", "\"a\": 1, "]))
        target = redact._LONG + pad if pad < 70_000 else pad
        text = (filler * (target // len(filler) + 1))[: max(0, target - len(text))] + text
    return hints, text


@SETTINGS
@given(hints_and_text())
def test_the_gate_answers_like_in_per_hint(case: tuple[list[str], str]) -> None:
    hints, text = case
    assert _literal_search(hints)(text.lower()) is reference(hints, text)


@SETTINGS
@given(st.sampled_from(ODD), st.integers(-3, 3), st.sampled_from(DEFAULT_HINTS))
def test_lower_case_that_changes_the_length_at_the_switch(odd: str, shift: int, hint: str) -> None:
    # "İ".lower() is two characters: the lowered text can cross the length where the gate switches.
    for at_end in (True, False):
        body = odd * (redact._LONG // 2 + shift)
        text = body + hint if at_end else hint + body
        assert _literal_search(DEFAULT_HINTS)(text.lower()) is True
        assert _literal_search(DEFAULT_HINTS)(body.lower()) is reference(DEFAULT_HINTS, body)


def test_long_near_misses_and_edge_cases() -> None:
    gate = _literal_search(DEFAULT_HINTS)
    near = "toke passx secre ghp gh_ akib aiz xo sk_ :/ cooki credentia authorizatio bearr basi eyk pw "
    for size in (100, redact._LONG - 1, redact._LONG, 1 << 20):
        text = (near * (size // len(near) + 1))[:size]
        assert gate(text) is False
        assert gate(text[:-5] + "token") is True
        assert gate("key" + text) is True
    for text in ("x" * redact._LONG + "\ud800key", "\udcff" * 30 + "key", "\ud800" * (2 * redact._LONG)):
        assert gate(text) is reference(DEFAULT_HINTS, text)  # RE2 cannot encode a lone surrogate
        assert Redactor().text(text) == text
    assert Redactor().text("\ud800 password=hunter22 " * 300).count("hunter22") == 0
    assert _literal_search([])("anything") is False
    assert _literal_search(["", "x"])("") is True  # an empty hint occurs everywhere
    assert _literal_search(["ab"])("") is False


def test_a_redactor_with_many_custom_hints_still_gates() -> None:
    from toolrig.redact import Rule

    rules = tuple(Rule.of(f"r{i}", rf"zz{i:03d}\d+", f"zz{i:03d}") for i in range(300))
    red = Redactor(rules, (), None)
    assert red.text("plain text " * 500) == "plain text " * 500
    assert red.text("x zz123456 y") == "x [REDACTED:r123] y"
    assert not red.may_redact("plain")


# What a case-insensitive Python regex equates with an ASCII letter (found by trying every code point).
TWINS = {"s": ["s", "S", "ſ"], "i": ["i", "I", "İ", "ı"], "k": ["k", "K", "K"]}
SECRET_TEXTS = ["password=hunter2hunter", "Basic QWxhZGRpbjpvcGVu", "Bearer abcdefghijklmnopqrs",
                "token: abcdefgh", "client_secret=abcdefgh", "X-Api-Key: 0123456789abcdef", "passwd: s3cr3t!"]
SECRET_KEYS = ["password", "api_key", "secret", "access_token", "Authorization", "cookie", "credentials", "pwd",
               "client_secret", "session-token", "private_key"]


def twins(text: str) -> st.SearchStrategy[str]:
    letters = [st.sampled_from(TWINS[c.lower()]) if c.lower() in TWINS else st.just(c) for c in text]
    return st.tuples(*letters).map("".join)


@SETTINGS
@given(st.sampled_from(SECRET_TEXTS).flatmap(twins))
def test_case_insensitive_rules_are_not_hidden_by_long_s_or_dotted_i(text: str) -> None:
    from toolrig.redact import DEFAULT_REDACTOR

    if any(r.pattern.search(text) for r in DEFAULT_RULES):
        assert DEFAULT_REDACTOR.may_redact(text)
        assert DEFAULT_REDACTOR.text(text) != text


@SETTINGS
@given(st.sampled_from(SECRET_KEYS).flatmap(twins), st.booleans())
def test_sensitive_keys_are_seen_in_any_rendering(key: str, ascii_only: bool) -> None:
    import json

    from toolrig.audit._record import _arguments_of
    from toolrig.redact import DEFAULT_REDACTOR, SENSITIVE_KEYS

    if SENSITIVE_KEYS.match(key):
        rendering = json.dumps({key: "hunter2"}, ensure_ascii=ascii_only)
        assert DEFAULT_REDACTOR.may_redact(rendering)
        assert "hunter2" not in repr(_arguments_of(rendering, DEFAULT_REDACTOR))


def test_json_escapes_that_spell_a_hint_are_looked_at() -> None:
    from toolrig.audit._record import _arguments_of
    from toolrig.redact import DEFAULT_REDACTOR

    assert DEFAULT_REDACTOR.may_redact('{"\\u0070assword": "hunter2"}')
    assert "hunter2" not in repr(_arguments_of('{"\\u0070assword": "hunter2"}', DEFAULT_REDACTOR))
    assert DEFAULT_REDACTOR.may_redact('{"db": "postgres:\\/\\/admin:hunter2@db"}')
    assert not DEFAULT_REDACTOR.may_redact('{"note": "line\\nbreak", "path": "C:\\\\tmp"}')  # other escapes: no


def test_non_ascii_hints_fail_closed() -> None:
    from toolrig.redact import Rule

    fold = Rule.of("ru", r"(?i)пароль=\S+", "пароль", fold=True)
    assert fold.hints == ()  # always runs: regexes equate letters that lower case keeps apart
    sigma = Rule.of("greek", r"ΑΣ\d+", "ΑΣ")
    red = Redactor((sigma,), (), None)
    assert red.text("ΑΣ123") == "[REDACTED:greek]"  # "ΑΣ".lower() is "ας" but "ΑΣ1".lower() is "ασ1"
    assert Rule.of("x", "(?i)abc", "ABC", fold=True).hints == ("abc",)


def test_may_match_finds_what_the_regex_matches_whatever_lower_case_it_is_given() -> None:
    from toolrig.redact import Rule

    rule = Rule.of("pw", r"(?i)password=\S+", "password", fold=True)
    for text in ("paſſword=x", "PAſſWORD=x", "paſsword=hunter2"):
        assert rule.pattern.search(text)
        assert rule.may_match(text)
        assert rule.may_match(text, text.lower())  # str.lower keeps the long s: folded again inside
    key = Rule.of("key", r"(?i)key=\S+", "key", fold=True)
    assert key.pattern.search("KEY=x") and key.may_match("KEY=x", "KEY=x".lower())
    dotless = Rule.of("id", r"(?i)id=\S+", "id", fold=True)
    for text in ("ıd=7", "İd=7"):
        assert dotless.pattern.search(text), text
        assert dotless.may_match(text, text.lower()) and dotless.may_match(text)
    assert not rule.may_match("nothing here", "nothing here")
