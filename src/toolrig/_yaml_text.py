"""A YAML parse error as one line a person can act on: where (line and column, from 1) and what is wrong."""

from __future__ import annotations

__all__ = ["yaml_problem"]


def yaml_problem(exc: BaseException) -> str:
    """``exc`` (a ``yaml.YAMLError``) as one line: ``line 4, column 4: expected <block end>, but found '-'
    (while parsing a block mapping that starts at line 2, column 3)``.

    PyYAML's own text spans several lines and points into ``"<unicode string>"``; error messages of toolrig are one
    line, naming the file themselves."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is None or not problem:
        return " ".join(str(exc).split())
    text = f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
    context = getattr(exc, "context", None)
    context_mark = getattr(exc, "context_mark", None)
    if context and context_mark is not None:
        text += f" ({context} that starts at line {context_mark.line + 1}, column {context_mark.column + 1})"
    elif context:
        text += f" ({context})"
    return " ".join(text.split())
