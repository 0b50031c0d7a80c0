"""toolrig.builtins exports exactly its public names (checked against vars(), not a copied list), documented."""

from __future__ import annotations

import inspect

import toolrig.builtins as builtins_pkg
from toolrig import BaseTool


def test_all_is_sorted_unique_and_resolves() -> None:
    assert len(set(builtins_pkg.__all__)) == len(builtins_pkg.__all__)
    for name in builtins_pkg.__all__:
        assert getattr(builtins_pkg, name) is not None, name


def test_every_public_object_defined_in_the_package_is_exported() -> None:
    stray = sorted(name for name, value in vars(builtins_pkg).items()
                   if not name.startswith("_") and getattr(value, "__module__", "").startswith("toolrig.builtins.")
                   and name not in builtins_pkg.__all__)
    assert stray == []


def test_public_names_have_docstrings_and_the_issue_names_exist() -> None:
    for name in builtins_pkg.__all__:
        value = getattr(builtins_pkg, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert (value.__doc__ or "").strip(), name
    for name in ("file_tools", "shell_tool", "python_tool", "http_fetch_tool", "web_search_tool", "document_tool",
                 "default_tools", "tools_from_config", "load_bundle", "memory_tools", "todo_tools", "clarify_tool",
                 "crawl_tool", "email_tool", "ocr_tool"):
        assert callable(getattr(builtins_pkg, name))
    assert isinstance(builtins_pkg.calculator, BaseTool) and isinstance(builtins_pkg.current_time, BaseTool)


def test_the_registry_method_delegates_to_the_package() -> None:
    from toolrig import Registry

    assert "toolrig.builtins.load_bundle" in (Registry.load_bundle.__doc__ or "")
