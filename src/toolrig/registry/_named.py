"""Named toolsets inside a registry: lists of tool names or globs, with recursive ``includes``.

Resolution is lazy (a definition may name tools and toolsets registered later) and safe:

- ``"all"`` or ``"*"`` (as a toolset name, or as an entry of ``tools``) mean every registered tool;
  any entry with ``*``, ``?`` or ``[`` is a glob over registered names.
- Includes are followed recursively. A cycle (``a`` includes ``b`` includes ``a``) is allowed and
  resolves to the union of everything on it; a diamond yields each name once.
- A plain entry naming a tool that is not registered raises :class:`~toolrig.ToolNotFoundError`
  (listing the closest names) when ``strict`` (the default); an unknown include always raises.
"""

from __future__ import annotations

import difflib
import fnmatch
import threading
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from toolrig._spec import check_name
from toolrig.errors import RegistryError, ToolNotFoundError

__all__ = ["ALL", "NamedToolsets", "ToolsetDefinition"]

ALL = frozenset({"all", "*"})
"""Names meaning "every registered tool"."""

_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True, kw_only=True)
class ToolsetDefinition:
    """One named toolset: tool names or globs, plus names of toolsets it includes."""

    name: str
    tools: tuple[str, ...] = ()
    includes: tuple[str, ...] = ()
    description: str = ""


class NamedToolsets:
    """A thread-safe table of :class:`ToolsetDefinition` and their resolution."""

    def __init__(self) -> None:
        self._defs: dict[str, ToolsetDefinition] = {}
        self._lock = threading.Lock()

    def define(self, definition: ToolsetDefinition, *, replace: bool = False) -> None:
        """Add a definition.

        Raises:
            RegistryError: the name is reserved or already defined (without ``replace``).
        """
        check_name(definition.name, what="toolset name")
        for entry in (*definition.tools, *definition.includes):
            if not isinstance(entry, str):
                raise RegistryError(f"toolset {definition.name!r}: entries must be strings, got {entry!r}")
        if definition.name in ALL:
            raise RegistryError(f"toolset name {definition.name!r} is reserved: it means every tool")
        with self._lock:
            if definition.name in self._defs and not replace:
                raise RegistryError(f"toolset {definition.name!r} is already defined; pass replace=True")
            self._defs[definition.name] = definition

    def remove(self, name: str) -> None:
        """Forget a definition (KeyError if unknown)."""
        with self._lock:
            del self._defs[name]

    def names(self) -> list[str]:
        """Defined toolset names, sorted."""
        with self._lock:
            return sorted(self._defs)

    def get(self, name: str) -> ToolsetDefinition | None:
        """The definition called ``name``, or None."""
        with self._lock:
            return self._defs.get(name)

    def exists(self, name: str) -> bool:
        """True for a defined name or one of :data:`ALL`."""
        return name in ALL or self.get(name) is not None

    def resolve(self, name: str, registered: Collection[str], *, strict: bool = True) -> list[str]:
        """The sorted tool names of toolset ``name``, given the ``registered`` tool names."""
        if name in ALL:
            return sorted(registered)
        with self._lock:
            defs = dict(self._defs)
        if name not in defs:
            raise RegistryError(_unknown(name, defs, ""))
        known = set(registered)
        out: set[str] = set()
        seen: set[str] = set()
        stack = [name]
        while stack:
            current = stack.pop()
            if current in seen:
                continue  # cycles and diamonds: each toolset is expanded once
            seen.add(current)
            definition = defs[current]
            out.update(_expand(definition, known, strict=strict))
            for inc in definition.includes:
                if inc in ALL:
                    out.update(known)
                elif inc not in defs:
                    raise RegistryError(_unknown(inc, defs, f" (included by {current!r})"))
                else:
                    stack.append(inc)
        return sorted(out)


def _expand(definition: ToolsetDefinition, known: set[str], *, strict: bool) -> Iterable[str]:
    for entry in definition.tools:
        if entry in ALL:
            yield from known
        elif _GLOB_CHARS & set(entry):
            yield from fnmatch.filter(known, entry)
        elif entry in known:
            yield entry
        elif strict:
            close = difflib.get_close_matches(entry, known, n=5, cutoff=0.5)
            hint = f"; closest: {', '.join(close)}" if close else ""
            raise ToolNotFoundError(f"toolset {definition.name!r} names tool {entry!r}, which is not registered{hint}")


def _unknown(name: str, defs: Collection[str], where: str) -> str:
    close = difflib.get_close_matches(name, list(defs), n=5, cutoff=0.5)
    hint = f"; closest: {', '.join(close)}" if close else f"; defined: {', '.join(sorted(defs)) or '(none)'}"
    return f"unknown toolset {name!r}{where}{hint}"
