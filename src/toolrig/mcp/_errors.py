"""The exceptions of :mod:`toolrig.mcp`, all under :class:`toolrig.ToolrigError`::

    ToolrigError
    ├── MCPConfigError          a target or an ``mcpServers`` config that cannot be used (definition time)
    ├── MCPNameError            a remote tool name refused (spec rule, homoglyph, forged prefix)
    └── ToolFailure
        ├── MCPCallError        the server answered a ``tools/call`` with a protocol error
        ├── MCPMaybeRanError    the connection broke after the call was sent: it may have run, not re-sent
        └── TransientError
            └── MCPUnavailableError  no connection to the server (the call was never sent)
"""

from __future__ import annotations

from toolrig import DefinitionError, ToolFailure, ToolrigError, TransientError

__all__ = ["MCPCallError", "MCPConfigError", "MCPMaybeRanError", "MCPNameError", "MCPUnavailableError"]


class MCPConfigError(DefinitionError):
    """A target string or an ``mcpServers`` entry is malformed; the message says what to change."""


class MCPNameError(ToolrigError):
    """A tool name offered by a server was refused (it is left out of the toolset, with a reason)."""


class MCPCallError(ToolFailure):
    """The server refused a ``tools/call`` at the protocol level (unknown tool, bad params, ...)."""


class MCPMaybeRanError(ToolFailure):
    """The connection dropped after the request went out: the tool may have run, so it is not re-sent."""


class MCPUnavailableError(TransientError):
    """The server cannot be reached now; the request was never sent, so retrying is safe."""
