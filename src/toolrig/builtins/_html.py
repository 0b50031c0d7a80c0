"""HTML to readable text: block structure, headings, list items, table cells and links kept.

Parsing is selectolax's (the Lexbor HTML5 engine: fast, no dependencies, parses pages nested 100,000
deep); this module only walks the tree, iteratively (no recursion limit), dropping scripts, styles,
templates, forms' hidden parts and comments, and writing block elements on lines of their own.
"""

from __future__ import annotations

import re
from typing import Any

from selectolax.lexbor import LexborHTMLParser

__all__ = ["html_to_text"]

_SKIP = frozenset({"script", "style", "noscript", "template", "head", "svg", "math", "iframe", "object",
                   "canvas", "select", "button", "input", "textarea"})
_BLOCK = frozenset({"address", "article", "aside", "blockquote", "body", "dd", "details", "dialog", "div", "dl",
                    "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "html", "li",
                    "main", "nav", "ol", "p", "section", "summary", "table", "tbody", "thead", "tfoot", "tr",
                    "ul", "caption", "h1", "h2", "h3", "h4", "h5", "h6", "pre"})
_CELLS = frozenset({"td", "th"})
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")
_BLANKS = re.compile(r"\n{3,}")
_KEEP, _BREAK = "\x02", "\x01"
_MARKERS = {ord(_KEEP): None, ord(_BREAK): None}


class _Writer:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pre = 0

    def text(self, value: str) -> None:
        value = value.translate(_MARKERS)
        if self.pre:  # kept verbatim: its line breaks and indentation survive the line clean-up below
            self.parts.append(_KEEP + value.replace("\n", _BREAK))
        else:
            self.parts.append(_SPACES.sub(" ", value.replace("\n", " ")))

    def line(self, blank: bool = False) -> None:
        self.parts.append("\n\n" if blank else "\n")

    def result(self) -> str:
        lines = [line.strip() for line in "".join(self.parts).split("\n")]
        text = _BLANKS.sub("\n\n", "\n".join(lines)).strip()
        return text.replace(_BREAK, "\n").replace(_KEEP, "")


def _enter(node: Any, out: _Writer) -> str | None:
    """Write what an element starts with; return what it ends with (None: nothing)."""
    tag = node.tag
    if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
        out.line(True)
        out.text("#" * int(tag[1]) + " ")
        return "\n\n"
    if tag == "li":
        out.line()
        out.text("- ")
        return None
    if tag == "br":
        out.line()
        return None
    if tag in _CELLS:
        out.text(" | ")
        return None
    if tag == "pre":
        out.line(True)
        out.pre += 1
        return "\npre"
    if tag == "a":
        href = (node.attributes.get("href") or "").strip()
        return f" ({href})" if href.startswith(("http://", "https://")) else None
    if tag == "tr":
        out.line()
        return None
    if tag in _BLOCK:
        out.line(tag in ("p", "table", "blockquote"))
        return "\n\n" if tag in ("p", "table", "blockquote") else "\n"
    return None


def html_to_text(html: str) -> str:
    """The text of an HTML document, one block per line, links as ``text (url)``."""
    tree = LexborHTMLParser(html)
    start = tree.root
    if start is None:
        return ""
    out = _Writer()
    stack: list[tuple[Any, str | None]] = [(start, None)]
    while stack:
        node, closing = stack.pop()
        if closing is not None:  # leaving an element
            if closing == "\npre":
                out.pre -= 1
                out.line(True)
            else:
                out.parts.append(closing)
            continue
        if node.tag == "-text":
            out.text(node.text_content or "")
            continue
        if node.tag in _SKIP or node.tag == "_comment" or node.tag.startswith("-"):
            continue
        ending = _enter(node, out)
        stack.append((node, ending if ending is not None else ""))
        children = []
        child = node.child
        while child is not None:
            children.append(child)
            child = child.next
        stack.extend((c, None) for c in reversed(children))
    return out.result()
