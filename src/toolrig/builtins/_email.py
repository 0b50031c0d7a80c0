"""``send_email``: one plain-text e-mail to allowed recipients through an SMTP server; destructive, so it asks.

What is refused, before anyone is asked to approve (the tool's review) and again before sending:

- a recipient that is not one bare address (``a@b.example``: no display name, no comma or semicolon list, no
  angle brackets, no spaces, no control characters) or not on the allow-list (exact addresses, or whole
  domains written ``@example.org``); an empty allow-list allows nobody;
- a subject with any CR, LF or other control character (header injection such as ``\\r\\nBcc: ...``);
- more than ``max_recipients`` recipients, an over-long subject or body.

The envelope recipients are exactly the checked ``to`` list (never read back from headers), the message is
built with the standard library's strict SMTP policy, and the sender is fixed by configuration.
"""

from __future__ import annotations

import os
import re
import smtplib
import ssl
from collections.abc import Iterable, Mapping
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import formatdate, make_msgid
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit

import anyio

from toolrig import BaseTool, CallContext, Decision, Tool, ToolAnnotations, ToolFailure, TransientError
from toolrig.errors import ConfigError

__all__ = ["SendEmail", "email_tool"]

_ADDRESS = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                      r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]")


def _address(value: str) -> str:
    """``value`` lower-cased (as the allow-list compares it); ValueError naming the problem."""
    if not isinstance(value, str) or _CONTROL.search(value):
        raise ValueError("contains a line break or another control character")
    if not _ADDRESS.match(value) or ".." in value:
        raise ValueError("is not one bare address such as 'name@example.org' (no names, lists or brackets)")
    return value.lower()


def _allowed(entry: str) -> str:
    """An allow-list entry: an address, or a domain as ``@example.org``."""
    try:
        return "@" + _address("x" + entry).rpartition("@")[2] if entry.startswith("@") else _address(entry)
    except ValueError as exc:
        raise ConfigError(f"email allowed_recipients entry {entry!r} {exc}") from None


