"""The exception tree of toolrig.

Exceptions are for the inside of the library; at the tool boundary every failure becomes a
:class:`toolrig.ToolOutcome` with an error kind. Every exception toolrig raises on purpose is
defined here, under :class:`ToolrigError`. The tree::

    ToolrigError
    ├── DefinitionError          a developer mistake found while defining a tool (fails loudly)
    │   └── LoadError            a file, module or plugin could not be loaded (toolrig.loading)
    ├── ConfigError              a runtime, policy or server is configured wrongly
    │   ├── PolicyConfigError    a policy rule that does not parse, an empty ALLOWED_TOOLS, ...
    │   └── MCPConfigError       an MCP target, mcpServers entry or gateway config that cannot be used
    ├── RegistryError            registry misuse
    │   ├── ToolNotFoundError    no tool (or version) under that name
    │   ├── VersionConflictError same name and version registered twice, or a downgrade
    │   └── SelectorError        a malformed version selector
    ├── ToolsetConflictError     two toolsets offer the same tool name
    ├── ArgumentsError           arguments do not match the tool's input schema
    ├── InjectionError           an injected parameter has no value in the call context
    ├── ResultConversionError    a tool returned a value with no JSON form and no text of its own
    ├── StateUnavailable         the shared-state store (Redis, ...) cannot be reached
    ├── EmbeddingError           an embedding model cannot be loaded or gave unusable vectors (discovery)
    ├── WorkflowError            a workflow run cannot be resumed or journaled (unknown run, changed workflow)
    ├── UnshowableRequest        an MCP server's request (a form, a sampling) that cannot be shown faithfully
    ├── PackageError             a tool package that cannot be read (not a wheel, an sdist or a folder)
    │   └── ManifestError        its ``[tool.toolrig]`` manifest does not say clearly what it needs
    ├── ExecutionError           the machinery running a tool body failed (not the body itself)
    │   ├── CallTimeoutError     the runtime's deadline for one attempt passed
    │   ├── ExecutorBusyError    no capacity left to run the body now (retryable)
    │   ├── ExecutorUnavailable  the executor a tool asks for is not available here
    │   │   └── SandboxUnavailable  no adequate sandbox on this machine: nothing runs (never unsandboxed)
    │   ├── SandboxError     the sandbox machinery failed for one run (not the sandboxed program)
    │   ├── ProcessIsolationError the call cannot be sent to, or read back from, a worker process
    │   │   └── WorkerDiedError  the worker process died before answering
    │   └── RemoteToolError      the body raised in a worker; its type, message and traceback as text
    └── ToolFailure              raised *inside* a tool body: a model-visible failure
        ├── ModelRetry           the model should call again with other arguments
        ├── TransientError       infrastructure hiccup worth retrying (network, 5xx, ...)
        │   ├── RateLimitedError an upstream said "slow down"
        │   └── MCPUnavailableError  no connection to an MCP server: the call was never sent
        ├── MCPCallError         an MCP server answered a tools/call with a protocol error
        ├── MCPMaybeRanError     an MCP connection broke after the call was sent: it may have run, not re-sent
        ├── ResultTooLargeError  the answer was over a byte limit while it was read (an MCP message): not read
        └── GuardError           a guard (toolrig.guards) refused; .reason is a stable code
            ├── PathError        an ordinary file-system failure (not_found, exists, too_large, ...)
            │   └── PathDenied   a confinement refusal (escape, symlink_outside, hardlink, ...)
            │       └── PathProtected  a protected name inside the root: needs an approval
            ├── URLDenied        the URL or one of its addresses is not allowed (SSRF guard)
            ├── FetchError       the fetch of an allowed URL failed (connect, timeout, protocol, ...)
            ├── CommandParseError a shell command the parser does not fully understand
            └── ArgumentDenied   an operand for a structured command is unsafe (option-like, NUL)

Some also derive from the builtin they stand for (``ArgumentsError`` is a ``ValueError``,
``CallTimeoutError`` a ``TimeoutError``, ``ToolNotFoundError`` a ``KeyError``, ...), so code that
catches the builtin keeps working.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "ArgumentDenied", "ArgumentsError", "CallTimeoutError", "CommandParseError", "ConfigError", "DefinitionError",
    "EmbeddingError", "ExecutionError", "ExecutorBusyError", "ExecutorUnavailable", "FetchError", "GuardError",
    "InjectionError", "LoadError", "MCPCallError", "MCPConfigError", "MCPMaybeRanError", "MCPUnavailableError",
    "ManifestError", "ModelRetry", "PackageError", "PathDenied", "PathError", "PathProtected", "PolicyConfigError",
    "ProcessIsolationError", "RateLimitedError", "RegistryError", "RemoteToolError", "ResultConversionError",
    "ResultTooLargeError", "SandboxError", "SandboxUnavailable", "SelectorError", "StateUnavailable", "ToolFailure",
    "ToolNotFoundError", "ToolrigError", "ToolsetConflictError", "TransientError", "URLDenied", "UnshowableRequest",
    "VersionConflictError", "WorkerDiedError", "WorkflowError", "describe_exit",
]


class ToolrigError(Exception):
    """Base class of every exception toolrig raises on purpose."""


# -- developer mistakes -------------------------------------------------------------------------
class DefinitionError(ToolrigError, TypeError):
    """A tool definition is wrong; the message says what to change."""


class LoadError(DefinitionError):
    """Tools could not be loaded from a source (import failure, syntax error, bad entry).

    Attributes:
        source: the file, module or entry point that failed.
    """

    def __init__(self, message: str, *, source: str = "") -> None:
        super().__init__(message)
        self.source = source


class ConfigError(ToolrigError, ValueError):
    """Something is configured wrongly; the message says what and how to fix it."""


class PolicyConfigError(ConfigError):
    """A policy is configured wrongly (bad rule syntax, empty ``ALLOWED_TOOLS``, unknown names under CI)."""


class MCPConfigError(ConfigError):
    """An MCP target string, an ``mcpServers`` entry or a gateway config is malformed (toolrig.mcp)."""


class RegistryError(ToolrigError):
    """The registry was used in a way it does not allow."""


class ToolNotFoundError(RegistryError, KeyError):
    """No tool, or no matching version, under the requested name."""

    def __str__(self) -> str:  # KeyError quotes its message; we do not want that
        return str(self.args[0]) if self.args else ""


class VersionConflictError(RegistryError):
    """The same name and version is already registered (use ``replace=True``), or a downgrade."""


class SelectorError(RegistryError, ValueError):
    """A version selector cannot be parsed."""


class ToolsetConflictError(ToolrigError):
    """Two toolsets combined into one offer tools with the same name."""


# -- bad input from the model ----------------------------------------------------------------------
class ArgumentsError(ToolrigError, ValueError):
    """Arguments do not match the input schema.

    Attributes:
        errors: one mapping per problem with ``loc`` (path of the field), ``msg`` and ``type``.
    """

    def __init__(self, message: str, errors: Sequence[Mapping[str, Any]] = ()) -> None:
        super().__init__(message)
        self.errors: list[dict[str, Any]] = [dict(e) for e in errors]


class InjectionError(ToolrigError, LookupError):
    """An injected parameter has no value in the current call context."""


class ResultConversionError(ToolrigError, TypeError):
    """A tool returned a value that has no JSON form and no text of its own (``<Thing object at 0x...>``)."""


# -- infrastructure --------------------------------------------------------------------------------
class StateUnavailable(ToolrigError):
    """The shared-state store could not be reached or answered nonsense (an infrastructure fault)."""


class EmbeddingError(ToolrigError):
    """An embedder could not be loaded (the ``embeddings`` extra is missing, a file fails its checksum) or
    returned unusable vectors (wrong shape, not finite)."""


class WorkflowError(ToolrigError):
    """A workflow run cannot be resumed or journaled: an unknown run id, a workflow that is not the one the run
    started with, a journal that cannot be reached or read (toolrig.workflows)."""


class UnshowableRequest(ToolrigError, ValueError):
    """An MCP server asked the client something (a form, a sampling request) that cannot be forwarded so that a
    person sees it as it is: too large, too many fields, hidden characters. The request is declined, not altered."""


class PackageError(ToolrigError, ValueError):
    """A tool package cannot be read: the path is missing, or neither a wheel, an sdist nor a folder
    (:mod:`toolrig.packages`; ``toolrig package`` exits 2)."""


class ManifestError(PackageError):
    """A tool package's ``[tool.toolrig]`` manifest does not say clearly what the package needs."""


