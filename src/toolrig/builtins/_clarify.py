"""``ask_user``: the agent asks the person a question (with optional choices) and waits for the answer.

Who is asked, in order: the ``ask`` callback given to :func:`clarify_tool` (a library's own UI); else the
:class:`UserAsker` the call's context carries (``toolrig serve`` puts the MCP client there, which asks through
MCP elicitation). A client that cannot elicit, or a call with nobody to ask, fails at once with a message that
says so (the model asks in its reply instead): never a hang. Waiting is bounded by ``timeout``.
"""

from __future__ import annotations

import inspect
import unicodedata
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

import anyio

from toolrig import BaseTool, ModelRetry, Tool, ToolAnnotations, ToolFailure, current_context

__all__ = ["AskCallback", "AskUser", "UserAsker", "clarify_tool", "find_asker"]

AskCallback = Callable[[str, Sequence[str] | None], Awaitable[str | None] | str | None]
"""``(question, choices) -> the answer``, or None when the person declined to answer."""


@runtime_checkable
class UserAsker(Protocol):
    """Something in a call's context that can ask its person (``toolrig.mcp.ClientPeer`` is one)."""

    async def ask_user(self, question: str, choices: Sequence[str] | None = None) -> str | None:
        """The person's answer (one of ``choices`` when given), or None when they declined.

        Raises:
            ToolFailure: nobody can be asked this way (e.g. the MCP client does not support elicitation).
        """
        ...


def find_asker(state: Any) -> UserAsker | None:
    """The :class:`UserAsker` among the values of a context's ``state``, if there is one."""
    return next((v for v in state.values() if isinstance(v, UserAsker)), None)


def _printable(text: str) -> str:
    """``text`` without control or invisible format characters (newlines and tabs kept)."""
    return "".join(c for c in text if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cf", "Co", "Cs"))


class AskUser(Tool):
    """Ask the person a question and wait for the answer, when you cannot go on without it.

    Ask one short, specific question. Give choices when the answer is one of a few options.

    Args:
        question: the question, e.g. "Deploy to staging or production?".
        choices: the allowed answers, e.g. ["staging", "production"]; leave out for a free answer.
    """

    name = "ask_user"
    permission = "readonly"
    timeout = 3600.0  # the wait for a person is bounded by the tool's own ``wait`` (below)
    idempotent = False
    annotations = ToolAnnotations(title="Ask the user", read_only_hint=True, destructive_hint=False,
                                  idempotent_hint=False, open_world_hint=False)
    tags = frozenset({"clarify", "builtin"})
    metadata: ClassVar[dict[str, Any]] = {"breaker": False}

    def __init__(self, ask: AskCallback | None, *, wait: float, max_chars: int, max_choices: int) -> None:
        self.ask, self.wait, self.max_chars, self.max_choices = ask, wait, max_chars, max_choices

    def _checked(self, question: str, choices: list[str] | None) -> tuple[str, list[str] | None]:
        question = _printable(question).strip()
        if not question:
            raise ModelRetry("give the question to ask")
        if len(question) > self.max_chars:
            raise ModelRetry(f"a question is at most {self.max_chars:,} characters; ask a shorter one")
        if choices is None:
            return question, None
        cleaned = list(dict.fromkeys(_printable(str(c)).strip()[:200] for c in choices if str(c).strip()))
        if not cleaned or len(cleaned) > self.max_choices:
            raise ModelRetry(f"give between 1 and {self.max_choices} choices, or none for a free answer")
        return question, cleaned

    async def _answer(self, question: str, choices: list[str] | None) -> str | None:
        if self.ask is not None:
            result = self.ask(question, choices)
            return await result if inspect.isawaitable(result) else result
        asker = find_asker(current_context().state)
        if asker is None:
            raise ToolFailure("there is no person to ask in this session (no callback and no MCP client that can "
                              "ask its user): ask your question in your reply instead")
        return await asker.ask_user(question, choices)

    async def run(self, question: str, choices: list[str] | None = None) -> dict[str, Any]:
        question, cleaned = self._checked(question, choices)
        try:
            with anyio.fail_after(self.wait):
                answer = await self._answer(question, cleaned)
        except TimeoutError:
            raise ToolFailure(f"the person did not answer within {self.wait:g} s") from None
        if answer is None:
            return {"answered": False, "note": "the person declined to answer; do not ask the same question again"}
        answer = _printable(str(answer))[: self.max_chars]
        if cleaned is not None and answer not in cleaned:
            raise ToolFailure(f"the answer {answer[:80]!r} is not one of the choices")
        return {"answered": True, "answer": answer}


def clarify_tool(ask: AskCallback | None = None, *, timeout: float = 600.0, max_chars: int = 2_000,
                 max_choices: int = 20) -> BaseTool:
    """The ``ask_user(question, choices=None)`` tool (readonly: it changes nothing, it waits for a person).

    Args:
        ask: ``(question, choices) -> answer or None`` (sync or async) for a library's own UI; None: the MCP
            client of a served call, through elicitation.
        timeout: seconds to wait for the answer.
        max_chars: the longest question (and answer).
        max_choices: the most choices.
    """
    return AskUser(ask, wait=timeout, max_chars=max_chars, max_choices=max_choices)
