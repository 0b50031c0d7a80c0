"""An interactive approval prompt on a terminal: full arguments shown with nothing hidden; default no."""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TextIO

import anyio
from rich.console import Console

from toolrig._calls import ToolCall
from toolrig._context import CallContext
from toolrig.policy.approvals._binding import version_of
from toolrig.policy.approvals._render import render_request

if TYPE_CHECKING:
    from toolrig.policy._policy import Policy

__all__ = ["TerminalApprover"]

log = logging.getLogger("toolrig.approval")

YES = frozenset({"y", "yes"})
ALWAYS = frozenset({"a", "always"})


class TerminalApprover:
    """Asks the person at the terminal. Answers: ``y``/``yes`` approve, ``a``/``always`` approve and
    remember (in ``policy``, as a rule for exactly this tool, version and arguments); anything else,
    an empty line, end of input or no answer within ``timeout`` seconds deny. When ``stdin`` is not a
    terminal nobody can answer, so the call is denied without asking.

    Args:
        console: where the request is shown (default: a rich Console on stderr).
        stdin: where the answer is read (default: ``sys.stdin``).
        timeout: seconds to wait for an answer (None: wait as long as it takes).
        policy: a :class:`~toolrig.policy.Policy` to remember "always" answers in (without one, "always"
            approves this call only).
        tools: a Registry / Toolset to read the tool's version from (shown, and pinned by "always").
    """

    def __init__(self, *, console: Console | None = None, stdin: TextIO | None = None,
                 timeout: float | None = None, policy: Policy | None = None, tools: Any = None) -> None:
        self.console = console or Console(file=sys.stderr)
        self.stdin = stdin
        self.timeout = timeout
        self.policy = policy
        self.tools = tools

    async def __call__(self, call: ToolCall, context: CallContext, reason: str) -> bool:
        stdin = self.stdin if self.stdin is not None else sys.stdin
        try:
            if not stdin.isatty():
                log.warning("approval for %s needed but stdin is not a terminal: denied", call.name)
                return False
            version = version_of(self.tools, call.name)
            self.console.print(render_request(call, context, reason, version), markup=False, highlight=False,
                               emoji=False)
            self.console.print("Approve? [y]es / [N]o / [a]lways for exactly these arguments: ", end="",
                               markup=False, highlight=False, emoji=False)
            line = ""
            with anyio.move_on_after(self.timeout):
                line = await anyio.to_thread.run_sync(stdin.readline, abandon_on_cancel=True)
            answer = line.strip().lower()
        except Exception:
            log.exception("terminal approval failed for %s: denied", call.name)
            return False
        if answer in ALWAYS and self.policy is not None and isinstance(call.arguments, Mapping):
            self.policy.remember(call.name, version, call.arguments, context)
        return answer in YES or answer in ALWAYS
