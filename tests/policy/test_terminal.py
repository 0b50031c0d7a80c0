"""The terminal approver: shows the whole call with nothing hidden, only y / yes / a / always approve,
"always" remembers exactly this call, and without a terminal nobody is asked and the call is denied."""

from __future__ import annotations

import io

import pytest
from policy_tools import TOOLS
from rich.console import Console

from toolrig import CallContext, ErrorKind, Policy, Runtime, ToolCall
from toolrig.policy import TerminalApprover

pytestmark = pytest.mark.anyio


class Keyboard(io.StringIO):
    """Typed answers on a terminal."""

    def isatty(self) -> bool:
        return True


def approver(answer: str, policy: Policy | None = None, *, tty: bool = True) -> tuple[TerminalApprover, io.StringIO]:
    screen = io.StringIO()
    stdin = Keyboard(answer) if tty else io.StringIO(answer)
    return TerminalApprover(stdin=stdin, console=Console(file=screen, width=300), policy=policy, tools=TOOLS), screen


async def ask(handler: TerminalApprover, policy: Policy, command: str, user: str = "alice") -> ErrorKind | None:
    async with Runtime(TOOLS, policy=policy, approval=handler, audit=False) as rt:
        out = await rt.call(ToolCall(name="shell", arguments={"command": command}), CallContext(user=user))
    return out.error.kind if out.error else None


@pytest.mark.parametrize(("answer", "approved"), [
    ("y\n", True), ("YES\n", True), (" a \n", True), ("always\n", True), ("\n", False), ("", False),
    ("n\n", False), ("yep\n", False), ("y es\n", False), ("1\n", False), ("true\n", False),
])
async def test_only_an_explicit_yes_approves(answer: str, approved: bool) -> None:
    policy = Policy(allowed_tools=None)
    handler, _ = approver(answer)
    assert (await ask(handler, policy, "ls") is None) is approved


async def test_the_prompt_shows_everything_visibly() -> None:
    handler, screen = approver("n\n")
    await ask(handler, Policy(allowed_tools=None), "ls \u202e\x1b[2J\u200b")
    shown = screen.getvalue()
    assert "Tool call needs approval: shell@1.0.0" in shown and "Caller: user=alice" in shown
    assert '  command = "ls <U+202E>\\x1b[2J<U+200B>"' in shown
    assert "\x1b" not in shown and "\u202e" not in shown


async def test_always_remembers_exactly_this_call() -> None:
    policy = Policy(allowed_tools=None)
    handler, _ = approver("always\n", policy)
    assert await ask(handler, policy, "ls -la") is None
    [layer] = policy.remembered()
    assert layer.user == "alice" and layer.allow[0].version == "1.0.0"
    nobody, screen = approver("", policy)  # the same call again: not asked
    assert await ask(nobody, policy, "ls -la") is None and screen.getvalue() == ""
    assert await ask(nobody, policy, "ls -l") is ErrorKind.APPROVAL_DENIED
    assert await ask(nobody, policy, "ls -la", user="bob") is ErrorKind.APPROVAL_DENIED


async def test_without_a_terminal_nobody_is_asked() -> None:
    handler, screen = approver("y\n", tty=False)
    assert await ask(handler, Policy(allowed_tools=None), "ls") is ErrorKind.APPROVAL_DENIED
    assert screen.getvalue() == ""


async def test_the_terminal_shows_what_the_client_approver_shows_with_nothing_elided() -> None:
    """One rendering for both: every value on its own line, the path first whatever the model's order; the
    terminal has no size limit, so a long value is shown whole rather than elided."""
    from toolrig.mcp import ClientApprover

    screen = io.StringIO()
    handler = TerminalApprover(stdin=Keyboard("n\n"), console=Console(file=screen, width=5_000), tools=TOOLS)
    call = ToolCall(name="write_file", arguments={"text": "lorem " * 400, "path": ".git/hooks/pre-commit"})
    policy = Policy(allowed_tools=None, ask=["write_file"])
    async with Runtime(TOOLS, policy=policy, approval=handler, audit=False) as rt:
        out = await rt.call(call, CallContext(user="alice"))
    assert out.error is not None and out.error.kind is ErrorKind.APPROVAL_DENIED
    shown = screen.getvalue()
    lines = [line for line in shown.split("\n") if line.startswith("  ")]
    assert lines == ['  path = ".git/hooks/pre-commit"', '  text = "' + "lorem " * 400 + '"']
    elicited = ClientApprover().message(call, CallContext(user="alice"), "x")
    assert [line.split(" = ")[0] for line in elicited.split("\n") if line.startswith("  ")] == ["  path", "  text"]
