"""A view with some tools renamed (``{"old": "new"}``)."""

from __future__ import annotations

import builtins
from collections.abc import Mapping

from toolrig._define import BaseTool
from toolrig._spec import check_name
from toolrig._versions import split_key
from toolrig.errors import DefinitionError, ToolsetConflictError
from toolrig.toolsets._aliases import AliasCache
from toolrig.toolsets._base import Toolset
from toolrig.toolsets._wrapper import WrapperToolset

__all__ = ["RenamedToolset"]


class RenamedToolset(WrapperToolset):
    """The tools of ``wrapped``, those named in ``mapping`` under their new names.

    Renamed tools share status and stats with the originals; an old name no longer resolves.

    Raises:
        DefinitionError: a new name is illegal, or two tools are renamed to the same name.
        ToolsetConflictError: (when listing) a new name collides with a tool that kept its name.
    """

    def __init__(self, wrapped: Toolset, mapping: Mapping[str, str]) -> None:
        super().__init__(wrapped)
        self.mapping = dict(mapping)
        for new in self.mapping.values():
            check_name(new)
        self._reverse = {new: old for old, new in self.mapping.items()}
        if len(self._reverse) != len(self.mapping):
            raise DefinitionError(f"renamed(...): two tools would get the same new name in {self.mapping}")
        self._aliases = AliasCache()

    @property
    def label(self) -> str:
        return f"RenamedToolset({self.mapping!r}, {self.wrapped.label})"

    def list(self) -> builtins.list[BaseTool]:
        out: dict[str, BaseTool] = {}
        for t in self.wrapped.list():
            new = self.mapping.get(t.name, t.name)
            if new in out:
                raise ToolsetConflictError(
                    f"{self.label}: renaming makes two tools named {new!r}; choose another new name"
                )
            out[new] = self._aliases.get(t, new)
        return list(out.values())

    def get(self, name: str) -> BaseTool | None:
        bare, selector = split_key(name)
        if bare in self.mapping and bare not in self._reverse:
            return None  # renamed away
        inner = self._reverse.get(bare, bare)
        found = self.wrapped.get(inner if selector is None else f"{inner}@{selector}")
        return None if found is None else self._aliases.get(found, bare)
