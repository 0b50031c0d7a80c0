"""The ``toolrig serve`` gateway: upstream servers, Python tools and built-ins as one reviewed MCP server
(:class:`Gateway`), its config and schema, launch decisions, pins, the poisoning scan and the startup report.

Other parts of :mod:`toolrig.mcp` import this package's names from here, never its private modules."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolrig.mcp.gateway._config import GatewayConfig, config_from_mapping, load_gateway_config
    from toolrig.mcp.gateway._gateway import Gateway
    from toolrig.mcp.gateway._launch import LaunchAsker, LaunchPlan, launch_targets
    from toolrig.mcp.gateway._pins import (
        STATE_ENV,
        Pin,
        PinKind,
        PinStatus,
        PinStore,
        canonical_definition,
        definition_hash,
        open_pins,
    )
    from toolrig.mcp.gateway._report import startup_report, startup_text
    from toolrig.mcp.gateway._review import Blocked, PinMode
    from toolrig.mcp.gateway._scan import ScanReport, scan_definition, scan_prompt, scan_resource, scan_tool
    from toolrig.mcp.gateway._toolset import GatewayToolset
    from toolrig.mcp.gateway._upstream import UpstreamContent, list_offers

# Served lazily: importing one name loads only the module that defines it.
_LAZY = {
    "GatewayConfig": "toolrig.mcp.gateway._config",
    "config_from_mapping": "toolrig.mcp.gateway._config",
    "load_gateway_config": "toolrig.mcp.gateway._config",
    "Gateway": "toolrig.mcp.gateway._gateway",
    "LaunchAsker": "toolrig.mcp.gateway._launch",
    "LaunchPlan": "toolrig.mcp.gateway._launch",
    "launch_targets": "toolrig.mcp.gateway._launch",
    "Pin": "toolrig.mcp.gateway._pins",
    "PinKind": "toolrig.mcp.gateway._pins",
    "PinStatus": "toolrig.mcp.gateway._pins",
    "PinStore": "toolrig.mcp.gateway._pins",
    "STATE_ENV": "toolrig.mcp.gateway._pins",
    "canonical_definition": "toolrig.mcp.gateway._pins",
    "definition_hash": "toolrig.mcp.gateway._pins",
    "open_pins": "toolrig.mcp.gateway._pins",
    "startup_report": "toolrig.mcp.gateway._report",
    "startup_text": "toolrig.mcp.gateway._report",
    "Blocked": "toolrig.mcp.gateway._review",
    "PinMode": "toolrig.mcp.gateway._review",
    "ScanReport": "toolrig.mcp.gateway._scan",
    "scan_definition": "toolrig.mcp.gateway._scan",
    "scan_prompt": "toolrig.mcp.gateway._scan",
    "scan_resource": "toolrig.mcp.gateway._scan",
    "scan_tool": "toolrig.mcp.gateway._scan",
    "GatewayToolset": "toolrig.mcp.gateway._toolset",
    "UpstreamContent": "toolrig.mcp.gateway._upstream",
    "list_offers": "toolrig.mcp.gateway._upstream",
}


def __getattr__(name: str) -> Any:
    import importlib

    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "STATE_ENV",
    "Blocked",
    "Gateway",
    "GatewayConfig",
    "GatewayToolset",
    "LaunchAsker",
    "LaunchPlan",
    "Pin",
    "PinKind",
    "PinMode",
    "PinStatus",
    "PinStore",
    "ScanReport",
    "UpstreamContent",
    "canonical_definition",
    "config_from_mapping",
    "definition_hash",
    "launch_targets",
    "list_offers",
    "load_gateway_config",
    "open_pins",
    "scan_definition",
    "scan_prompt",
    "scan_resource",
    "scan_tool",
    "startup_report",
    "startup_text",
]
