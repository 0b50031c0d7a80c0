"""The one schema of ``toolrig.toml``: a pydantic model per table, strict, unknown keys refused.

:func:`check_config` validates a whole parsed config before anything starts and reports every problem at once,
each naming the key (``[serve] port``), the value given and what is allowed. Values are not converted: ``"80"``
is not a port and ``"no"`` is not a boolean (TOML has real integers and booleans).

To add a key, add a field to the model of its table (``ServeTable`` for ``[serve]``, ``ServerEntry`` for one
``[mcpServers.NAME]`` ...); a new table is a new model and a field of :class:`GatewaySchema`.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from toolrig.errors import MCPConfigError

__all__ = ["GatewaySchema", "ServerEntry", "check_config", "check_servers"]

Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Names = list[str]
Forwarding = Literal["deny", "ask", "allow"]
NameLists = dict[str, str | list[str]]


class _Table(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class TokenTable(_Table):
    """One static token's settings (``tokens = { "tok" = { user = "ci", agent = "ci-bot" } }``)."""

    user: Annotated[str, Field(min_length=1)]
    agent: Annotated[str, Field(min_length=1)] | None = None
    audience: Annotated[str, Field(min_length=1)] | None = None
    scopes: Names | None = None


class AuthTable(_Table):
    """``[serve.auth]``: bearer tokens issued for this server."""

    audience: Annotated[str, Field(min_length=1)]
    tokens: dict[str, Annotated[str, Field(min_length=1)] | TokenTable] | None = None
    issuer: str | None = None
    jwt_secret_env: Annotated[str, Field(min_length=1)] | None = None
    jwt_public_key_file: Annotated[str, Field(min_length=1)] | None = None
    algorithms: Names | None = None
    required_scopes: Names | None = None
    agent_claim: Annotated[str, Field(min_length=1)] | None = None


class ServeTable(_Table):
    """``[serve]``: where and how the gateway listens."""

    transport: Literal["http", "stdio"] | None = None
    host: Annotated[str, Field(min_length=1)] | None = None
    port: Annotated[int, Field(ge=0, le=65535)] | None = None
    path: Annotated[str, Field(pattern=r"^/")] | None = None
    stateless: bool | None = None
    allowed_hosts: Names | None = None
    allowed_origins: Names | None = None
    json_response: bool | None = None
    auth: AuthTable | None = None
    shutdown_grace: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    session_idle_timeout: Seconds | None = None
    max_sessions: Annotated[int, Field(ge=1)] | None = None
    openapi: bool | None = None


class McpTable(_Table):
    """``[mcp]``: where more servers are listed, and how upstream calls are made."""

    servers_file: Annotated[str, Field(min_length=1)] | None = None
    prefix: bool | None = None
    timeout: Seconds | None = None
    connect_timeout: Seconds | None = None
    forward_sampling: Forwarding | None = None
    forward_elicitation: Forwarding | None = None


class ToolsTable(_Table):
    """``[tools]``: Python tools (files, directories, module names)."""

    modules: Names | None = None


class BuiltinsTable(_Table):
    """``[builtins]``: which built-in tools are served (their options are checked by ``tools_from_config``)."""

    root: Annotated[str, Field(min_length=1)] | None = None
    files: bool | dict[str, Any] | None = None
    calculator: bool | dict[str, Any] | None = None
    current_time: bool | dict[str, Any] | None = None
    documents: bool | dict[str, Any] | None = None
    http_fetch: bool | dict[str, Any] | None = None
    shell: bool | dict[str, Any] | None = None
    python: bool | dict[str, Any] | None = None
    web_search: bool | dict[str, Any] | None = None
    memory: bool | dict[str, Any] | None = None
    todo: bool | dict[str, Any] | None = None
    clarify: bool | dict[str, Any] | None = None
    crawl: bool | dict[str, Any] | None = None
    email: bool | dict[str, Any] | None = None
    ocr: bool | dict[str, Any] | None = None
    bundles: list[str | dict[str, Any]] | None = None


class PolicyTable(_Table):
    """``[policy]``: a :class:`toolrig.Policy` (``trusted`` names tools whose own annotations are believed)."""

    preset: Literal["strict", "default", "permissive"] | None = None
    allow: Names | None = None
    ask: Names | None = None
    deny: Names | None = None
    layers: list[dict[str, Any]] | None = None
    owners: NameLists | None = None
    groups: NameLists | None = None
    toolsets: NameLists | None = None
    trusted: Names | None = None
    allowed_tools: Names | None = None


