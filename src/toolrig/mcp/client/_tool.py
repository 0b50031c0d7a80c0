"""A tool offered by an MCP server: :class:`MCPTool`, an ordinary toolrig tool whose body is a ``tools/call``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types

from toolrig import CallContext, SchemaTool, ToolResult, current_context
from toolrig.mcp.client._connection import Connection
from toolrig.mcp.shared import result_from_mcp, spec_options

__all__ = ["MCPTool", "definition_of"]


def definition_of(tool: mcp_types.Tool) -> dict[str, Any]:
    """The full MCP definition of a tool as plain JSON (what pinning hashes and the scan reads)."""
    return tool.model_dump(mode="json", by_alias=True, exclude_none=True)


class MCPTool(SchemaTool):
    """A remote tool: validated locally against the server's input schema, run by the server.

    Attributes:
        remote_name: the name the server knows it by.
        server: the server's name.
        definition: the tool's MCP definition as the server sent it.
    """

    def __init__(self, *, name: str, remote: mcp_types.Tool, server: str, connection: Connection,
                 timeout: float | None, trusted: bool = False) -> None:
        super().__init__(name=name, handler=None, timeout=timeout,
                         **spec_options(remote, server=server, trusted=trusted))
        self.remote_name = remote.name
        self.server = server
        self.definition = definition_of(remote)
        self._connection = connection
        self._timeout = timeout

    @property
    def is_async(self) -> bool:
        return True

    async def invoke(self, values: Mapping[str, Any], ctx: CallContext | None = None) -> ToolResult:
        ctx = ctx if ctx is not None else current_context()
        if self._timeout is None:
            result = await self._connection.call_tool(self.remote_name, values, ctx)
        else:
            with anyio.fail_after(self._timeout):
                result = await self._connection.call_tool(self.remote_name, values, ctx)
        return result_from_mcp(result)

    def invoke_sync(self, values: Mapping[str, Any], ctx: CallContext | None = None) -> Any:
        raise RuntimeError(f"{self.name} is an MCP tool: call it from the event loop that opened its toolset "
                           "(await runtime.call(...)), not from a thread or another loop")
