"""The exception tree of toolrig.

Exceptions are for the inside of the library; at the tool boundary every failure becomes a
:class:`toolrig.ToolOutcome` with an error kind. The tree::

    ToolrigError
    ├── DefinitionError          a developer mistake found while defining a tool (fails loudly)
    │   └── LoadError            a file, module or plugin could not be loaded (toolrig.loading)
    ├── RegistryError            registry misuse
    │   ├── ToolNotFoundError    no tool (or version) under that name
    │   ├── VersionConflictError same name and version registered twice, or a downgrade
    │   └── SelectorError        a malformed version selector (toolrig._versions)
    ├── ToolsetConflictError     two toolsets offer the same tool name
    ├── ArgumentsError           arguments do not match the tool's input schema
    └── ToolFailure              raised *inside* a tool body: a model-visible failure
        ├── ModelRetry           the model should call again with other arguments
        └── TransientError       infrastructure hiccup worth retrying (network, 5xx, ...)
            └── RateLimitedError an upstream said "slow down"
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "ArgumentsError",
    "DefinitionError",
    "ModelRetry",
    "RateLimitedError",
    "RegistryError",
    "ToolFailure",
    "ToolNotFoundError",
    "ToolrigError",
    "ToolsetConflictError",
    "TransientError",
    "VersionConflictError",
]


class ToolrigError(Exception):
    """Base class of every exception toolrig raises on purpose."""


class DefinitionError(ToolrigError, TypeError):
    """A tool definition is wrong; the message says what to change."""


class RegistryError(ToolrigError):
    """The registry was used in a way it does not allow."""


class ToolNotFoundError(RegistryError, KeyError):
    """No tool, or no matching version, under the requested name."""

    def __str__(self) -> str:  # KeyError quotes its message; we do not want that
        return str(self.args[0]) if self.args else ""


class VersionConflictError(RegistryError):
    """The same name and version is already registered (use ``replace=True``), or a downgrade."""


class ToolsetConflictError(ToolrigError):
    """Two toolsets combined into one offer tools with the same name."""


class ArgumentsError(ToolrigError, ValueError):
    """Arguments do not match the input schema.

    Attributes:
        errors: one mapping per problem with ``loc`` (path of the field), ``msg`` and ``type``.
    """

    def __init__(self, message: str, errors: Sequence[Mapping[str, Any]] = ()) -> None:
        super().__init__(message)
        self.errors: list[dict[str, Any]] = [dict(e) for e in errors]


class ToolFailure(ToolrigError):
    """Raise inside a tool to fail with a message meant for the model."""

    retryable: bool = False


class ModelRetry(ToolFailure):
    """Raise inside a tool to tell the model to try again differently (e.g. other arguments)."""

    retryable = True


class TransientError(ToolFailure):
    """A passing infrastructure failure; the retry stage retries these by type."""

    retryable = True


class RateLimitedError(TransientError):
    """An upstream service asked us to slow down.

    Attributes:
        retry_after: seconds the upstream asked to wait, when it said.
    """

    def __init__(self, message: str = "rate limited", retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
