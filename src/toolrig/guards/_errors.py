"""The guards' exceptions: a refusal always carries a stable reason code a tool or a policy can act on.

::

    ToolrigError
    └── ToolFailure                   (model-visible: a tool may let these propagate)
        └── GuardError                 .reason: a stable code, .subject: what was refused
            ├── PathError              an ordinary file-system failure (not_found, exists, too_large, ...)
            │   └── PathDenied         a confinement refusal (escape, symlink_outside, hardlink, ...)
            │       └── PathProtected  a protected name inside the root: needs an approval (``.rule``)
            ├── URLDenied              the URL or one of its addresses is not allowed (SSRF guard)
            ├── FetchError             the fetch of an allowed URL failed (connect, timeout, protocol, ...)
            ├── CommandParseError      a shell command the parser does not fully understand
            └── ArgumentDenied         an operand for a structured command is unsafe (option-like, NUL)
"""

from __future__ import annotations

from typing import Any

from toolrig.errors import ToolFailure

__all__ = [
    "ArgumentDenied",
    "CommandParseError",
    "FetchError",
    "GuardError",
    "PathDenied",
    "PathError",
    "PathProtected",
    "URLDenied",
]


class GuardError(ToolFailure):
    """A guard refused something. ``reason`` is a short stable code, ``subject`` the refused input.

    The message is meant for the model: it names the reason and, when useful, what to do instead.
    """

    def __init__(self, reason: str, subject: str, message: str) -> None:
        super().__init__(f"{message} [{reason}]")
        self.reason = reason
        self.subject = subject
        self.message = message

    def details(self) -> dict[str, Any]:
        """A JSON-ready summary: ``{"error", "reason", "subject", "message"}``."""
        return {"error": type(self).__name__, "reason": self.reason, "subject": self.subject,
                "message": self.message}


class PathError(GuardError):
    """A file operation inside the root failed for an ordinary reason (``not_found``, ``exists``,
    ``is_a_directory``, ``not_a_directory``, ``too_large``, ``not_empty``, ``io``)."""


class PathDenied(PathError):
    """A path was refused because it would leave the root or reach something unsafe.

    Reasons: ``empty``, ``nul``, ``absolute``, ``backslash``, ``invalid_char``, ``lookalike``,
    ``too_long``, ``too_deep``, ``escape``, ``symlink``, ``symlink_outside``, ``symlink_loop``,
    ``mount``, ``hardlink``, ``special_file``, ``changed``, ``bad_pattern``.
    """


class PathProtected(PathDenied):
    """The path is inside the root but protected (``.git/hooks``, ``.env``, shell rc files, ...).

    Not a hard refusal: a tool asks for an approval and repeats the operation with
    ``allow_protected=True``. ``rule`` is the :class:`~toolrig.guards.ProtectedRule` that matched.
    """

    def __init__(self, subject: str, message: str, rule: Any) -> None:
        super().__init__("protected", subject, message)
        self.rule = rule


class URLDenied(GuardError):
    """A URL was refused before any connection (or a connection's peer was not the checked address).

    Reasons: ``syntax``, ``scheme``, ``userinfo``, ``port``, ``host``, ``blocked_name``,
    ``blocked_address``, ``resolve_failed``, ``no_address``, ``redirect_limit``, ``peer_mismatch``.
    ``category`` names the table entry that blocked an address (``loopback``, ``private``, ...).
    """

    def __init__(self, reason: str, subject: str, message: str, *, category: str | None = None) -> None:
        super().__init__(reason, subject, message)
        self.category = category

    def details(self) -> dict[str, Any]:
        return {**super().details(), "category": self.category}


class FetchError(GuardError):
    """An allowed URL could not be fetched: ``connect``, ``timeout``, ``protocol``, ``encoding``."""

    retryable = True


class CommandParseError(GuardError):
    """A shell command could not be parsed completely; policies treat it as "ask" (fail closed)."""


class ArgumentDenied(GuardError):
    """An operand for a structured command was refused (``option_like``, ``nul``, ``empty``, ``type``)."""
