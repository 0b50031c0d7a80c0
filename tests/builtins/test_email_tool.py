"""send_email against a real local SMTP server (aiosmtpd): an allowed recipient is delivered after approval;
recipients outside the allow-list, header injections and smuggled address lists are refused before anyone is
asked, and nothing reaches the server."""

from __future__ import annotations

import socket
import sys
import uuid
from collections.abc import Iterator
from email import message_from_bytes
from email.policy import default
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from builtin_helpers import Approvals
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import ErrorKind, Permission, Runtime, ToolCall, ToolOutcome
from toolrig.builtins import email_tool, tools_from_config
from toolrig.errors import ConfigError


class Mailbox:
    def __init__(self) -> None:
        self.envelopes: list[tuple[str, list[str], bytes]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.original_content))
        return "250 Message accepted for delivery"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def smtp() -> Iterator[tuple[Mailbox, int]]:
    box = Mailbox()
    port = _free_port()
    controller = Controller(box, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield box, port
    finally:
        controller.stop()


ALLOWED = ["alice@example.org", "@team.example.org"]


def runtime(port: int, approval: Approvals) -> Runtime:
    tool = email_tool(f"smtp://127.0.0.1:{port}", "agent@example.org", ALLOWED, timeout=30)
    return Runtime([tool], audit=False, approval=approval)


def send(rt: Runtime, **arguments: Any) -> ToolOutcome:
    return rt.call_sync(ToolCall(id=uuid.uuid4().hex, name="send_email", arguments=arguments))


def test_spec_is_destructive() -> None:
    spec = email_tool("smtp://127.0.0.1:25", "a@example.org", ALLOWED).spec
    assert spec.permission is Permission.DESTRUCTIVE and not spec.idempotent


def test_an_allowed_recipient_is_delivered_after_approval(smtp: tuple[Mailbox, int]) -> None:
    box, port = smtp
    approvals = Approvals(True)
    body = "Hello Alice,\r\nBcc: mallory@evil.example\r\n\r\nthe body may say anything."
    outcome = send(runtime(port, approvals), to=["Alice@EXAMPLE.org", "bob@team.example.org"], subject="Status",
                   body=body)
    assert outcome.ok, outcome.to_dict()
    assert [a[0] for a in approvals.asked] == ["send_email"]
    assert len(box.envelopes) == 1
    sender, recipients, raw = box.envelopes[0]
    assert sender == "agent@example.org" and recipients == ["alice@example.org", "bob@team.example.org"]
    message = message_from_bytes(raw, policy=default)
    assert message["Subject"] == "Status" and message["Bcc"] is None
    assert "mallory@evil.example" in message.get_content()  # in the body, where it is only text


def test_a_declined_approval_sends_nothing(smtp: tuple[Mailbox, int]) -> None:
    box, port = smtp
    approvals = Approvals(False)
    outcome = send(runtime(port, approvals), to=["alice@example.org"], subject="Hi", body="b")
    assert outcome.error is not None and outcome.error.kind is ErrorKind.APPROVAL_DENIED
    assert len(approvals.asked) == 1 and box.envelopes == []


ATTACKS: list[dict[str, Any]] = [
    {"to": ["mallory@evil.example"]},
    {"to": ["alice@example.org", "mallory@evil.example"]},
    {"to": ["x@team.example.org.evil.example"]},
    {"to": ["x@evilteam.example.org"]},
    {"to": ["alice@example.org\r\nBcc: mallory@evil.example"]},
    {"to": ["alice@example.org\nBcc: mallory@evil.example"]},
    {"to": ["alice@example.org, mallory@evil.example"]},
    {"to": ["alice@example.org;mallory@evil.example"]},
    {"to": ["Alice <alice@example.org>"]},
    {"to": ["<mallory@evil.example>"]},
    {"to": ["alice@example.org mallory@evil.example"]},
    {"to": ["alice@example.org\u2028Bcc: mallory@evil.example"]},
    {"to": ['"alice@example.org"@evil.example']},
    {"to": ["alice@example.org\x00"]},
    {"to": []},
    {"to": ["alice@example.org"] * 11},
    {"subject": "Hi\r\nBcc: mallory@evil.example"},
    {"subject": "Hi\nBcc: mallory@evil.example"},
    {"subject": "Hi\rBcc: mallory@evil.example"},
    {"subject": "Hi\x85Bcc: mallory@evil.example"},
    {"subject": "x" * 201},
]


@pytest.mark.parametrize("attack", ATTACKS, ids=[repr(a)[:60] for a in ATTACKS])
def test_refused_before_asking_and_nothing_sent(smtp: tuple[Mailbox, int], attack: dict[str, Any]) -> None:
    box, port = smtp
    approvals = Approvals(True)
    arguments = {"to": ["alice@example.org"], "subject": "Hi", "body": "b", **attack}
    outcome = send(runtime(port, approvals), **arguments)
    assert not outcome.ok and outcome.error is not None
    assert outcome.error.kind in (ErrorKind.DENIED, ErrorKind.INVALID_ARGUMENTS), outcome.to_dict()
    assert approvals.asked == [] and box.envelopes == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(to=st.lists(st.one_of(st.text(max_size=40), st.sampled_from(["alice@example.org", "a@team.example.org"])),
                   max_size=3),
       subject=st.text(max_size=40))
def test_whatever_the_model_sends_only_allowed_recipients_get_mail(smtp: tuple[Mailbox, int], to: list[str],
                                                                   subject: str) -> None:
    box, port = smtp
    box.envelopes.clear()
    outcome = send(runtime(port, Approvals(True)), to=to, subject=subject, body="b")
    if outcome.ok:
        (_, recipients, raw), = box.envelopes
        assert all(r == "alice@example.org" or r.endswith("@team.example.org") for r in recipients)
        headers = raw.split(b"\r\n\r\n", 1)[0].decode("utf-8", "replace").lower()
        assert "\nbcc:" not in headers and "\ncc:" not in headers
    else:
        assert box.envelopes == []


def test_config_and_bad_settings(smtp: tuple[Mailbox, int]) -> None:
    _box, port = smtp
    tools = tools_from_config({"files": False, "calculator": False, "current_time": False,
                               "email": {"smtp_url": f"smtp://127.0.0.1:{port}", "sender": "agent@example.org",
                                         "allowed_recipients": ["alice@example.org"]}})
    assert [t.name for t in tools] == ["send_email"]
    for bad in ({"smtp_url": "http://x", "sender": "a@example.org"},
                {"smtp_url": "smtp://x", "sender": "Agent <a@example.org>"},
                {"smtp_url": "smtp://x", "sender": "a@example.org", "allowed_recipients": ["a@b.example, c@d.example"]},
                {"smtp_url": "smtp://x", "sender": "a@example.org", "allowed_recipients": ["@"]}):
        with pytest.raises(ConfigError):
            email_tool(**bad)


def test_an_unreachable_server_is_a_clean_error() -> None:
    rt = runtime(_free_port(), Approvals(True))
    outcome = send(rt, to=["alice@example.org"], subject="Hi", body="b")
    assert outcome.error is not None and "cannot reach the SMTP server" in outcome.error.message


@pytest.mark.anyio
async def test_served_by_toolrig_serve_it_asks_and_an_allow_rule_never_lifts_the_refusals(
        smtp: tuple[Mailbox, int], tmp_path: Path) -> None:
    import json

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
    from served import sdk_client, toolrig_serve

    box, port = smtp
    (tmp_path / "project").mkdir()
    email = (f'{{ smtp_url = "smtp://127.0.0.1:{port}", sender = "agent@example.org", '
             f'allowed_recipients = ["alice@example.org"] }}')
    base = (f'name = "mail"\n[builtins]\nroot = {json.dumps(str(tmp_path / "project"))}\nfiles = false\n'
            f'email = {email}\n[runtime]\naudit = false\n')
    asking = tmp_path / "asking.toml"
    asking.write_text(base + '[approvals]\nbackend = "deny"\n', encoding="utf-8")  # it asks; "no"
    with toolrig_serve(tmp_path, asking) as served:
        async with sdk_client(served.url) as client:
            result = await client.call_tool("send_email", {"to": ["alice@example.org"], "subject": "Hi", "body": "b"})
    assert result.is_error and "approv" in str(result.content).lower() and box.envelopes == []
    allowing = tmp_path / "allowing.toml"
    allowing.write_text(base + '[policy]\nallow = ["send_email"]\n', encoding="utf-8")
    with toolrig_serve(tmp_path, allowing) as served:
        async with sdk_client(served.url) as client:
            injected = await client.call_tool("send_email", {"to": ["alice@example.org"],
                                                             "subject": "Hi\r\nBcc: mallory@evil.example", "body": "b"})
            outside = await client.call_tool("send_email", {"to": ["mallory@evil.example"], "subject": "Hi",
                                                            "body": "b"})
            assert injected.is_error and outside.is_error and box.envelopes == []
            sent = await client.call_tool("send_email", {"to": ["alice@example.org"], "subject": "Hi", "body": "b"})
    assert not sent.is_error
    assert [(e[0], e[1]) for e in box.envelopes] == [("agent@example.org", ["alice@example.org"])]
