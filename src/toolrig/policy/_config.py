"""Loading a :class:`Policy` from a YAML or JSON file (``toolrig policy ... --config FILE``).

Keys: ``preset``, ``allow``, ``ask``, ``deny``, ``layers`` (list of ``{name?, agent?, role?, user?,
allow?, ask?, deny?}``; ``group`` for ``role``), ``owners``, ``toolsets`` (or ``groups``), ``trusted``,
``allowed_tools`` (absent: the
``ALLOWED_TOOLS`` environment variable) and ``tools`` (where the tools are, read by :func:`load_policy`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from toolrig._yaml_text import yaml_problem
from toolrig.policy._policy import ENV, Policy
from toolrig.policy._rules import PolicyConfigError
from toolrig.toolsets import Toolset

__all__ = ["load_policy", "policy_from_mapping"]

_KEYS = frozenset({"preset", "allow", "ask", "deny", "layers", "owners", "toolsets", "groups", "trusted",
                   "allowed_tools", "tools"})


def policy_from_mapping(data: Mapping[str, Any], *, tools: Toolset | Iterable[Any] | None = None) -> Policy:
    """A Policy from a config mapping (the ``tools`` key is ignored here; pass ``tools``).

    Raises:
        PolicyConfigError: unknown keys or values of the wrong shape.
    """
    if not isinstance(data, Mapping):
        raise PolicyConfigError(f"a policy config must be a mapping, got {type(data).__name__}")
    unknown = set(data) - _KEYS
    if unknown:
        raise PolicyConfigError(f"unknown policy config keys: {', '.join(sorted(unknown))}")
    for key in ("allow", "ask", "deny", "trusted", "layers", "allowed_tools"):
        if not isinstance(data.get(key, []), list | None if key == "allowed_tools" else list):
            raise PolicyConfigError(f"policy config {key!r} must be a list")
    return Policy(str(data.get("preset", "default")), allow=data.get("allow", ()), ask=data.get("ask", ()),
                  deny=data.get("deny", ()), layers=data.get("layers", ()), owners=data.get("owners"),
                  toolsets=data.get("toolsets"), groups=data.get("groups"), trusted=data.get("trusted", ()),
                  allowed_tools=data.get("allowed_tools", ENV), tools=tools)


def load_policy(path: str | Path, *, tools: Toolset | Iterable[Any] | None = None) -> Policy:
    """Read a YAML (or JSON) policy file.

    Without ``tools``, the file's ``tools`` key (a file, directory or module name; a path is relative to
    the policy file) says where the tools are, for :meth:`Policy.explain` and :meth:`Policy.lint`.

    Raises:
        PolicyConfigError: the file cannot be read or parsed, its content is not a valid policy, or its
            tools cannot be loaded.
    """
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise PolicyConfigError(f"cannot read policy config {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise PolicyConfigError(f"{path}: not valid YAML: {yaml_problem(exc)}") from None
    data = data or {}
    if tools is None and isinstance(data, Mapping) and data.get("tools") is not None:
        tools = _load_tools(data["tools"], Path(path).parent)
    return policy_from_mapping(data, tools=tools)


def _load_tools(source: Any, base: Path) -> list[Any]:
    from toolrig.loading import LoadError, load_source

    if not isinstance(source, str) or not source:
        raise PolicyConfigError(f"policy config 'tools' must be a file, directory or module name, got {source!r:.80}")
    path = Path(source).expanduser()
    path = path if path.is_absolute() else base / path
    try:
        return load_source(path if path.exists() else source)
    except LoadError as exc:
        raise PolicyConfigError(f"policy config 'tools': {exc}") from exc
    except Exception as exc:  # the user's module may raise anything at import time
        raise PolicyConfigError(f"policy config 'tools': cannot load {source}: {type(exc).__name__}: {exc}") from exc
