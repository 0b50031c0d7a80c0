"""How the names of one file bind, without running it: imports and their aliases, assignments, constants.

:class:`Bindings` resolves an expression to the qualified name it stands for (``b.b64decode`` after
``import base64 as b`` is ``base64.b64decode``; ``getattr(__builtins__, "ex" + "ec")`` is ``builtins.exec``;
``importlib.import_module("subprocess")`` is ``subprocess``), folds constants (:mod:`._fold`) and tracks which
names hold decoded data. The scan (:mod:`._astscan`) builds on it.
"""

from __future__ import annotations

import ast
import builtins

from toolrig.packages._fold import Folder
from toolrig.packages._names import DECODERS, DYNAMIC_IMPORTS, EXEC, SENSITIVE_MODULES, category_of

__all__ = ["DYNAMIC_CONTAINERS", "Bindings", "is_container"]

_BUILTIN_NAMES = frozenset(dir(builtins))
DYNAMIC_CONTAINERS = frozenset({"builtins", "builtins.__dict__", "globals()", "sys.modules", "locals()"})


class Bindings:
    """The bindings of one parsed file (call :meth:`prepare` once before resolving)."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.aliases: dict[str, str] = {}
        self.consts: dict[str, str] = {}
        self.bound: set[str] = set()
        self.star: list[str] = []
        self.tainted: set[str] = set()
        self.parents: dict[int, ast.AST] = {}
        self.docstrings: set[int] = set()
        self.fold = Folder(self.qual, self.consts)

    def on_import(self, module: str, line: int) -> None:
        """Called for every module imported (statically), as the bindings are collected."""

    # -- name resolution -------------------------------------------------------------------------------
    def qual(self, node: ast.AST, depth: int = 0) -> str | None:
        """The qualified name ``node`` stands for (``os.system``, ``builtins.exec``), or None."""
        if depth > 30:
            return None
        if isinstance(node, ast.Name):
            return self._qual_name(node.id)
        if isinstance(node, ast.Attribute):
            base = self.qual(node.value, depth + 1)
            return None if base is None else f"{base}.{node.attr}"
        if isinstance(node, ast.Subscript):
            base = self.qual(node.value, depth + 1)
            key = self.fold.const(node.slice)
            return None if base is None or key is None else _item(base, key, self.aliases)
        if isinstance(node, ast.Call):
            return self._qual_call(node, depth)
        if isinstance(node, ast.NamedExpr):  # (m := __import__("os")).system is os.system
            return self.qual(node.value, depth + 1)
        return None

    def _qual_name(self, name: str) -> str | None:
        if name in self.aliases:
            return self.aliases[name]
        if name == "__builtins__":
            return "builtins"
        if name in self.bound:
            return None
        if name in _BUILTIN_NAMES:
            return f"builtins.{name}"
        for module in self.star:
            candidate = f"{module}.{name}"
            if category_of(candidate) or candidate in EXEC or candidate in DYNAMIC_IMPORTS:
                return candidate
        return None

    def _qual_call(self, node: ast.Call, depth: int) -> str | None:
        func = self.qual(node.func, depth + 1)
        first = self.fold.const(node.args[0]) if node.args else None
        if func in ("builtins.__import__", "importlib.__import__") and first is not None:
            return first if len(node.args) > 3 and node.args[3] else first.split(".")[0]
        if func == "importlib.import_module" and first is not None:
            return first
        if func == "builtins.getattr" and len(node.args) >= 2:
            base, name = self.qual(node.args[0], depth + 1), self.fold.const(node.args[1])
            return None if base is None or name is None else _item(base, name, self.aliases)
        if func == "builtins.vars" and node.args:
            base = self.qual(node.args[0], depth + 1)
            return None if base is None else f"{base}.__dict__"
        if func in ("builtins.globals", "builtins.locals"):
            return func.removeprefix("builtins.") + "()"
        if func in ("builtins.object.__getattribute__", "builtins.type.__getattribute__") and len(node.args) >= 2:
            target, name = self.qual(node.args[0], depth + 1), self.fold.const(node.args[1])
            return None if target is None or name is None else _item(target, name, self.aliases)
        if func is None or first is None:
            return None
        base, _, method = func.rpartition(".")
        if method in ("__getattribute__", "__getattr__") or (method in ("get", "__getitem__") and is_container(base)):
            return _item(base, first, self.aliases)
        return None

    # -- the passes ------------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Collect parents, docstrings, imports, aliases, constants and tainted names (one walk of the tree)."""
        counts: dict[str, int] = {}
        assignments: list[ast.Assign | ast.AnnAssign | ast.NamedExpr] = []
        for parent in ast.walk(self.tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[id(child)] = parent
            if isinstance(parent, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and parent.body:
                first = parent.body[0]
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                    self.docstrings.add(id(first.value))
            self._bind(parent, counts)
            if isinstance(parent, ast.Assign | ast.AnnAssign | ast.NamedExpr) and parent.value is not None:
                assignments.append(parent)
        for _ in range(4):  # aliases of aliases, constants of constants, taint through assignments
            before = (len(self.aliases), len(self.consts), len(self.tainted))
            for node in assignments:
                self._assign(node, counts)
            if (len(self.aliases), len(self.consts), len(self.tainted)) == before:
                break

    def _bind(self, node: ast.AST, counts: dict[str, int]) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.aliases[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    self.aliases[top] = top
                self.on_import(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                if alias.name == "*":
                    self.star.append(node.module)
                    self.on_import(node.module, node.lineno)
                else:
                    self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                    self.on_import(f"{node.module}.{alias.name}", node.lineno)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            self.bound.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            counts[node.id] = counts.get(node.id, 0) + 1
            self.bound.add(node.id)
        elif isinstance(node, ast.arg):
            self.bound.add(node.arg)

    def _assign(self, node: ast.Assign | ast.AnnAssign | ast.NamedExpr, counts: dict[str, int]) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = node.value
        assert value is not None
        for target in targets:
            if not isinstance(target, ast.Name):
                continue
            resolved = self.qual(value)
            if resolved is not None and target.id not in self.aliases:
                self.aliases[target.id] = resolved
            text = self.fold.const(value)
            if text is not None and counts.get(target.id) == 1:
                self.consts[target.id] = text
            if self._decodes(value):
                self.tainted.add(target.id)

    def _decodes(self, node: ast.AST) -> bool:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in self.tainted:
                return True
            if isinstance(sub, ast.Call):
                name = self.qual(sub.func)
                if name in DECODERS or (isinstance(sub.func, ast.Attribute) and sub.func.attr in ("decode", "fromhex")
                                        and sub.args):
                    return True
        return False


def is_container(name: str) -> bool:
    """A mapping that holds functions or modules by name (``builtins.__dict__``, ``sys.modules``, ``globals()``)."""
    return name in DYNAMIC_CONTAINERS or (name.endswith(".__dict__") and
                                           name.split(".", maxsplit=1)[0] in SENSITIVE_MODULES | {"builtins"})


def _item(base: str, key: str, aliases: dict[str, str]) -> str:
    if base in ("builtins", "builtins.__dict__"):
        return f"builtins.{key}"
    if base == "sys.modules":
        return key
    if base in ("globals()", "locals()"):
        return "builtins" if key == "__builtins__" else aliases.get(key, key)
    return f"{base.removesuffix('.__dict__')}.{key}"