class ApprovalsTable(_Table):
    """``[approvals]``: who is asked when a call needs a human yes."""

    backend: Literal["client", "queue", "terminal", "deny"] | None = None
    queue: Annotated[str, Field(min_length=1)] | None = None
    timeout: Seconds | None = None


class RuntimeTable(_Table):
    """``[runtime]``: state, audit and call limits."""

    state: Annotated[str, Field(min_length=1)] | None = None
    state_prefix: Annotated[str, Field(min_length=1)] | None = None
    audit: Annotated[str, Field(min_length=1)] | Literal[False] | None = None
    audit_mode: Literal["batched", "strict"] | None = None
    timeout: Seconds | None = None
    per_user_limit: Annotated[str, Field(min_length=1)] | None = None
    state_failure: Literal["open", "closed"] | None = None


class AuditTable(_Table):
    """``[audit]``: what happens while the audit store cannot be written."""

    on_failure: Literal["refuse", "journal"] | None = None
    journal: Annotated[str, Field(min_length=1)] | None = None


class ScanTable(_Table):
    """``[scan]``: the poisoning scan of upstream tools."""

    quarantine: bool | None = None
    allow: Names | None = None


class PinsTable(_Table):
    """``[pins]``: how upstream tool definitions are pinned."""

    mode: Literal["tofu", "approve"] | None = None


class WorkflowsTable(_Table):
    """``[workflows]``: workflow files served as tools (read again, with its meaning, by
    :class:`toolrig.workflows.WorkflowsTable`)."""

    files: list[Annotated[str, Field(min_length=1)]] | None = None
    journal: Annotated[str, Field(min_length=1)] | None = None


class SandboxTable(_Table):
    """The ``sandbox`` table of a launched server."""

    network: bool | None = None
    ro_paths: Names | None = None
    rw_paths: Names | None = None


class ServerEntry(_Table):
    """One ``[mcpServers.NAME]``: a command to launch or a URL, and toolrig's own settings for it."""

    command: Annotated[str, Field(min_length=1)] | None = None
    args: Names | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: Annotated[str, Field(min_length=1)] | None = None
    headers: dict[str, str] | None = None
    type: Literal["stdio", "sse", "http", "streamable-http", "streamable_http", "streamablehttp", "ws",
                  "websocket"] | None = None
    transport: Literal["stdio", "sse", "http", "streamable-http", "streamable_http", "streamablehttp", "ws",
                       "websocket"] | None = None
    disabled: bool | None = None
    timeout: Seconds | None = None
    prefix: str | bool | None = None
    description: str | None = None
    trusted: bool | None = None
    sandbox: bool | SandboxTable | None = None
    max_message_bytes: Annotated[int, Field(ge=1024)] | None = None
    forward_sampling: Forwarding | None = None
    forward_elicitation: Forwarding | None = None


class GatewaySchema(_Table):
    """The whole ``toolrig.toml`` (see :mod:`toolrig.mcp.gateway._config` for what each key does)."""

    name: Annotated[str, Field(min_length=1)] | None = None
    instructions: str | None = None
    mcpServers: dict[str, ServerEntry] | None = None
    serve: ServeTable | None = None
    mcp: McpTable | None = None
    tools: ToolsTable | None = None
    builtins: BuiltinsTable | None = None
    policy: PolicyTable | None = None
    approvals: ApprovalsTable | None = None
    runtime: RuntimeTable | None = None
    audit: AuditTable | None = None
    scan: ScanTable | None = None
    pins: PinsTable | None = None
    workflows: WorkflowsTable | None = None

    @field_validator("mcpServers")
    @classmethod
    def _names(cls, value: dict[str, ServerEntry] | None) -> dict[str, ServerEntry] | None:
        for name in value or {}:
            if "__" in name or not name:
                raise ValueError(f"server name {name!r} must be non-empty and must not contain '__' (the separator "
                                 "between a server's name and its tools' names)")
        return value


def check_config(data: Mapping[str, Any], *, source: str = "the gateway config") -> None:
    """Validate a whole parsed ``toolrig.toml``.

    Raises:
        MCPConfigError: every problem, one per line: the key, the value given, what is allowed.
    """
    _check(GatewaySchema, data, source)


