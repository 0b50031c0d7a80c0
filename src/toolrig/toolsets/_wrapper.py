"""A toolset that wraps another and forwards everything to it: the base of every view."""

from __future__ import annotations

import builtins
from typing import Self

from toolrig._define import BaseTool
from toolrig.toolsets._base import Toolset

__all__ = ["WrapperToolset"]


class WrapperToolset(Toolset):
    """Forwards :meth:`list`, :meth:`get` and the ``async with`` lifecycle to ``wrapped``.

    Subclass it to change what passes through (see :class:`~toolrig.toolsets.FilteredToolset`).

    Args:
        wrapped: the toolset to forward to.
    """

    def __init__(self, wrapped: Toolset) -> None:
        if not isinstance(wrapped, Toolset):
            raise TypeError(f"{type(self).__name__} wraps a Toolset, got {type(wrapped).__name__}")
        self.wrapped = wrapped

    @property
    def label(self) -> str:
        return f"{type(self).__name__}({self.wrapped.label})"

    def list(self) -> builtins.list[BaseTool]:
        return self.wrapped.list()

    def get(self, name: str) -> BaseTool | None:
        return self.wrapped.get(name)

    async def __aenter__(self) -> Self:
        await self.wrapped.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        return await self.wrapped.__aexit__(*exc_info)
