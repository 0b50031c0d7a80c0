"""Whether an upstream's sampling and elicitation requests reach the client: :class:`ForwardGate`.

A gateway passes an upstream server's ``sampling/createMessage`` and ``elicitation/create`` requests on to the
client whose call is running — but only as that server's :class:`ForwardRules` say:

* ``"deny"``: never forwarded; the upstream gets an error;
* ``"ask"`` (the gateway's default for both): a person is asked first, through the gateway's approval handler
  (the client's user by an elicitation form, else the approval queue), with the request shown in full; only an
  explicit yes forwards it;
* ``"allow"``: forwarded.

Whatever is forwarded is labelled with the upstream's name and escaped (:mod:`toolrig.mcp.shared._forward_render`).
Every request is audited, forwarded or not, as a row of its own: tool ``<server>::sampling`` or
``<server>::elicitation``, the caller's user, agent and session, the decision, the request, and the answer —
an elicitation answer's values replaced whole (a person may have typed a secret the redaction rules do not
know), a sampling answer through the audit log's redaction. With ``audit_mode = "strict"`` the row is written
before anything is forwarded, and nothing is forwarded when it cannot be.
"""

from __future__ import annotations

import inspect
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import anyio
import mcp_types
from mcp import MCPError

from toolrig._calls import ToolCall
from toolrig._context import EMPTY_CONTEXT, CallContext
from toolrig._decision import approves
from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig._results import ToolResult
from toolrig.errors import UnshowableRequest
from toolrig.mcp.shared import (
    ClientPeer,
    labelled_elicitation,
    labelled_sampling,
    request_summary,
    shown,
)

if TYPE_CHECKING:
    from toolrig.runtime import ApprovalHandler, AuditStage

__all__ = ["ALLOW_ALL", "FORWARD_MODES", "ForwardGate", "ForwardMode", "ForwardRules", "gate_from_config"]

log = logging.getLogger("toolrig.mcp.forward")

ForwardMode = Literal["deny", "ask", "allow"]
FORWARD_MODES: tuple[ForwardMode, ...] = ("deny", "ask", "allow")
Kind = Literal["sampling", "elicitation"]

ANSWER_REDACTED = "[REDACTED:elicitation_answer]"
"""What an audit row keeps of each value a person typed into a forwarded form."""

_GRACE = 5.0


@dataclass(frozen=True, kw_only=True)
class ForwardRules:
    """What one upstream may ask of the client behind a call: ``"deny"``, ``"ask"`` or ``"allow"`` per kind.

    Raises:
        ValueError: a value that is not one of :data:`FORWARD_MODES`.
    """

    sampling: ForwardMode = "ask"
    elicitation: ForwardMode = "ask"

    def __post_init__(self) -> None:
        for kind in ("sampling", "elicitation"):
            if getattr(self, kind) not in FORWARD_MODES:
                raise ValueError(f"forward_{kind} must be one of {', '.join(FORWARD_MODES)}; got "
                                 f"{getattr(self, kind)!r}")

    def mode(self, kind: Kind) -> ForwardMode:
        """The mode for ``"sampling"`` or ``"elicitation"``."""
        return self.sampling if kind == "sampling" else self.elicitation


ALLOW_ALL = ForwardRules(sampling="allow", elicitation="allow")
"""Forward everything (labelled and escaped): ``MCPToolset(forward=True)`` outside a gateway."""


def _is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    method = None if inspect.isroutine(fn) else inspect.getattr_static(type(fn), "__call__", None)
    return method is not None and inspect.iscoroutinefunction(method)


