"""The gateway's own tools: the built-ins of ``[builtins]`` (and the folder they work in) and the workflows of
``[workflows]``, as :class:`~toolrig.mcp.gateway.Gateway` serves them beside the upstream servers' tools."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolrig.errors import MCPConfigError
from toolrig.mcp.gateway._config import GatewayConfig
from toolrig.toolsets import FunctionToolset, Toolset

if TYPE_CHECKING:
    from toolrig.workflows import WorkflowTool

__all__ = ["builtin_root", "builtin_tools", "workflow_tools_of"]


def workflow_tools_of(config: GatewayConfig, local: list[Toolset]) -> list[WorkflowTool]:
    """The workflows of ``[workflows]`` as tools (their permission and trust read from the local tools).

    Raises:
        MCPConfigError: a bad ``[workflows]`` table, a pattern matching no file, an invalid workflow file.
    """
    if not config.workflows:
        return []
    from pydantic import ValidationError

    from toolrig.errors import DefinitionError
    from toolrig.toolsets import CombinedToolset
    from toolrig.workflows import workflow_tools

    try:
        return workflow_tools(config.workflows, config.base, CombinedToolset(local, on_conflict="first"))
    except (DefinitionError, ValidationError) as exc:
        raise MCPConfigError(f"[workflows]: {' '.join(str(exc).split())}") from exc


_ROOTED = ("files", "documents", "shell", "bundles")
"""The ``[builtins]`` sections that work in the root (files is on by default)."""


def builtin_root(section: Mapping[str, Any] | None, config: GatewayConfig) -> dict[str, Any] | None:
    """Where the built-in tools of ``section`` work, as the startup report shows it (None: no tool uses a root).

    ``path`` is resolved against the config file's folder (the current directory without a file); ``explicit``
    when ``[builtins] root`` (or ``toolrig serve --root``) named it; ``project`` when it is a project folder
    (see :mod:`toolrig.builtins._roots`) or explicit; ``writes_ask`` when the file tools' writes ask first;
    ``warning`` when it is the filesystem root, a home or a system folder (only possible when explicit).

    Raises:
        MCPConfigError: the root was not given explicitly and is the filesystem root, the home directory or a
            system folder.
    """
    from toolrig.builtins import implicit_root_problem, is_project_folder

    if section is None or not any(section.get(k, k == "files") not in (None, False, []) for k in _ROOTED):
        return None
    explicit = "root" in section
    path = config.path(str(section.get("root", "."))).resolve()
    problem = implicit_root_problem(path)
    if problem and not explicit:
        started = "the folder toolrig serve was started in" if config.source == "(defaults)" else (
            f"the folder of {config.source}")
        raise MCPConfigError(
            f"will not serve the file tools on {path}: {problem}, and nobody chose it (it is {started}; desktop "
            "clients often start servers in / or your home directory). Pass --root FOLDER, the folder the tools "
            "may work in (or set [builtins] root in the config); an explicit --root may be any folder.")
    project = explicit or is_project_folder(path)
    files = section.get("files", True)
    writes = files is True or (isinstance(files, Mapping) and not files.get("read_only", False))
    return {"path": str(path), "explicit": explicit, "project": project, "writes_ask": writes and not project,
            "warning": f"{problem}: the tools reach everything under it" if problem else None}


def builtin_tools(section: Mapping[str, Any] | None, config: GatewayConfig, root: Mapping[str, Any] | None
                   ) -> Toolset | None:
    """The built-in tools of ``[builtins]`` (None: none), as :func:`toolrig.builtins.tools_from_config` builds them.

    ``root`` is resolved against the config file's folder (the current directory without a file); see
    :func:`builtin_root` for the roots that are refused and the writes that ask.

    Raises:
        MCPConfigError: an unknown key or option, a wrong value, a root that is not a directory or is refused.
    """
    if section is None:
        return None
    from toolrig.builtins import tools_from_config
    from toolrig.errors import ConfigError, DefinitionError

    settings = {**section, "root": str(config.path(str(section.get("root", "."))))}
    if root is not None and root["writes_ask"]:
        files = section.get("files", True)
        settings["files"] = {**(files if isinstance(files, Mapping) else {}), "ask_writes": True}
    try:
        return FunctionToolset(tools_from_config(settings))
    except (ConfigError, DefinitionError) as exc:
        raise MCPConfigError(f"[builtins]: {exc}") from exc
