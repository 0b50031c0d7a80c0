from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrig.redact import DEFAULT_REDACTOR, Redactor, Rule, redact_text, redact_value

GHP = "ghp_" + "A1b2C3d4" * 5
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
       "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
PEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----"

SECRETS = [
    ("openai key sk-proj-" + "x1Y2z3" * 6, "sk-proj-", "api_key"),
    ("anthropic sk-ant-api03-" + "Q" * 40, "sk-ant-api03-", "api_key"),
    (f"token {GHP} here", GHP, "github_token"),
    ("github_pat_" + "a" * 22 + "_" + "b" * 59, "github_pat_", "github_token"),
    ("slack xoxb-123456789012-abcdefABCDEF", "xoxb-", "slack_token"),
    ("slack xoxp-1234567890-abc", "xoxp-", "slack_token"),
    ("aws AKIAIOSFODNN7EXAMPLE in config", "AKIAIOSFODNN7EXAMPLE", "aws_access_key"),
    (f"jwt {JWT}", JWT, "jwt"),
    ("Authorization: Bearer abcDEF123456.ghiJKL789_-xyz", "abcDEF123456", "bearer_token"),
    (f"key:\n{PEM}\nafter", "b3BlbnNzaC1rZXkt", "private_key"),
    ("postgres://admin:hunter2@db.internal:5432/app", "hunter2", "url_password"),
    ("https://user:p%40ss@example.com/x", "p%40ss", "url_password"),
    ('{"password": "correct horse"}', "correct", "credential"),
    ("api_key=abcdef123456&x=1", "abcdef123456", "credential"),
    ("X-Api-Key: 0123456789abcdef", "0123456789abcdef", "credential"),
    ("stripe sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc", "stripe_key"),
    ("google AIza" + "SyA1234567890abcdefghijklmnopqrstuv", "SyA1234567890", "google_api_key"),
]


@pytest.mark.parametrize(("text", "secret", "rule"), SECRETS)
def test_default_rules_redact_each_kind_of_secret(text: str, secret: str, rule: str) -> None:
    out = redact_text(text)
    assert secret not in out
    assert f"[REDACTED:{rule}]" in out


def test_context_around_a_secret_is_kept() -> None:
    out = redact_text("Authorization: Bearer abcDEF123456.ghiJKL789 sent")
    assert out == "Authorization: Bearer [REDACTED:bearer_token] sent"
    assert redact_text("postgres://admin:hunter2@db/app") == "postgres://admin:[REDACTED:url_password]@db/app"


def test_unterminated_private_key_block_is_redacted_to_the_end() -> None:
    out = redact_text("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7")
    assert out == "[REDACTED:private_key]"


@pytest.mark.parametrize("text", [
    "The weather in Paris is sunny, 21 degrees.",
    "next_page_token=abcdef12345",
    "skills: python, sk-learn",
    "see https://example.com/path?q=1 and user@example.com",
    "tokens: 1200, max_tokens: 4096",
    "task-1234567890abcdefghijkl",
])
def test_ordinary_text_is_unchanged_and_the_same_object(text: str) -> None:
    assert DEFAULT_REDACTOR.text(text) is text


def test_values_under_sensitive_keys_are_replaced_whole_and_shape_is_kept() -> None:
    data = {"user": "ann", "password": "pw", "API-Key": 1234, "client_secret": None,
            "credentials": {"id": "x", "parts": ["a", "b"]}, "token_count": 5, "next_page_token": "abc",
            "nested": [{"authorization": "Basic Zm9vOmJhcg=="}], "is_secret": True}
    out = redact_value(data)
    assert out == {"user": "ann", "password": "[REDACTED]", "API-Key": "[REDACTED]", "client_secret": None,
                   "credentials": {"id": "[REDACTED]", "parts": ["[REDACTED]", "[REDACTED]"]},
                   "token_count": 5, "next_page_token": "abc",
                   "nested": [{"authorization": "[REDACTED]"}], "is_secret": True}
    assert data["password"] == "pw"  # the input is never modified


def test_clean_values_come_back_as_the_same_objects() -> None:
    data = {"city": "Paris", "days": [1, 2, {"t": 3.5}], "ok": True, "none": None}
    assert redact_value(data) is data
    secret = {"a": {"b": ["fine", "ghp_" + "x" * 36]}, "c": {"d": 1}}
    out = redact_value(secret)
    assert out["a"]["b"] == ["fine", "[REDACTED:github_token]"]
    assert out["c"] is secret["c"]