class ExecutionError(ToolrigError):
    """The machinery that runs a tool body failed; the body itself may never have run."""

    retryable: bool = False


class CallTimeoutError(ExecutionError, TimeoutError):
    """The runtime's deadline for one attempt of a call passed (carried by ``timeout`` outcomes).

    Attributes:
        seconds: the timeout that applied.
        aftermath: what became of the body (cancelled, process killed, thread still running, ...).
    """

    retryable = True

    def __init__(self, tool: str, seconds: float, aftermath: str = "") -> None:
        message = f"{tool} did not finish within {seconds:g} s"
        super().__init__(f"{message}; {aftermath}" if aftermath else message)
        self.seconds = seconds
        self.aftermath = aftermath


class ExecutorBusyError(ExecutionError):
    """No capacity is left to run the body now (every worker is busy or stuck); try again later."""

    retryable = True


class ExecutorUnavailable(ExecutionError):
    """The executor a tool asks for (``spec.isolation``) is not available in this runtime or machine."""


class SandboxUnavailable(ExecutorUnavailable):
    """No adequate sandbox exists on this machine (or its self-test failed); the code did not run.

    Attributes:
        reason: why, in a sentence a person can act on.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(f"no adequate sandbox: {reason}; the code was not run (it never runs unsandboxed)")
        self.reason = reason


class SandboxError(ExecutionError):
    """The sandbox could not be set up or supervised for one run (bubblewrap failed, ...)."""


class ProcessIsolationError(ExecutionError):
    """A call could not be run in a worker process (the tool cannot be sent, or no worker starts)."""


class WorkerDiedError(ProcessIsolationError):
    """The worker process running a tool died before answering.

    Attributes:
        returncode: the exit code, or minus the number of the signal that killed it.
    """

    def __init__(self, returncode: int) -> None:
        super().__init__(f"the tool's process died: {describe_exit(returncode)}")
        self.returncode = returncode


class RemoteToolError(ExecutionError):
    """A tool body raised in a worker; the exception came back as data (never as a pickle).

    Attributes:
        type_name: the qualified name of the original exception type.
        message: its message.
        traceback: its formatted traceback, as text (for logs; never shown to the model).
        bases: qualified names of the original type's bases (how the retry stage decides by class).
    """

    def __init__(self, type_name: str, message: str, *, traceback: str = "", bases: Sequence[str] = ()) -> None:
        super().__init__(f"{type_name}: {message}" if message else type_name)
        self.type_name = type_name
        self.message = message
        self.traceback = traceback
        self.bases = tuple(bases)


def describe_exit(returncode: int) -> str:
    """``exited with code 3`` or ``killed by signal SIGSEGV (11)``."""
    if returncode >= 0:
        return f"exited with code {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = "unknown signal"
    return f"killed by signal {name} ({-returncode})"


# -- raised inside tool bodies ------------------------------------------------------------------------
class ToolFailure(ToolrigError):
    """Raise inside a tool to fail with a message meant for the model."""

    retryable: bool = False


class ModelRetry(ToolFailure):
    """Raise inside a tool to tell the model to try again differently (e.g. other arguments)."""

    retryable = True


class TransientError(ToolFailure):
    """A passing infrastructure failure; the retry stage retries these by type."""

    retryable = True


class MCPUnavailableError(TransientError):
    """An MCP server cannot be reached now; the request was never sent, so retrying is safe (toolrig.mcp)."""


class MCPCallError(ToolFailure):
    """An MCP server refused a ``tools/call`` at the protocol level: unknown tool, bad params (toolrig.mcp)."""


class MCPMaybeRanError(ToolFailure):
    """The MCP connection dropped after the request went out: the tool may have run, so it is not re-sent."""


class RateLimitedError(TransientError):
    """An upstream service asked us to slow down.

    Attributes:
        retry_after: seconds the upstream asked to wait, when it said.
    """

    def __init__(self, message: str = "rate limited", retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


# -- raised by the guards (toolrig.guards) -------------------------------------------------------------
class ResultTooLargeError(ToolFailure):
    """A tool's answer was larger than a byte limit while it was being read, so it was not read (toolrig.mcp: an
    MCP server's message over its ``max_message_bytes``). Only that call failed; the model should ask for less.

    Attributes:
        limit: the limit in bytes.
        server: where the answer came from (an MCP server's name), or "".
    """

    def __init__(self, message: str, *, limit: int, server: str = "") -> None:
        super().__init__(message)
        self.limit = limit
        self.server = server


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