class _Refused(Exception):
    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class ForwardGate:
    """Decides, asks, forwards and audits an upstream's sampling and elicitation requests (module docstring).

    Args:
        rules: per upstream server name; others get ``default``.
        default: the rules of servers not named in ``rules``.
        approval: asked when a rule says ``"ask"`` (None: ``"ask"`` refuses).
        approval_timeout: seconds to wait for that answer (then: refused).
        audit: the runtime's audit stage, whose log gets a row per request (None: not audited).
    """

    def __init__(self, rules: Mapping[str, ForwardRules] | None = None, *, default: ForwardRules = ForwardRules(),
                 approval: ApprovalHandler | None = None, approval_timeout: float = 300.0,
                 audit: AuditStage | None = None) -> None:
        self.rules = dict(rules or {})
        self.default = default
        self.approval = approval
        self.approval_timeout = approval_timeout
        self.audit = audit

    def attach(self, *, approval: ApprovalHandler | None, audit: AuditStage | None,
               approval_timeout: float | None = None) -> None:
        """Use the approval handler and audit stage of the runtime built after the upstreams (a gateway's)."""
        self.approval, self.audit = approval, audit
        if approval_timeout is not None:
            self.approval_timeout = approval_timeout

    def rules_for(self, server: str) -> ForwardRules:
        """The rules of upstream ``server``."""
        return self.rules.get(server, self.default)

    # -- the two kinds of request ------------------------------------------------------------------
    async def sampling(self, server: str, params: mcp_types.CreateMessageRequestParams,
                       context: CallContext | None, peer: ClientPeer | None
                       ) -> mcp_types.CreateMessageResult | mcp_types.ErrorData:
        """Relay a ``sampling/createMessage`` request of ``server`` to ``peer`` (the client behind the call)."""
        async def send(labelled: Any) -> Any:
            assert peer is not None
            return await peer.create_message(labelled)

        supported = peer is not None and peer.supports_sampling
        answer: mcp_types.CreateMessageResult | mcp_types.ErrorData = await self._relay(
            "sampling", server, params, context, supported, lambda: labelled_sampling(server, params), send)
        return answer

    async def elicitation(self, server: str, params: mcp_types.ElicitRequestParams, context: CallContext | None,
                          peer: ClientPeer | None) -> mcp_types.ElicitResult | mcp_types.ErrorData:
        """Relay an ``elicitation/create`` request of ``server`` to ``peer`` (the client behind the call)."""
        async def send(labelled: Any) -> Any:
            assert peer is not None
            return await peer.elicit(labelled)

        supported = peer is not None and peer.supports_elicitation
        answer: mcp_types.ElicitResult | mcp_types.ErrorData = await self._relay(
            "elicitation", server, params, context, supported, lambda: labelled_elicitation(server, params), send)
        return answer

    # -- one request ---------------------------------------------------------------------------------
    async def _relay(self, kind: Kind, server: str, params: Any, context: CallContext | None,  # noqa: PLR0917
                     supported: bool, render: Callable[[], Any], send: Callable[[Any], Awaitable[Any]]) -> Any:
        ctx = context or EMPTY_CONTEXT
        mode = self.rules_for(server).mode(kind)
        summary = request_summary(params)
        call = ToolCall(id=f"fwd_{secrets.token_hex(12)}", name=f"{server}::{kind}", arguments={"request": summary})
        decision: dict[str, Any] = {"verdict": mode, "source": f"forward_{kind} of upstream {server!r}",
                                    "reason": f"forward_{kind} = {mode!r}"}
        started, row_id = time.time(), None
        answer: Any = None
        try:
            row_id = await self._started(call, ctx, started)
            labelled = self._check(kind, server, mode, context, supported, render)
            if mode == "ask":
                decision["approved"] = await self._ask(kind, server, call, ctx, summary)
                if not decision["approved"]:
                    raise _Refused(ErrorKind.APPROVAL_DENIED, f"a person declined to forward this {kind} request")
            answer = await send(labelled)
        except _Refused as refused:
            self._audit(row_id, started, call, summary, ctx, decision, None, refused)
            log.info("%s request of upstream %s not forwarded: %s", kind, server, refused.message)
            return mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST,
                                       message=f"the gateway did not forward this {kind} request: {refused.message}")
        except MCPError as exc:
            self._audit(row_id, started, call, summary, ctx, decision, None,
                        _Refused(ErrorKind.EXECUTION_ERROR, f"the client answered with an error: {exc.error.message}"))
            return exc.error
        except Exception as exc:  # the client's stream broke, or a bug: the upstream gets an error, the row is written
            log.warning("forwarding a %s request of upstream %s failed: %s", kind, server, exc)
            self._audit(row_id, started, call, summary, ctx, decision, None,
                        _Refused(ErrorKind.UNAVAILABLE, f"forwarding failed ({type(exc).__name__})"))
            return mcp_types.ErrorData(code=mcp_types.INTERNAL_ERROR,
                                       message=f"the gateway could not forward this {kind} request")
        except BaseException:  # cancelled (the call ended, the gateway stops): recorded, then passed on
            self._audit(row_id, started, call, summary, ctx, decision, None,
                        _Refused(ErrorKind.CANCELLED, "cancelled before an answer came"))
            raise
        self._audit(row_id, started, call, summary, ctx, decision, answer, None)
        return answer

    def _check(self, kind: Kind, server: str, mode: str, context: CallContext | None,  # noqa: PLR0917
               supported: bool, render: Callable[[], Any]) -> Any:
        """The labelled request, or why it is not forwarded."""
        if mode == "deny":
            raise _Refused(ErrorKind.DENIED, f"the gateway's policy for upstream {server!r} is forward_{kind} = "
                                             "'deny'")
        if context is None:
            raise _Refused(ErrorKind.UNAVAILABLE, "no single call of this upstream is running, so there is no "
                                                  "client to ask")
        if not supported:
            raise _Refused(ErrorKind.UNAVAILABLE, f"the client behind the call does not support {kind}")
        try:
            return render()
        except UnshowableRequest as exc:
            raise _Refused(ErrorKind.INVALID_ARGUMENTS, str(exc)) from None

    async def _ask(self, kind: Kind, server: str, call: ToolCall, ctx: CallContext, summary: Any) -> bool:
        handler = self.approval
        if handler is None:
            return False
        what = "use your model (sampling)" if kind == "sampling" else "ask you for input (elicitation)"
        reason = (f"the upstream MCP server '{shown(server, 100)}' asks to {what} during this call; "
                  f"forward_{kind} = 'ask'")
        question = ToolCall(id=call.id, name=call.name, arguments={"upstream": server, "request": summary})
        try:
            with anyio.fail_after(self.approval_timeout + _GRACE):
                answer = (handler(question, ctx, reason) if _is_async(handler)
                          else await anyio.to_thread.run_sync(handler, question, ctx, reason))
                if inspect.isawaitable(answer):
                    answer = await answer
        except Exception:
            log.exception("asking whether to forward a %s request of upstream %s failed: not forwarded", kind, server)
            return False
        return approves(answer)

    # -- audit ---------------------------------------------------------------------------------------
    async def _started(self, call: ToolCall, ctx: CallContext, started: float) -> str | None:
        """In strict mode, the row written before anything is forwarded (its id); None otherwise."""
        stage = self.audit
        if stage is None or stage.writer is None or stage.mode != "strict":
            return None
        from toolrig.audit import new_row_id, started_record

        row_id = new_row_id()
        record = started_record(row_id, started, call, ctx, stage.redactor)
        try:
            await anyio.to_thread.run_sync(stage.writer.write_now, [record])
        except Exception as exc:
            raise _Refused(ErrorKind.INTERNAL_ERROR,
                           f"the audit log could not record it ({type(exc).__name__})") from None
        return row_id

    def _audit(self, row_id: str | None, started: float, call: ToolCall, summary: Any,  # noqa: PLR0917
               ctx: CallContext, decision: Mapping[str, Any], answer: Any, refused: _Refused | None) -> None:
        stage = self.audit
        if stage is None or stage.writer is None:
            return
        arguments = {"request": summary, "answer": None if answer is None else answer_summary(answer)}
        row_call = ToolCall(id=call.id, name=call.name, arguments=arguments)
        meta = {"decision": dict(decision)}
        if refused is None:
            outcome = ToolOutcome.success(call.id, call.name, ToolResult.text_result("forwarded"), meta=meta)
        else:
            outcome = ToolOutcome.failure(call.id, call.name, ToolError.of(refused.kind, refused.message), meta=meta)
        stage.writer.put((row_id, started, row_call, ctx, outcome, (time.time() - started) * 1000))


