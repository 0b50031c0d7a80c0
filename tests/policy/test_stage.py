"""The policy inside the Runtime: folded with hooks (deny wins), asks go to the approver, headless denies."""

from __future__ import annotations

from typing import Any

import pytest
from policy_tools import TOOLS

from toolrig import CallContext, Decision, ErrorKind, Policy, Runtime, ToolCall
from toolrig.policy import CallbackApprover, PolicyStage
from toolrig.runtime import minimal_stages

pytestmark = pytest.mark.anyio


class Hook:
    def __init__(self, decision: Decision | None) -> None:
        self.decision = decision

    def before_call(self, call: ToolCall, ctx: CallContext) -> Decision | None:
        return self.decision


async def run(policy: Policy, name: str, *, hooks: list[Any] = (), approval: Any = None,  # type: ignore[assignment]
              context: CallContext | None = None, **arguments: Any) -> Any:
    async with Runtime(TOOLS, policy=policy, hooks=hooks, approval=approval, audit=False) as rt:
        return await rt.call(ToolCall(name=name, arguments=arguments), context)


async def test_policy_stage_sits_before_approval() -> None:
    rt = Runtime(TOOLS, policy=Policy(allowed_tools=None), audit=False)
    names = [s.name for s in rt.stages]
    assert names.index("hooks") < names.index("policy") == names.index("approval") - 1
    assert isinstance(rt.stages[names.index("policy")], PolicyStage)
    await rt.aclose()
    with pytest.raises(ValueError, match="approval"):
        Runtime(TOOLS, policy=Policy(allowed_tools=None), stages=minimal_stages(), audit=False)


async def test_allow_runs_deny_refuses_ask_goes_to_the_approver() -> None:
    policy = Policy(allow=["delete_file"], deny=["write_file"], allowed_tools=None)
    out = await run(policy, "delete_file", path="p")  # destructive, but allowed by rule: no approval asked
    assert out.ok and out.meta["policy"]["rule"] == "delete_file"
    out = await run(policy, "write_file", path="p", text="t")
    assert out.error.kind is ErrorKind.DENIED and "write_file" in out.error.message
    assert out.meta["policy"]["decision"] == "deny"
    asked: list[str] = []

    def approve(call: ToolCall, ctx: CallContext, reason: str) -> bool:
        asked.append(reason)
        return True

    out = await run(policy, "shell", approval=CallbackApprover(approve), command="ls")
    assert out.ok and asked and "system tool" in asked[0]


async def test_headless_ask_is_deny() -> None:
    out = await run(Policy(allowed_tools=None), "shell", command="ls")
    assert not out.ok and out.error.kind is ErrorKind.APPROVAL_REQUIRED


@pytest.mark.parametrize(("hook", "policy_rules", "expected"), [
    (Decision.allow("hook ok"), {"deny": ["read_file"]}, "deny"),
    (Decision.deny("hook no"), {"allow": ["read_file"]}, "deny"),
    (Decision.ask("hook asks"), {"allow": ["read_file"]}, "ask"),
    (Decision.allow("hook ok"), {"ask": ["read_file"]}, "ask"),
    (Decision.allow("hook ok"), {"allow": ["read_file"]}, "allow"),
])
async def test_hook_and_policy_decisions_fold_deny_wins(hook: Decision, policy_rules: dict[str, list[str]],
                                                        expected: str) -> None:
    policy = Policy(allowed_tools=None, **policy_rules)  # type: ignore[arg-type]
    out = await run(policy, "read_file", hooks=[Hook(hook)], path="p")
    got = "allow" if out.ok else {ErrorKind.DENIED: "deny", ErrorKind.APPROVAL_REQUIRED: "ask"}[out.error.kind]
    assert got == expected


@pytest.mark.parametrize("answer", ["yes", 1, "true", None, object(), Decision.ask(), Decision.deny(), False])
async def test_garbage_approver_answers_deny(answer: Any) -> None:
    out = await run(Policy(allowed_tools=None), "shell", approval=CallbackApprover(lambda c, x, r: answer),
                    command="ls")
    assert out.error is not None and out.error.kind is ErrorKind.APPROVAL_DENIED


async def test_allow_decision_from_approver_approves() -> None:
    out = await run(Policy(allowed_tools=None), "shell",
                    approval=CallbackApprover(lambda c, x, r: Decision.allow()), command="ls")
    assert out.ok


async def test_approver_exception_and_timeout_deny() -> None:
    def boom(call: ToolCall, ctx: CallContext, reason: str) -> bool:
        raise RuntimeError("approver crashed")

    out = await run(Policy(allowed_tools=None), "shell", approval=CallbackApprover(boom), command="ls")
    assert out.error.kind is ErrorKind.APPROVAL_DENIED

    import anyio

    async def never(call: ToolCall, ctx: CallContext, reason: str) -> bool:
        await anyio.Event().wait()
        return True

    out = await run(Policy(allowed_tools=None), "shell", approval=CallbackApprover(never, timeout=0.05),
                    command="ls")
    assert out.error.kind is ErrorKind.APPROVAL_DENIED


async def test_unset_allowed_tools_with_unknown_names_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALLOWED_TOOLS", "read_file,ghost")
    monkeypatch.setenv("CI", "1")
    from toolrig.policy import PolicyConfigError

    with pytest.raises(PolicyConfigError, match="ghost"):
        Runtime(TOOLS, policy=Policy(), audit=False)
