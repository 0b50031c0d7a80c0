"""Tools shared by the policy tests (defined, never run for real)."""

from __future__ import annotations

from toolrig import tool
from toolrig._spec import ToolAnnotations


@tool(permission="readonly")
def read_file(path: str) -> str:
    """Read a file."""
    return f"content of {path}"


@tool(permission="readonly")
def read_dir(path: str) -> str:
    """List a directory."""
    return f"listing of {path}"


@tool(permission="write")
def write_file(path: str, text: str) -> str:
    """Write a file."""
    return "written"


@tool(permission="destructive")
def delete_file(path: str) -> str:
    """Delete a file."""
    return "deleted"


@tool(permission="system")
def shell(command: str) -> str:
    """Run a shell command (the tests never run it for real)."""
    return f"ran {command}"


@tool(permission="readonly", trust="external", annotations=ToolAnnotations(read_only_hint=True))
def mcp_lookup(query: str) -> str:
    """A tool from an MCP server that claims to be read-only."""
    return "looked up"


TOOLS = [read_file, read_dir, write_file, delete_file, shell, mcp_lookup]
