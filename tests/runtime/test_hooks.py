from typing import Any

import anyio
import pytest

from toolrig import BaseTool, CallContext, ToolCall, ToolOutcome, ToolSpec, current_context, tool
from toolrig._outcome import ErrorKind
from toolrig.runtime import Decision, Runtime, fold_decisions
from toolrig.runtime.stages._approval import ApprovalStage
from toolrig.runtime.stages._hooks import HooksStage
from toolrig.runtime.stages._repair import RepairStage
from toolrig.runtime.stages._resolve import ResolveStage
from toolrig.runtime.stages._validate import ValidateStage

CALLS: list[dict[str, Any]] = []


@tool(permission="readonly")
def greet(name: str, times: int = 1) -> str:
    """Greet someone.

    Args:
        name: who.
        times: how often.
    """
    CALLS.append({"name": name, "times": times})
    return " ".join([f"hi {name}"] * times)


@tool(permission="readonly")
def shout(name: str) -> str:
    """Shout a name."""
    return name.upper()


def stages() -> list[Any]:
    return [ResolveStage(), RepairStage(), ValidateStage(), HooksStage(), ApprovalStage()]


def call(rt: Runtime, tool_name: str = "greet", **args: Any) -> ToolOutcome:
    return anyio.run(rt.call, ToolCall(name=tool_name, arguments=args))


class Fixed:
    def __init__(self, decision: Decision | None, name: str) -> None:
        self.decision, self.name = decision, name

    def before_call(self, call: ToolCall, ctx: CallContext) -> Decision | None:
        return self.decision


def test_fold_deny_beats_ask_beats_allow() -> None:
    allow, ask, deny = Decision.allow("a"), Decision.ask("b"), Decision.deny("c")
    assert fold_decisions([allow, ask, deny]) is deny
    assert fold_decisions([deny, ask, allow]) is deny
    assert fold_decisions([allow, ask]) is ask
    assert fold_decisions([None, allow]) is allow
    assert fold_decisions([None]) is None


@pytest.mark.parametrize("order", [0, 1, 2])
def test_deny_wins_whatever_the_hook_order(order: int) -> None:
    hooks = [Fixed(Decision.allow(), "a"), Fixed(Decision.ask("check"), "b"), Fixed(Decision.deny("no way"), "c")]
    hooks = hooks[order:] + hooks[:order]
    rt = Runtime([greet], stages=stages(), hooks=hooks, audit=False, approval=lambda *a: True)
    CALLS.clear()
    out = call(rt, name="bob")
    assert out.error is not None and out.error.kind == "denied"
    assert "no way" in out.error.message
    assert out.meta["decision"] == {"verdict": "deny", "reason": "no way", "source": "c"}
    assert CALLS == []


def test_ask_goes_to_approval() -> None:
    hooks = [Fixed(Decision.ask("sensitive"), "p")]
    asked: list[str] = []

    async def approve(c: ToolCall, ctx: CallContext, reason: str) -> bool:
        asked.append(reason)
        return c.arguments["name"] == "ok"

    rt = Runtime([greet], stages=stages(), hooks=hooks, audit=False, approval=approve)
    assert call(rt, name="ok").ok
    denied = call(rt, name="other")
    assert denied.error is not None and denied.error.kind == "approval_denied"
    assert asked == ["sensitive", "sensitive"]
    no_approver = Runtime([greet], stages=stages(), hooks=hooks, audit=False)
    out = call(no_approver, name="ok")
    assert out.error is not None and out.error.kind == "approval_required"


def test_hook_rewrites_arguments_and_they_are_revalidated() -> None:
    class Rewrite:
        def before_call(self, c: ToolCall, ctx: CallContext) -> ToolCall:
            return c.with_arguments({**c.arguments, "times": "2"})

    rt = Runtime([greet], stages=stages(), hooks=[Rewrite()], audit=False)
    out = call(rt, name="ann")
    assert out.ok and out.content == "hi ann hi ann"
    assert "arguments rewritten by a hook" in out.repairs

    class Break:
        def before_call(self, c: ToolCall, ctx: CallContext) -> ToolCall:
            return c.with_arguments({"times": "many"})

    bad = call(Runtime([greet], stages=stages(), hooks=[Break()], audit=False), name="x")
    assert bad.error is not None and bad.error.kind == "invalid_arguments"


def test_hook_can_redirect_to_another_tool() -> None:
    class Redirect:
        async def before_call(self, c: ToolCall, ctx: CallContext) -> ToolCall:
            return ToolCall(id=c.id, name="shout", arguments={"name": c.arguments["name"]})

    rt = Runtime([greet, shout], stages=stages(), hooks=[Redirect()], audit=False)
    assert call(rt, name="zed").content == "ZED"


