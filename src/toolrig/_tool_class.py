"""Tools written as classes: subclass :class:`Tool` and implement ``run``; and :func:`as_tool` for any form."""

from __future__ import annotations

import inspect
from abc import ABC
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from toolrig._define import SPEC_OPTIONS, BaseTool, _SignatureTool, check_not_generator
from toolrig._function_tool import FunctionTool
from toolrig._spec import ToolSpec
from toolrig.errors import DefinitionError

if TYPE_CHECKING:
    from toolrig._schemas.function_schema import FunctionSchema

__all__ = ["Tool", "as_tool"]


class Tool(_SignatureTool):
    """Base class for tools written as classes.

    Set ``name`` (default: the class name in snake case) and ``description`` (default: the
    class docstring) and implement ``run`` (sync or async); its signature defines the schema.
    Any :class:`ToolSpec` field can be set as a class attribute (``permission = "readonly"``).
    """

    spec: ClassVar[ToolSpec]  # type: ignore[misc]
    _schema: ClassVar[FunctionSchema]  # type: ignore[misc]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        run = cls.__dict__.get("run")
        if run is None or getattr(run, "__isabstractmethod__", False):
            if "run" not in {n for base in cls.__mro__[:-1] for n in base.__dict__ if base is not Tool}:
                return
            run = next(b.__dict__["run"] for b in cls.__mro__ if "run" in b.__dict__)
        name = cls.__dict__.get("name") or _snake(cls.__name__)
        if not isinstance(name, str):
            raise DefinitionError(f"{cls.__name__}.name must be a string")
        from toolrig._spec import check_name

        check_name(name)
        options = {k: getattr(cls, k) for k in SPEC_OPTIONS - {"name", "description"}
                   if k in _class_attrs(cls)}
        check_not_generator(cls.__name__, run)
        description = cls.__dict__.get("description")
        if description is not None and not isinstance(description, str):
            raise DefinitionError(f"{cls.__name__}.description must be a string")
        from toolrig._schemas.docstrings import parse_docstring  # on first definition: a cheap `import toolrig`
        from toolrig._schemas.schema import function_schema

        class_doc = inspect.getdoc(cls)
        doc = parse_docstring(class_doc if class_doc != inspect.getdoc(Tool) else None)
        schema = function_schema(run, tool_name=name, skip_first=True,
                                 description=description or doc.description or None, param_docs=doc.params)
        if not schema.description:
            raise DefinitionError(
                f"tool class {cls.__name__} has no description: add a docstring or `description = ...`"
            )
        cls._schema = schema
        cls.spec = ToolSpec(name=name, description=schema.description, input_schema=schema.input_schema,
                            output_schema=schema.output_schema, **options)
        cls.name = name  # type: ignore[assignment]
        cls.description = schema.description  # type: ignore[attr-defined]

    def _target(self) -> Callable[..., Any]:
        run = getattr(self, "run", None)
        if run is None:
            raise DefinitionError(f"{type(self).__name__} must implement run(...)")
        return run  # type: ignore[no-any-return]

    def with_spec(self, **changes: Any) -> BaseTool:
        clone = super().with_spec(**changes)
        # Instance attributes shadow the class-level spec, name and description.
        clone.__dict__.update(spec=clone.spec, name=clone.spec.name, description=clone.spec.description)
        return clone


def _class_attrs(cls: type) -> set[str]:
    names: set[str] = set()
    for base in cls.__mro__:
        if base in (Tool, _SignatureTool, BaseTool, object, ABC):
            continue
        names.update(base.__dict__)
    return names


def _snake(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and (not name[i - 1].isupper() or (i + 1 < len(name) and name[i + 1].islower())):
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def as_tool(obj: Any) -> BaseTool:
    """Turn any accepted form into a tool object.

    Accepts a tool object (returned as is), a ``Tool`` subclass (instantiated without
    arguments), or a plain function (wrapped as by bare ``@tool``).

    Raises:
        DefinitionError: for anything else.
    """
    if isinstance(obj, FunctionTool) and obj._method == "self":
        obj._target()  # raises: an unbound method tool cannot run
    if isinstance(obj, BaseTool):
        return obj
    if isinstance(obj, type) and issubclass(obj, Tool):
        if "spec" not in obj.__dict__:
            raise DefinitionError(f"{obj.__name__} is abstract: it does not implement run(...)")
        needed = [p.name for p in inspect.signature(obj).parameters.values()
                  if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if needed:
            raise DefinitionError(f"{obj.__name__}() needs arguments ({', '.join(needed)}): "
                                  f"pass an instance instead, e.g. as_tool({obj.__name__}(...))")
        return obj()
    if inspect.isfunction(obj) or inspect.ismethod(obj) or inspect.isbuiltin(obj):
        return FunctionTool(obj)
    raise DefinitionError(
        f"cannot make a tool from {obj!r}: pass a function, a @tool, a Tool subclass or instance"
    )
