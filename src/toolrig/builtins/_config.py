"""Which built-in tools a server exposes: :func:`default_tools` and :func:`tools_from_config`.

Configuration keys (a mapping, e.g. from a ``toolrig.yaml``; every section is ``true``, ``false`` or a
mapping of the options of its factory)::

    root: "."                # the directory of the file tools, documents, shell and bundles
    files: true              # file_tools(root, read_only=..., max_file_bytes=..., max_write_bytes=...,
                             #            max_output_chars=..., max_entries=..., max_matches=...)
    calculator: true
    current_time: true
    documents: false         # document_tool(root, max_bytes=..., max_pages=..., max_rows=..., max_chars=...)
    ocr: false               # ocr_tool(root, max_bytes=..., languages="eng", max_pixels=..., max_pages=...,
                             #          max_images=..., max_chars=..., timeout=..., tesseract=...)
    http_fetch: false        # http_fetch_tool(allow_private=..., max_bytes=..., timeout=..., max_chars=...,
                             #                 allowed_ports=[...], allow_endpoints=[...], allowed_hosts=[...])
    shell: false             # shell_tool(root, allow=[...], ask=[...], deny=[...], timeout=..., max_timeout=...,
                             #            network=..., env={...}, max_output_chars=...)
    python: false            # python_tool(timeout=..., network=..., max_output_chars=...)
    memory: false            # memory_tools(store="path.db" | "redis://..." | "postgresql://...", max_chars=...,
                             #              max_count=..., max_tags=..., share_across_agents=..., require_user=...)
    clarify: false           # clarify_tool(timeout=..., max_chars=..., max_choices=...): asks through MCP elicitation
    crawl: false             # crawl_tool(max_bytes=..., timeout=..., delay=..., max_delay=..., max_pages=...,
                             #            page_chars=..., max_chars=..., allow_private=..., allowed_ports=[...],
                             #            allow_endpoints=[...], allowed_hosts=[...], user_agent=...)
    email: false             # email_tool(smtp_url=..., sender=..., allowed_recipients=[...], password_env=...,
                             #            timeout=..., max_recipients=..., max_subject=..., max_body=...)
    todo: false              # todo_tools(max_items=..., ttl=..., max_sessions=...)
    web_search: false        # {provider: searxng | brave | tavily, url: ..., api_key: ... or api_key_env: NAME,
                             #  max_results: ..., timeout: ..., attempts: ...}
    bundles: []              # YAML command bundles: paths, or {path: ..., allow_unsandboxed: true}

Unknown keys and options are :class:`toolrig.errors.ConfigError` s that name what is accepted.
"""

from __future__ import annotations

import difflib
import inspect
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from toolrig import BaseTool
from toolrig.builtins._bundle import read_bundle
from toolrig.builtins._calculator import calculator
from toolrig.builtins._clarify import clarify_tool
from toolrig.builtins._clock import current_time
from toolrig.builtins._crawl import crawl_tool
from toolrig.builtins._documents import document_tool
from toolrig.builtins._email import email_tool
from toolrig.builtins._fetch import http_fetch_tool
from toolrig.builtins._files import file_tools
from toolrig.builtins._memory import memory_tools
from toolrig.builtins._memstore import default_memory_path
from toolrig.builtins._ocr import ocr_tool
from toolrig.builtins._python import python_tool
from toolrig.builtins._search import BraveProvider, SearchProvider, SearxngProvider, TavilyProvider, web_search_tool
from toolrig.builtins._shell import shell_tool
from toolrig.builtins._todo import todo_tools
from toolrig.errors import ConfigError

__all__ = ["CONFIG_KEYS", "default_tools", "tools_from_config"]


def default_tools(root: str | Path = ".") -> list[BaseTool]:
    """What ``toolrig serve`` exposes with no configuration: the file tools of ``root``, calculator, current_time."""
    return [*file_tools(root), calculator, current_time]


def _provider(options: dict[str, Any]) -> SearchProvider:
    kind = options.pop("provider", None)
    env = options.pop("api_key_env", None)
    key = options.pop("api_key", None) or (os.environ.get(env, "") if isinstance(env, str) else "")
    url = options.pop("url", None)
    if kind == "searxng":
        if not isinstance(url, str):
            raise ConfigError("web_search with provider searxng needs url: the instance's base URL")
        return SearxngProvider(url)
    if kind in ("brave", "tavily"):
        if not key:
            raise ConfigError(f"web_search with provider {kind} needs api_key, or api_key_env naming a variable "
                              "that is set")
        cls = BraveProvider if kind == "brave" else TavilyProvider
        return cls(key, url=url) if url else cls(key)
    raise ConfigError(f"web_search.provider must be searxng, brave or tavily, not {kind!r}")


def _search(root: Path, **options: Any) -> list[BaseTool]:
    provider = _provider(options)
    _check_options("web_search", web_search_tool, options, skip={"provider", "sleep"})
    return [web_search_tool(provider, **options)]


