"""Built-in tools, each with an honest permission level, and tools declared in YAML bundles.

- Files confined to a root: :func:`file_tools` (``read_file``, ``write_file``, ``edit_file``, ``list_dir``,
  ``glob``, ``grep``); documents: :func:`document_tool` (``read_document``).
- Computation and time: :data:`calculator`, :data:`current_time`.
- The web: :func:`http_fetch_tool` (SSRF-safe), :func:`web_search_tool` with :class:`SearxngProvider`,
  :class:`BraveProvider` or :class:`TavilyProvider`.
- Sandboxed execution: :func:`shell_tool`, :func:`python_tool`.
- YAML command tools: :func:`load_bundle` (also ``Registry.load_bundle``).
- Configuration: :func:`default_tools` (what ``toolrig serve`` exposes by default), :func:`tools_from_config`;
  which folder may be a root when nobody chose one: :func:`implicit_root_problem`, :func:`is_project_folder`.

Tools whose risk depends on their arguments (protected file names, shell commands) review their own
calls (:meth:`toolrig.BaseTool.review`): the runtime's approval stage asks a human, and the body does the
protected part only when ``current_context().approved``. See ``docs/builtins.md``.
"""

from __future__ import annotations

from toolrig.builtins._bundle import load_bundle, read_bundle
from toolrig.builtins._calculator import MAX_INT_BITS, calculator, evaluate
from toolrig.builtins._clarify import AskCallback, AskUser, UserAsker, clarify_tool, find_asker
from toolrig.builtins._clock import current_time, time_in
from toolrig.builtins._config import CONFIG_KEYS, default_tools, tools_from_config
from toolrig.builtins._confined import Confined
from toolrig.builtins._crawl import Crawl, crawl_tool
from toolrig.builtins._documents import ReadDocument, document_tool
from toolrig.builtins._email import SendEmail, email_tool
from toolrig.builtins._fetch import HttpFetch, http_fetch_tool
from toolrig.builtins._files import file_tools
from toolrig.builtins._html import html_to_text
from toolrig.builtins._memory import Bm25Ranker, Forget, Memories, Ranker, Recall, Remember, memory_tools
from toolrig.builtins._memstore import (
    MemoryRecord,
    MemoryStore,
    SqliteMemoryStore,
    default_memory_path,
)
from toolrig.builtins._memstores import open_memory_store
from toolrig.builtins._ocr import ReadImageText, ocr_tool, sniff_image
from toolrig.builtins._python import PythonTool, python_tool
from toolrig.builtins._roots import PROJECT_MARKERS, implicit_root_problem, is_project_folder
from toolrig.builtins._search import (
    BraveProvider,
    SearchProvider,
    SearchResult,
    SearxngProvider,
    TavilyProvider,
    WebSearch,
    web_search_tool,
)
from toolrig.builtins._shell import SHELL_ENV, Shell, shell_tool
from toolrig.builtins._todo import TodoItem, TodoRead, TodoWrite, todo_tools

__all__ = [
    "CONFIG_KEYS",
    "MAX_INT_BITS",
    "PROJECT_MARKERS",
    "SHELL_ENV",
    "AskCallback",
    "AskUser",
    "Bm25Ranker",
    "BraveProvider",
    "Confined",
    "Crawl",
    "Forget",
    "HttpFetch",
    "Memories",
    "MemoryRecord",
    "MemoryStore",
    "PythonTool",
    "Ranker",
    "ReadDocument",
    "ReadImageText",
    "Recall",
    "Remember",
    "SearchProvider",
    "SearchResult",
    "SearxngProvider",
    "SendEmail",
    "Shell",
    "SqliteMemoryStore",
    "TavilyProvider",
    "TodoItem",
    "TodoRead",
    "TodoWrite",
    "UserAsker",
    "WebSearch",
    "calculator",
    "clarify_tool",
    "crawl_tool",
    "current_time",
    "default_memory_path",
    "default_tools",
    "document_tool",
    "email_tool",
    "evaluate",
    "file_tools",
    "find_asker",
    "html_to_text",
    "http_fetch_tool",
    "implicit_root_problem",
    "is_project_folder",
    "load_bundle",
    "memory_tools",
    "ocr_tool",
    "open_memory_store",
    "python_tool",
    "read_bundle",
    "shell_tool",
    "sniff_image",
    "time_in",
    "todo_tools",
    "tools_from_config",
    "web_search_tool",
]