def answer_summary(answer: Any) -> dict[str, Any]:
    """What the audit row keeps of an answer: an elicitation's action and field names, each value replaced whole;
    a sampling answer's role, model, stop reason and text (redacted by the audit log as any stored value)."""
    if isinstance(answer, mcp_types.ElicitResult):
        content = answer.content or {}
        return {"action": answer.action, "content": dict.fromkeys(map(str, content), ANSWER_REDACTED)}
    if isinstance(answer, mcp_types.CreateMessageResult):
        block = answer.content
        text = block.text if isinstance(block, mcp_types.TextContent) else f"<{block.type} content>"
        return {"role": answer.role, "model": answer.model, "stop_reason": answer.stop_reason,
                "content": text[:4_000]}
    return {"type": type(answer).__name__}


def gate_from_config(forwarding: Mapping[str, Mapping[str, str]], defaults: Mapping[str, Any]) -> ForwardGate:
    """The gate of a gateway config: per-server ``forward_*`` keys, defaults from ``[mcp]`` (else ``"ask"``).

    Raises:
        ValueError: a value that is not one of :data:`FORWARD_MODES`.
    """
    default = ForwardRules(sampling=defaults.get("forward_sampling", "ask"),
                           elicitation=defaults.get("forward_elicitation", "ask"))
    rules = {name: ForwardRules(sampling=own.get("forward_sampling", default.sampling),  # type: ignore[arg-type]
                                elicitation=own.get("forward_elicitation", default.elicitation))  # type: ignore[arg-type]
             for name, own in forwarding.items()}
    return ForwardGate(rules, default=default)