def test_after_call_and_on_error_can_replace_outcome() -> None:
    seen: list[str] = []

    class Observe:
        def after_call(self, c: ToolCall, outcome: ToolOutcome, ctx: CallContext) -> ToolOutcome:
            seen.append(f"after:{outcome.ok}")
            return outcome.derive(content=outcome.content + "!")

        def on_error(self, c: ToolCall, error: Any, ctx: CallContext) -> None:
            seen.append(f"error:{error.kind}")

    rt = Runtime([greet], stages=stages(), hooks=[Observe()], audit=False)
    assert call(rt, name="q").content == "hi q!"

    @tool(permission="readonly")
    def fails() -> str:
        """Always fails."""
        raise RuntimeError("nope")

    rt2 = Runtime([fails], stages=stages(), hooks=[Observe()], audit=False)
    out = call(rt2, "fails")
    assert not out.ok
    assert seen == ["after:True", "after:False", "error:execution_error"]


def test_raising_before_hook_fails_closed() -> None:
    class Broken:
        def before_call(self, c: ToolCall, ctx: CallContext) -> None:
            raise RuntimeError("bug")

    out = call(Runtime([greet], stages=stages(), hooks=[Broken()], audit=False), name="x")
    assert out.error is not None and out.error.kind == "denied"


def test_hooks_see_the_call_context() -> None:
    users: list[str | None] = []

    class Who:
        def before_call(self, c: ToolCall, ctx: CallContext) -> None:
            users.append(ctx.user)

    rt = Runtime([greet], stages=stages(), hooks=[Who()], audit=False)
    anyio.run(rt.call, ToolCall(name="greet", arguments={"name": "a"}), CallContext(user="alice"))
    assert users == ["alice"]


def test_destructive_tools_need_approval_by_default() -> None:
    @tool(permission="destructive")
    def wipe(path: str) -> str:
        """Delete a path."""
        return "gone"

    out = call(Runtime([wipe], stages=stages(), audit=False), "wipe", path="/x")
    assert out.error is not None and out.error.kind == "approval_required"
    ok = call(Runtime([wipe], stages=stages(), audit=False, approval=lambda *a: True), "wipe", path="/x")
    assert ok.ok and ok.meta["approval"]["approved"] is True
    opt_out = [ResolveStage(), ValidateStage(), ApprovalStage(permissions=())]
    assert call(Runtime([wipe], stages=opt_out, audit=False), "wipe", path="/x").ok


class Sensitive(BaseTool):
    """A tool that asks for approval of some of its own calls (as a shell or file tool does)."""

    def __init__(self) -> None:
        self.spec = ToolSpec(name="touch", description="Touch a file.", permission="write",
                             input_schema={"type": "object", "properties": {"path": {"type": "string"}}})
        self.seen: list[tuple[str, bool]] = []

    def validate(self, arguments: Any) -> dict[str, Any]:
        return dict(arguments)

    async def invoke(self, values: Any, ctx: CallContext | None = None) -> str:
        approved = current_context().approved if ctx is None else ctx.approved
        self.seen.append((values["path"], approved))
        return "done"

    def review(self, values: Any, ctx: CallContext) -> Decision | None:
        if values["path"].startswith(".git/"):
            return Decision.ask(f"{values['path']} is protected")
        if values["path"] == "boom":
            raise RuntimeError("review bug")
        return None


@pytest.mark.anyio
async def test_a_tool_reviews_its_own_calls_and_its_body_knows_when_a_human_approved() -> None:
    tool_ = Sensitive()
    answers: list[str] = []

    def approver(call: ToolCall, ctx: CallContext, reason: str) -> bool:
        answers.append(reason)
        return True

    async with Runtime([tool_], audit=False, approval=approver) as rt:
        plain = await rt.call(ToolCall(name="touch", arguments={"path": "notes.txt"}))
        asked = await rt.call(ToolCall(name="touch", arguments={"path": ".git/hooks/pre-commit"}))
        broken = await rt.call(ToolCall(name="touch", arguments={"path": "boom"}))
    async with Runtime([tool_], audit=False) as headless:
        refused = await headless.call(ToolCall(name="touch", arguments={"path": ".git/config"}))
    assert plain.ok and asked.ok
    assert tool_.seen == [("notes.txt", False), (".git/hooks/pre-commit", True)]
    assert answers == [".git/hooks/pre-commit is protected"]
    assert broken.error is not None and broken.error.kind is ErrorKind.DENIED
    assert refused.error is not None and refused.error.kind is ErrorKind.APPROVAL_REQUIRED
