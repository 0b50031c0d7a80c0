"""default_tools and tools_from_config: what toolrig serve exposes, and every configuration mistake."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from toolrig import Permission
from toolrig.builtins import CONFIG_KEYS, default_tools, tools_from_config
from toolrig.errors import ConfigError

FILES = ["read_file", "write_file", "edit_file", "list_dir", "glob", "grep"]


def names(tools: list) -> list[str]:  # type: ignore[type-arg]
    return [t.name for t in tools]


def test_default_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert names(default_tools(tmp_path)) == [*FILES, "calculator", "current_time"]
    monkeypatch.chdir(tmp_path)
    assert names(tools_from_config({})) == names(default_tools())
    assert names(tools_from_config(None)) == names(default_tools())


def test_everything_enabled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_BRAVE_KEY", "secret")
    bundle = tmp_path / "tools.yaml"
    bundle.write_text(yaml.safe_dump({"tools": {"hello": {"docstring": "Say hello.", "command": ["echo", "hi"]}}}))
    config = {
        "root": str(tmp_path),
        "files": {"read_only": True, "max_output_chars": 5000},
        "calculator": False,
        "documents": {"max_pages": 10},
        "http_fetch": {"allow_private": False, "max_bytes": 100_000},
        "shell": {"allow": ["git status", "ls *"], "timeout": 10},
        "python": {"timeout": 5},
        "web_search": {"provider": "brave", "api_key_env": "TEST_BRAVE_KEY", "max_results": 3},
        "bundles": [str(bundle)],
    }
    tools = {t.name: t for t in tools_from_config(config)}
    assert list(tools) == ["read_file", "list_dir", "glob", "grep", "current_time", "read_document", "http_fetch",
                           "shell", "python", "web_search", "hello"]
    assert tools["shell"].spec.permission is Permission.WRITE
    assert tools["read_file"].max_chars == 5000 and tools["web_search"].max_results == 3
    assert "secret" not in repr(tools["web_search"].provider)


@pytest.mark.parametrize(("config", "words"), [
    ({"shel": True}, "did you mean 'shell'"),
    ({"files": {"max_bytes": 1}}, "unknown option 'max_bytes'"),
    ({"shell": {"alow": ["ls"]}}, "did you mean 'allow'"),
    ({"shell": "yes"}, "must be true, false or a mapping"),
    ({"web_search": True}, "needs a mapping with its provider"),
    ({"web_search": {"provider": "google"}}, "searxng, brave or tavily"),
    ({"web_search": {"provider": "searxng"}}, "needs url"),
    ({"web_search": {"provider": "tavily", "api_key_env": "TOOLRIG_UNSET_VARIABLE"}}, "needs api_key"),
    ({"web_search": {"provider": "searxng", "url": "http://localhost:8888", "retries": 2}}, "unknown option"),
    ({"root": "/nonexistent/dir"}, "existing directory"),
    ({"bundles": "tools.yaml"}, "must be a list"),
    ({"bundles": [{"path": "x", "sandbox": False}]}, "a bundle entry"),
])
def test_mistakes_are_config_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: dict[str, object],
                                    words: str) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TOOLRIG_UNSET_VARIABLE", raising=False)
    with pytest.raises(ConfigError, match=words):
        tools_from_config(config)


def test_the_documented_keys() -> None:
    assert {"root", "files", "calculator", "current_time", "documents", "http_fetch", "shell",
                           "python", "web_search", "bundles", "memory", "todo", "clarify", "crawl", "email",
                           "ocr"} == CONFIG_KEYS