def _bundles(root: Path, entries: Any) -> list[BaseTool]:
    if not isinstance(entries, list):
        raise ConfigError("bundles must be a list of paths or {path, allow_unsandboxed} mappings")
    tools: list[BaseTool] = []
    for entry in entries:
        spec = {"path": entry} if isinstance(entry, str) else dict(entry) if isinstance(entry, Mapping) else None
        if spec is None or not isinstance(spec.get("path"), str) or set(spec) - {"path", "allow_unsandboxed"}:
            raise ConfigError(f"a bundle entry is a path or {{path, allow_unsandboxed}}, not {entry!r}")
        exposed, _hidden = read_bundle(spec["path"], root=root, allow_unsandboxed=bool(spec.get("allow_unsandboxed")))
        tools += exposed
    return tools


def _memory(root: Path, **options: Any) -> list[BaseTool]:
    store = options.get("store")
    store = str(default_memory_path()) if store is None else store
    if isinstance(store, str) and ("://" not in store or store.startswith("sqlite:///")):
        path = Path(store.removeprefix("sqlite:///")).expanduser().resolve()
        if path.is_relative_to(root.expanduser().resolve()):
            raise ConfigError(f"memory: the store {store!r} is inside the root {str(root)!r}, where the file tools "
                              "(and so every caller) could read everyone's memories; put it outside the root")
    return memory_tools(**options)


Section = Callable[..., list[BaseTool]]
_SECTIONS: dict[str, tuple[bool, Section, Callable[..., Any]]] = {
    "files": (True, file_tools, file_tools),
    "calculator": (True, lambda root: [calculator], lambda: None),
    "current_time": (True, lambda root: [current_time], lambda: None),
    "documents": (False, lambda root, **o: [document_tool(root, **o)], document_tool),
    "http_fetch": (False, lambda root, **o: [http_fetch_tool(**o)], http_fetch_tool),
    "shell": (False, lambda root, **o: [shell_tool(root, **o)], shell_tool),
    "python": (False, lambda root, **o: [python_tool(**o)], python_tool),
    "web_search": (False, _search, lambda **o: None),
    "memory": (False, _memory, memory_tools),
    "todo": (False, lambda root, **o: todo_tools(**o), todo_tools),
    "clarify": (False, lambda root, **o: [clarify_tool(**o)], clarify_tool),
    "crawl": (False, lambda root, **o: [crawl_tool(**o)], crawl_tool),
    "email": (False, lambda root, **o: [email_tool(**o)], email_tool),
    "ocr": (False, lambda root, **o: [ocr_tool(root, **o)], ocr_tool),
}
CONFIG_KEYS = frozenset({"root", "bundles", *_SECTIONS})
"""The top-level keys :func:`tools_from_config` accepts."""


_NOT_OPTIONS = ("root", "files", "resolver", "rules", "policy", "sandbox", "limits", "redactor", "ranker", "ask",
                "sleep", "clock")


def _check_options(section: str, factory: Callable[..., Any], options: Mapping[str, Any],
                   skip: Iterable[str] = _NOT_OPTIONS) -> None:
    parameters = inspect.signature(factory).parameters
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return
    known = sorted(set(parameters) - set(skip))
    for key in options:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"its options: {', '.join(known) or 'none'}"
            raise ConfigError(f"{section}: unknown option {key!r}; {hint}")


def _section(name: str, value: Any, root: Path) -> list[BaseTool]:
    enabled_by_default, build, factory = _SECTIONS[name]
    if value is None:
        value = enabled_by_default
    if value is False:
        return []
    if value is True:
        if name == "web_search":
            raise ConfigError("web_search needs a mapping with its provider, e.g. {provider: searxng, url: ...}")
        return build(root)
    if not isinstance(value, Mapping):
        raise ConfigError(f"{name} must be true, false or a mapping of options, not {type(value).__name__}")
    options = dict(value)
    _check_options(name, factory, options)
    try:
        return build(root, **options)
    except TypeError as exc:
        raise ConfigError(f"{name}: {exc}") from None


def tools_from_config(config: Mapping[str, Any] | None = None) -> list[BaseTool]:
    """The built-in tools a configuration enables (see the module docstring for the keys).

    ``tools_from_config({})`` is :func:`default_tools` of the current directory.

    Raises:
        ConfigError: an unknown key or option, a wrong value, a missing root or provider setting.
        DefinitionError: a bundle declares something wrong.
    """
    config = dict(config or {})
    for key in config:
        if key not in CONFIG_KEYS:
            close = difflib.get_close_matches(str(key), sorted(CONFIG_KEYS), n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(sorted(CONFIG_KEYS))}"
            raise ConfigError(f"unknown built-in tools setting {key!r}; {hint}")
    root = Path(str(config.get("root", "."))).expanduser()
    if not root.is_dir():
        raise ConfigError(f"root must be an existing directory, not {str(root)!r}")
    tools: list[BaseTool] = []
    for name in _SECTIONS:
        tools += _section(name, config.get(name), root)
    tools += _bundles(root, config.get("bundles") or [])
    return tools