class SendEmail(Tool):
    """Send a plain-text e-mail to one or more allowed recipients (the person approves each message).

    Args:
        to: the recipients' addresses, e.g. ["team@example.org"]; each must be on the allow-list.
        subject: one line, no line breaks.
        body: the plain-text message.
    """

    name = "send_email"
    permission = "destructive"  # a sent message cannot be taken back
    idempotent = False
    annotations = ToolAnnotations(title="Send an e-mail", read_only_hint=False, destructive_hint=True,
                                  idempotent_hint=False, open_world_hint=True)
    timeout = 120.0
    tags = frozenset({"email", "collaboration", "builtin"})
    metadata: ClassVar[dict[str, Any]] = {"breaker": False}

    def __init__(self, smtp_url: str, sender: str, allowed: Iterable[str], *, password_env: str | None,
                 smtp_timeout: float, max_recipients: int, max_subject: int, max_body: int) -> None:
        parts = urlsplit(smtp_url)
        if parts.scheme not in ("smtp", "smtps", "smtp+starttls") or not parts.hostname:
            raise ConfigError(f"smtp_url must be smtp://host:port, smtp+starttls://host:port or smtps://host:port, "
                              f"not {smtp_url.rsplit('@', maxsplit=1)[-1]!r}")
        self.scheme, self.host = parts.scheme, parts.hostname
        self.port = parts.port or {"smtps": 465, "smtp+starttls": 587}.get(parts.scheme, 25)
        self.username = unquote(parts.username) if parts.username else None
        self.password = unquote(parts.password) if parts.password else None
        if password_env:
            self.password = os.environ.get(password_env) or self.password
        try:
            self.sender = _address(sender)
        except ValueError as exc:
            raise ConfigError(f"email sender {sender!r} {exc}") from None
        self.allowed = frozenset(_allowed(a) for a in allowed)
        self.smtp_timeout, self.max_recipients = smtp_timeout, max_recipients
        self.max_subject, self.max_body = max_subject, max_body

    def problems(self, to: Any, subject: Any, body: Any) -> list[str]:
        """Why this message may not be sent (empty: it may)."""
        if isinstance(to, str):
            to = [to]
        if not isinstance(to, list) or not to:
            return ["give at least one recipient"]
        found = []
        if len(to) > self.max_recipients:
            found.append(f"at most {self.max_recipients} recipients")
        for item in to[: self.max_recipients + 1]:
            try:
                address = _address(item)
            except ValueError as exc:
                found.append(f"recipient {str(item)[:100]!r} {exc}")
                continue
            if address not in self.allowed and "@" + address.rpartition("@")[2] not in self.allowed:
                found.append(f"recipient {address!r} is not on the allow-list of this tool")
        if not isinstance(subject, str) or _CONTROL.search(subject):
            found.append("the subject must be one line: no line breaks or control characters (header injection)")
        elif len(subject) > self.max_subject:
            found.append(f"the subject is longer than {self.max_subject} characters")
        if not isinstance(body, str) or len(body) > self.max_body:
            found.append(f"the body must be text of at most {self.max_body:,} characters")
        return found

    def review(self, values: Mapping[str, Any], ctx: CallContext) -> Decision | None:
        """Refuse, before anyone is asked to approve, a message that would be refused anyway."""
        found = self.problems(values.get("to"), values.get("subject"), values.get("body"))
        return Decision.deny("; ".join(found), source="send_email (recipients and headers)") if found else None

    def _send(self, message: EmailMessage, recipients: list[str]) -> dict[str, Any]:
        context = ssl.create_default_context()
        smtp: smtplib.SMTP
        if self.scheme == "smtps":
            smtp = smtplib.SMTP_SSL(self.host, self.port, timeout=self.smtp_timeout, context=context)
        else:
            smtp = smtplib.SMTP(self.host, self.port, timeout=self.smtp_timeout)
        with smtp:
            if self.scheme == "smtp+starttls":
                smtp.starttls(context=context)
            if self.username is not None:
                smtp.login(self.username, self.password or "")
            refused = smtp.send_message(message, from_addr=self.sender, to_addrs=recipients)
        return {"sent": True, "to": [r for r in recipients if r not in refused], "message_id": message["Message-ID"],
                "refused_by_server": sorted(refused)}

    async def run(self, to: list[str], subject: str, body: str) -> dict[str, Any]:
        found = self.problems(to, subject, body)
        if found:
            raise ToolFailure("not sent: " + "; ".join(found))
        recipients = list(dict.fromkeys(_address(t) for t in ([to] if isinstance(to, str) else to)))
        message = EmailMessage(policy=SMTP)
        message["From"], message["To"], message["Subject"] = self.sender, ", ".join(recipients), subject
        message["Date"] = formatdate(localtime=False)
        message["Message-ID"] = make_msgid(domain=self.sender.rpartition("@")[2])
        message.set_content(body)
        try:
            return await anyio.to_thread.run_sync(self._send, message, recipients)
        except smtplib.SMTPRecipientsRefused as exc:
            raise ToolFailure(f"the SMTP server refused every recipient: {sorted(exc.recipients)}") from None
        except smtplib.SMTPAuthenticationError:
            raise ToolFailure("the SMTP server refused the login (check the account and password)") from None
        except (smtplib.SMTPServerDisconnected, smtplib.SMTPConnectError, OSError) as exc:
            raise TransientError(f"cannot reach the SMTP server {self.host}:{self.port}: {exc}") from None
        except smtplib.SMTPException as exc:
            raise ToolFailure(f"the SMTP server did not accept the message: {exc}") from None


def email_tool(smtp_url: str, sender: str, allowed_recipients: Iterable[str] = (), *,
               password_env: str | None = None, timeout: float = 30.0, max_recipients: int = 10,
               max_subject: int = 200, max_body: int = 100_000) -> BaseTool:
    """The ``send_email(to, subject, body)`` tool: destructive (asks), recipients on an allow-list, no injection.

    Args:
        smtp_url: ``smtp://host:25`` (plain), ``smtp+starttls://user@host:587`` or ``smtps://user@host:465``.
        sender: the From address (fixed: the model cannot change it).
        allowed_recipients: addresses, or whole domains as ``@example.org``; empty: nobody can be sent to.
        password_env: the environment variable holding the SMTP password (kept out of the configuration).
        timeout: seconds for the SMTP conversation.
        max_recipients: the most recipients of one message.
        max_subject: the longest subject.
        max_body: the longest body, in characters.

    Raises:
        ConfigError: a bad URL, sender or allow-list entry.
    """
    return SendEmail(smtp_url, sender, allowed_recipients, password_env=password_env, smtp_timeout=timeout,
                     max_recipients=max_recipients, max_subject=max_subject, max_body=max_body)