def test_tuples_stay_tuples_and_depth_is_bounded() -> None:
    assert redact_value(("x", "sk-" + "a" * 30)) == ("x", "[REDACTED:api_key]")
    deep: object = "sk-" + "a" * 30
    for _ in range(200):
        deep = [deep]
    redact_value(deep)  # no RecursionError on hostile nesting


def test_custom_patterns_rules_and_callables() -> None:
    r = Redactor.create([r"ACME-\d{6}", Rule.of("ticket", re.compile(r"TCK(?P<secret>\d+)")),
                         lambda s: s.replace("classified", "[CENSORED]")])
    out = r.text("ACME-123456 TCK42 classified sk-" + "a" * 30)
    assert out == "[REDACTED:custom] TCK[REDACTED:ticket] [CENSORED] [REDACTED:api_key]"
    only = Redactor.create([r"foo"], defaults=False, sensitive_keys=None)
    assert only.text("foo sk-" + "a" * 30) == "[REDACTED:custom] sk-" + "a" * 30
    assert only.value({"password": "x"}) == {"password": "x"}
    with pytest.raises(TypeError):
        Redactor.create([42])  # type: ignore[list-item]


def test_custom_sensitive_keys_pattern() -> None:
    r = Redactor.create(sensitive_keys=r"(?i)^ssn$")
    assert r.value({"ssn": "123-45-6789", "password": "kept"}) == {"ssn": "[REDACTED]", "password": "kept"}


@given(st.text())
def test_redaction_is_idempotent_and_never_raises(text: str) -> None:
    once = redact_text(text)
    assert redact_text(once) == once


@given(st.text(alphabet=st.characters(codec="ascii"), max_size=40))
def test_a_key_embedded_in_any_text_is_always_removed(noise: str) -> None:
    out = redact_text(f"{noise} {GHP} {noise}")
    assert GHP not in out


def test_may_redact_is_false_only_when_nothing_could_change() -> None:
    """The one-search gate of the output fast path: every rule's and every sensitive key's hint is in it."""
    from toolrig.redact import _KEY_HINTS, SENSITIVE_KEYS

    for key in ("password", "passwd", "db_password", "api_key", "apikey", "client-secret", "x_auth_token", "pwd",
                "Authorization", "cookie", "credentials", "refresh_token", "private_key"):
        assert SENSITIVE_KEYS.match(key)
        assert any(h in key.lower() for h in _KEY_HINTS), key
        assert DEFAULT_REDACTOR.may_redact(f'{{"{key}": 1}}')
    assert not DEFAULT_REDACTOR.may_redact('{"passengers": 2, "flights": [{"price": 129.0}]}')
    assert DEFAULT_REDACTOR.may_redact("call me with sk-" + "a" * 30)
    assert Redactor.create([r"\d{4,}"]).may_redact("plain")  # a rule without hints: always look closer


@pytest.mark.parametrize(("text", "secret", "rule"), [
    ("GITLAB_TOKEN is glpat-" + "a1B2c3D4e5F6g7H8i9J0", "a1B2c3D4e5F6g7H8i9J0", "service_token"),
    ("//registry.npmjs.org/:_authToken npm_" + "a1B2c3D4e5" * 4, "a1B2c3D4e5a1B2", "service_token"),
    ("hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6", "a1B2c3D4e5F6g7H8", "service_token"),
    ("pypi-AgEIcHlwaS5vcmc" + "Q" * 60, "QQQQQQQQQQ", "service_token"),
    ("SG." + "a" * 22 + "." + "b" * 43, "bbbbbbbbbbbb", "service_token"),
    ("https://hooks.slack.com/services/T0000/B0000/" + "X" * 24, "XXXXXXXXXX", "service_token"),
    ("Cookie: session=abcdef1234567890abcdef; theme=dark", "abcdef1234567890", "cookie"),
    ("set-cookie: sid=abcdef1234567890abcdef; HttpOnly", "abcdef1234567890", "cookie"),
    ("DefaultEndpointsProtocol=https;AccountName=x;AccountKey=YWJjZGVmZ2hpams=;", "YWJjZGVmZ2hpams",
     "connection_string"),
])
def test_round_7_token_formats_are_redacted(text: str, secret: str, rule: str) -> None:
    """Each passed through before: the well-known prefixed tokens of other services, cookie headers, connection
    strings' keys."""
    out = redact_text(text)
    assert secret not in out and f"[REDACTED:{rule}]" in out, out


@pytest.mark.parametrize("text", ["the hf_hub_download function", "npm_config_cache=/tmp/x", "a cookie jar",
                                  "SG. Something", "dapi is a word", "cookies: none"])
def test_round_7_look_alikes_are_kept(text: str) -> None:
    assert redact_text(text) == text
