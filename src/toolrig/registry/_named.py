"""Named toolsets inside a registry: lists of tool names or globs, with recursive ``includes``.

Resolution is lazy (a definition may name tools and toolsets registered later) and safe:

- ``"all"`` or ``"*"`` (as a toolset name, or as an entry of ``tools``) mean every registered tool;
  any entry with ``*``, ``?`` or ``[`` is a glob over registered names.
- Includes are followed recursively. A cycle (``a`` includes ``b`` includes ``a``, or ``a`` includes
  itself) is a mistake in the definitions: resolving any toolset that reaches it raises
  :class:`~toolrig.DefinitionError` naming the cycle (``a -> b -> a``). A diamond (two includes reaching
  the same toolset) is not a cycle: it yields each name once.
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
from toolrig.errors import DefinitionError, RegistryError, ToolNotFoundError

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
        """The sorted tool names of toolset ``name``, given the ``registered`` tool names.

        Raises:
            RegistryError: ``name``, or a toolset it includes, is not defined.
            DefinitionError: the includes reached from ``name`` form a cycle (the message names it).
            ToolNotFoundError: with ``strict``, an entry names a tool that is not registered.
        """
        if name in ALL:
            return sorted(registered)
        with self._lock:
            defs = dict(self._defs)
        if name not in defs:
            raise RegistryError(_unknown(name, defs, ""))
        known = set(registered)
        out: set[str] = set()
        for current in _reached(name, defs):
            definition = defs[current]
            out.update(_expand(definition, known, strict=strict))
            if any(inc in ALL for inc in definition.includes):
                out.update(known)
        return sorted(out)


def _reached(name: str, defs: dict[str, ToolsetDefinition]) -> list[str]:
    """Every toolset ``name`` reaches through includes, itself first (depth-first, iterative).

    Raises:
        RegistryError: an include names no toolset.
        DefinitionError: an include leads back to a toolset on the current path (a cycle).
    """
    order = [name]
    done: set[str] = set()
    path = [name]
    on_path = {name}
    pending = [iter(defs[name].includes)]
    while pending:
        inc = next(pending[-1], None)
        if inc is None:
            pending.pop()
            finished = path.pop()
            on_path.discard(finished)
            done.add(finished)
            continue
        if inc in ALL or inc in done:
            continue
        if inc in on_path:
            cycle = [*path[path.index(inc):], inc]
            raise DefinitionError(f"toolset include cycle: {' -> '.join(cycle)} (a toolset must not include "
                                  "itself, directly or through others)")
        if inc not in defs:
            raise RegistryError(_unknown(inc, defs, f" (included by {path[-1]!r})"))
        order.append(inc)
        path.append(inc)
        on_path.add(inc)
        pending.append(iter(defs[inc].includes))
    return order


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