def check_servers(servers: Mapping[str, Any], *, source: str) -> None:
    """Validate ``mcpServers`` entries read from elsewhere (the ``[mcp] servers_file``).

    Raises:
        MCPConfigError: as :func:`check_config`.
    """
    _check(GatewaySchema, {"mcpServers": dict(servers)}, source)


def _check(model: type[BaseModel], data: Mapping[str, Any], source: str) -> None:
    try:
        model.model_validate(dict(data))
    except ValidationError as exc:
        problems = _problems(exc, data)
        raise MCPConfigError(f"{source}: {len(problems)} problem(s):\n  " + "\n  ".join(problems)) from None


def _real_path(data: Any, loc: Sequence[str | int]) -> tuple[list[str | int], Any]:
    """The parts of ``loc`` that name keys of ``data`` (pydantic adds union member tags), and the value there."""
    path: list[str | int] = []
    value = data
    for part in loc:
        is_key = isinstance(value, Mapping) and part in value
        if not is_key and not (isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value)):
            continue  # a union member's tag, or a missing key
        value = value[part]
        path.append(part)
    return path, value


def _where(path: Sequence[str | int]) -> str:
    """``[serve] port``, ``[mcpServers.time] trusted``, ``[policy] allow[2]``, ``name``."""
    keys: list[str] = []
    for part in path:
        if isinstance(part, int):
            keys[-1] += f"[{part}]"
        else:
            keys.append(part)
    if len(keys) <= 1:
        return keys[0] if keys else "(top level)"
    return f"[{'.'.join(keys[:-1])}] {keys[-1]}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _line(error: Mapping[str, Any], path: list[str | int], value: Any) -> tuple[list[str | int], str]:
    kind = error["type"]
    if kind == "extra_forbidden":
        return path, _unknown(path)
    if kind == "missing":
        missing = [*path, str(error["loc"][-1])]
        return missing, f"{_where(missing)} is required"
    message = str(error["msg"])
    if kind == "value_error":
        return path, f"{_where(path)}: {message.removeprefix('Value error, ')}"
    return path, f"{_where(path)} = {_shown(value)}: must be {message.removeprefix('Input should be ')}"


def _problems(exc: ValidationError, data: Mapping[str, Any]) -> list[str]:
    """One line per key; the members of a union that all failed are joined with "or"; a table given for a
    ``bool | table`` key reports the table's problems, not that it is no boolean."""
    lines: dict[tuple[str | int, ...], list[str]] = {}
    for error in exc.errors(include_url=False):
        path, value = _real_path(data, error["loc"])
        path, line = _line(error, path, value)
        key = tuple(path)
        if key in lines and " = " in line and " = " in lines[key][0]:
            lines[key].append(line.split(": must be ", 1)[-1])  # another member of the same union
        elif key not in lines:
            lines[key] = [line]
    deeper = {k[:n] for k in lines for n in range(len(k))}
    return [first + "".join(f", or {more}" for more in rest)
            for key, (first, *rest) in lines.items() if key not in deeper or " = " not in first]


def _unknown(path: Sequence[str | int]) -> str:
    known = _known_keys(path[:-1])
    key = str(path[-1])
    close = difflib.get_close_matches(key, known, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    where = f"[{'.'.join(str(p) for p in path[:-1])}]" if path[:-1] else "the top level"
    return f"{where}: unknown key {key!r}; {hint}known keys: {', '.join(known)}"


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The model inside ``X | None``, ``dict[str, X]``, ``Annotated[X, ...]`` (None when there is none)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = get_origin(annotation)
    if origin is dict:
        return _model_of(get_args(annotation)[1])
    if origin in (Union, Annotated) or type(annotation).__name__ == "UnionType":
        for arg in get_args(annotation):
            found = _model_of(arg)
            if found is not None:
                return found
    return None


def _known_keys(path: Sequence[str | int]) -> list[str]:
    model: type[BaseModel] | None = GatewaySchema
    skip_name = False
    for part in path:
        if model is None or isinstance(part, int):
            break
        if skip_name:  # the NAME of [mcpServers.NAME]
            skip_name = False
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            return []
        skip_name = get_origin(field.annotation) is dict or any(
            get_origin(a) is dict for a in get_args(field.annotation))
        model = _model_of(field.annotation)
    return sorted(model.model_fields) if model is not None else []
