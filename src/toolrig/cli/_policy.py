"""``toolrig policy explain | lint`` and ``toolrig approvals list | approve | deny``."""

from __future__ import annotations

import json
from typing import Annotated, Any, NoReturn
from urllib.parse import urlsplit, urlunsplit

import anyio
import typer

from toolrig.cli._common import fail, load_tools, print_json, stdout

__all__ = ["register"]

ConfigOpt = Annotated[str, typer.Option("--config", "-c", metavar="FILE", help="Policy file (YAML or JSON).")]
ToolsOpt = Annotated[str | None, typer.Option("--tools", metavar="SOURCE",
                                               help="Where the tools are (file, directory or module).")]
QueueOpt = Annotated[str | None, typer.Option(
    "--queue", metavar="LOCATION", help="A SQLite path or redis:// URL (default: TOOLRIG_APPROVALS or the "
                                        "user data folder).")]

policy_app = typer.Typer(name="policy", help="Explain and check a policy file.", no_args_is_help=True)
approvals_app = typer.Typer(name="approvals", help="The persisted approval queue.", no_args_is_help=True)


def _policy(config: str, tools: str | None) -> Any:
    from toolrig.policy import PolicyConfigError, load_policy

    toolset = load_tools(tools) if tools else None
    try:
        return load_policy(config, tools=toolset)
    except PolicyConfigError as exc:
        fail(str(exc))


@policy_app.command("explain")
def explain_command(  # noqa: PLR0917 - typer maps each parameter to an option
    tool: Annotated[str, typer.Argument(help="Tool name.")],
    config: ConfigOpt,
    args: Annotated[str, typer.Option("--args", metavar="JSON", help="The call's arguments as JSON.")] = "{}",
    user: Annotated[str | None, typer.Option("--user", help="Calling user.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Calling agent.")] = None,
    role: Annotated[list[str] | None, typer.Option("--role", help="A role (group) of the user; repeatable.")] = None,
    tools: ToolsOpt = None,
) -> None:
    """Show whether a call is allowed, asked or denied, and which layer and rule decided."""
    from toolrig import CallContext, ToolCall

    try:
        arguments = json.loads(args)
    except json.JSONDecodeError as exc:
        fail(f"--args is not JSON: {exc}")
    if not isinstance(arguments, dict):
        fail("--args must be a JSON object")
    policy = _policy(config, tools)
    context = CallContext(user=user, agent=agent, roles=frozenset(role or ()))
    print_json(policy.explain(ToolCall(name=tool, arguments=arguments), context).to_dict())


@policy_app.command("lint")
def lint_command(config: ConfigOpt, tools: ToolsOpt = None) -> None:
    """Report rules that can never match or are shadowed; exit 1 when there are any."""
    findings = _policy(config, tools).lint()
    for f in findings:
        typer.echo(f"{f.kind}: [{f.layer}] {f.verdict} {f.rule}: {f.message}")
    if findings:
        raise typer.Exit(1)
    typer.echo("no findings")


def _queue(location: str | None) -> Any:
    from toolrig.policy import ApprovalQueue

    return ApprovalQueue(location)


async def _with_queue(location: str | None, action: str, request_id: str, by: str | None,
                      remember: bool) -> tuple[bool, Any]:
    queue = _queue(location)
    try:
        if action == "approve":
            done = await queue.approve(request_id, by, remember=remember)
        else:
            done = await queue.deny(request_id, by)
        return done, await queue.get(request_id)
    finally:
        await queue.aclose()


def _shown_queue(location: str | None) -> str:
    """Where the queue is, for an error message: a URL without its password."""
    if location is None:
        return "the default queue (TOOLRIG_APPROVALS, else the user data folder)"
    parts = urlsplit(location)
    if parts.password is None:
        return location
    netloc = (f"{parts.username}@" if parts.username else "") + (parts.hostname or "") + (
        f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _unreachable(location: str | None, exc: Exception) -> NoReturn:
    fail(f"cannot reach the approval queue at {_shown_queue(location)}: {type(exc).__name__}: "
         f"{' '.join(str(exc).split())}")


def _decide(location: str | None, action: str, request_id: str, by: str | None, remember: bool = False) -> None:
    try:
        done, request = anyio.run(_with_queue, location, action, request_id, by, remember)
    except (ValueError, TypeError) as exc:  # remember: a request without a session, a store that cannot
        fail(f"cannot {action} {request_id}: {exc}")
    except Exception as exc:  # a Redis server that is down, a folder that cannot be written
        _unreachable(location, exc)
    if not done:
        state = "no such request" if request is None else f"it is {request.status}"
        fail(f"cannot {action} {request_id}: {state}")
    typer.echo(f"{request_id}: {request.status}" + (" (remembered for this session)" if remember else ""))


@approvals_app.command("approve")
def approve_command(request_id: Annotated[str, typer.Argument(metavar="ID")], queue: QueueOpt = None,
                    by: Annotated[str | None, typer.Option("--by", help="Who approves (recorded).")] = None,
                    remember: Annotated[bool, typer.Option(
                        "--remember", help="Also approve the same call (tool, version, arguments) by the same user "
                                           "and agent for the rest of its session (8 hours at most).")] = False,
                    ) -> None:
    """Approve a pending request (the waiting call then runs, once; with --remember, its repeats in the session)."""
    _decide(queue, "approve", request_id, by, remember)


@approvals_app.command("deny")
def deny_command(request_id: Annotated[str, typer.Argument(metavar="ID")], queue: QueueOpt = None,
                 by: Annotated[str | None, typer.Option("--by", help="Who denies (recorded).")] = None) -> None:
    """Deny a pending request."""
    _decide(queue, "deny", request_id, by)


async def _list(location: str | None, everything: bool) -> list[Any]:
    queue = _queue(location)
    try:
        return list(await queue.list(None if everything else "pending"))
    finally:
        await queue.aclose()


@approvals_app.command("list")
def list_command(queue: QueueOpt = None,
                 everything: Annotated[bool, typer.Option("--all", help="Also decided requests.")] = False,
                 as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List pending requests with their full arguments (nothing hidden)."""
    from toolrig.policy import visible
    from toolrig.policy.approvals import render_value

    try:
        requests = anyio.run(_list, queue, everything)
    except Exception as exc:  # a Redis server that is down, a folder that cannot be read
        _unreachable(queue, exc)
    if as_json:
        print_json([r.to_dict() for r in requests])
        return
    console = stdout()
    if not requests:
        console.print("no approval requests", markup=False, highlight=False)
    for r in requests:
        who = ", ".join(f"{k}={visible(v)}" for k, v in (("user", r.user), ("agent", r.agent)) if v)
        text = (f"{r.id}  {r.status}  {visible(r.tool)}@{visible(r.version)}  {who}\n"
                f"  reason: {visible(r.reason)}\n  arguments: {render_value(json.loads(r.arguments), 1)}")
        console.print(text, markup=False, highlight=False, emoji=False)


def register(app: typer.Typer) -> None:
    """Add the ``policy`` and ``approvals`` command groups."""
    app.add_typer(policy_app)
    app.add_typer(approvals_app)
