"""The static scan of one Python file: what its code does (effects) and what it must never do (findings).

Names are resolved the way Python would bind them, without running anything: ``import base64 as b``,
``from os import system as s``, ``x = os.system``, ``importlib.import_module("subprocess")``,
``__import__("os")``, ``getattr(__builtins__, "ex" + "ec")``, ``__builtins__["eval"]``, ``sys.modules["os"]``,
``vars(builtins)["exec"]`` and star imports all reach the name they stand for (:mod:`._fold` spells the constant
text). What cannot be resolved statically — ``getattr(os, name)``, ``__import__(name)``,
``__builtins__[key]`` with a computed name — is a finding of its own, so a spelling the table does not know
still blocks. Text that folds to Python code (``exec(base64.b64decode("..."))``) is scanned too.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from toolrig.packages._binding import DYNAMIC_CONTAINERS, Bindings, is_container
from toolrig.packages._findings import Finding, Severity
from toolrig.packages._fold import host_of
from toolrig.packages._names import (
    DYNAMIC_IMPORTS,
    EXEC,
    NETWORK_CALLS,
    SENSITIVE_MODULES,
    WRITE_ATTRIBUTES,
    category_of,
)

__all__ = ["Effect", "FileScan", "scan_python", "text_findings"]

_SHELL_DOWNLOAD = re.compile(r"\b(curl|wget|fetch)\b[^|;&\n]*\|\s*(sudo\s+)?(ba|z|da|k|c|tc)?sh\b|"
                             r"\b(curl|wget)\b[^|;&\n]*\|\s*(sudo\s+)?python[0-9.]*\b|"
                             r"\b(iwr|Invoke-WebRequest|irm)\b[^|;\n]*\|\s*iex\b", re.I)
_ENCODED = re.compile(r"[A-Za-z0-9+/=_\-\s]{256,}\Z|[0-9a-fA-F\s]{256,}\Z")
_ENVIRON = frozenset({"os.environ", "os.environb", "posix.environ", "nt.environ"})
# Attributes and calls that reach functions and modules through the interpreter's own objects (frames, function
# globals, the class tree, the garbage collector): what they lead to has no name the scan could resolve.
_REFLECTION_ATTRIBUTES = frozenset({"__subclasses__", "__globals__", "__builtins__", "__code__", "__closure__",
                                    "f_globals", "f_builtins", "f_locals", "f_back", "gi_frame", "cr_frame",
                                    "ag_frame", "tb_frame", "func_globals", "__loader__"})
_REFLECTION_CALLS = frozenset({"sys._getframe", "sys._current_frames", "inspect.currentframe", "inspect.stack",
                               "inspect.trace", "inspect.getouterframes", "inspect.getmembers", "gc.get_objects",
                               "gc.get_referrers", "gc.get_referents"})
# Modules whose members start programs, read the environment, write files or run code, and are not judged by being
# imported: passed around as values (in a list, a default argument, a loop variable, a return value), what is
# then called on them has no name the scan could resolve.
_MODULE_VALUES = frozenset({"os", "posix", "nt", "builtins", "importlib", "sys", "shutil", "io", "codecs", "runpy",
                            "imp", "subprocess", "pty", "ctypes", "marshal", "pickle"})
_INSPECTORS = frozenset({"builtins.getattr", "builtins.hasattr", "builtins.setattr", "builtins.delattr",
                         "builtins.vars", "builtins.dir", "builtins.isinstance", "builtins.id", "builtins.repr",
                         "builtins.object.__getattribute__", "builtins.type.__getattribute__"})
# What may be done with a container of functions or modules without hiding which one is reached.
_CONTAINER_LOOKUPS = frozenset({"get", "__getitem__", "__contains__", "setdefault", "pop"})
_GETENV = frozenset({"os.getenv", "os.getenvb"})
_OPENERS = frozenset({"builtins.open", "io.open", "io.FileIO", "codecs.open", "os.fdopen", "gzip.open", "bz2.open",
                      "lzma.open", "tarfile.open", "zipfile.ZipFile"})
_PATH_MAKERS = frozenset({"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "os.path.join",
                          "os.path.expanduser", "os.path.abspath", "os.path.realpath", "os.path.normpath",
                          "posixpath.join"})
_PATH_CLASSES = frozenset({"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath"})
_MAX_DEPTH = 3
_DANGEROUS_ATTRIBUTES = frozenset({"exec", "eval", "compile", "__import__", "import_module", "system", "popen",
                                   "spawn", "execv", "execve", "execl", "execvp", "run", "call", "check_output",
                                   "check_call", "Popen", "getoutput", "getstatusoutput", "loads", "load"})


@dataclass(frozen=True, kw_only=True)
class Effect:
    """Something the code does that a manifest must declare.

    Attributes:
        category: ``network``, ``env``, ``subprocess``, ``write`` or ``read``.
        file, line: where.
        target: the host, variable or path; ``None`` when it is not a literal; ``""`` when the use names none
            (an import, a client constructed without a URL); ``"*"`` for the whole environment.
        what: the name used (``requests.post``).
    """

    category: str
    file: str
    line: int
    target: str | None
    what: str


@dataclass
class FileScan:
    """The findings and effects of one file."""

    findings: list[Finding]
    effects: list[Effect]


def _mode_writes(mode: str | None) -> bool:
    return mode is None or any(c in mode for c in "wax+")


class _Scanner(Bindings, ast.NodeVisitor):
    def __init__(self, path: str, tree: ast.Module, depth: int) -> None:
        super().__init__(tree)
        self.path, self.depth = path, depth
        self.findings: list[Finding] = []
        self.effects: list[Effect] = []

    def on_import(self, module: str, line: int) -> None:
        category = category_of(module)
        if category in ("network", "subprocess"):
            self._effect(category, line, "", module)
        elif category == "native":
            self._finding(line, "native-code", "high", f"imports {module}: native code the scan cannot see into")
        elif category == "code":
            self._finding(line, "code-object", "high", f"imports {module}: loads compiled code objects")

    # -- recording -------------------------------------------------------------------------------------
    def _finding(self, line: int, rule: str, severity: Severity, reason: str) -> None:
        self.findings.append(Finding(file=self.path, line=line, rule=rule, severity=severity, reason=reason))

    def _effect(self, category: str, line: int, target: str | None, what: str) -> None:
        self.effects.append(Effect(category=category, file=self.path, line=line, target=target, what=what))

    # -- visiting --------------------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        name = self.qual(node.func)
        if name in _REFLECTION_CALLS:
            self._finding(node.lineno, "dynamic-attribute", "high",
                          f"{name.removeprefix('builtins.')}(): reaches functions and modules by introspection")
        self._container_use(node)
        self._module_value(node)
        if name is not None:
            self._named_call(node, name)
        if isinstance(node.func, ast.Attribute) and (name is None or category_of(name) is None):
            self._method_call(node, node.func.attr)  # Path.write_text(p), a client's .get(url), ...
        self.generic_visit(node)

    def _named_call(self, node: ast.Call, name: str) -> None:
        line = node.lineno
        first_const = self.fold.const(node.args[0]) if node.args else None
        if name in EXEC:
            self._exec(node, name)
        elif name in DYNAMIC_IMPORTS:
            self._dynamic_import(node, name)
        elif self._computed_lookup(node, name):
            base = self.qual(node.args[0]) if name in ("builtins.getattr", "builtins.object.__getattribute__") \
                else name.rpartition(".")[0]
            if base is not None and (base.split(".")[0] in SENSITIVE_MODULES or base in DYNAMIC_CONTAINERS):
                self._finding(line, "dynamic-attribute", "high",
                              f"getattr on {base} with a computed name: hides which function it calls")
        elif name.endswith(".get") and is_container(name[:-4]) and node.args and first_const is None:
            self._finding(line, "dynamic-attribute", "high",
                          f"{name}() with a computed key: hides which function or module it reaches")
        elif name in ("operator.attrgetter", "operator.methodcaller") and node.args:
            wanted = first_const or ""
            if first_const is None or wanted.split(".")[-1] in _DANGEROUS_ATTRIBUTES:
                self._finding(line, "dynamic-attribute", "high",
                              f"{name}({wanted!r}) reaches a function by name at run time")
        elif name in _OPENERS or (name.endswith(".open") and name.startswith("pathlib.")):
            self._open(node, name)
        category = category_of(name)
        if category == "network":
            self._effect("network", line, self._host(node), name)
        elif category == "subprocess":
            self._effect("subprocess", line, "", name)
        elif category == "write":
            self._effect("write", line, self._path(node.args[0] if node.args else None), name)
        elif category == "code" or name in ("pickle.loads", "pickle.load"):
            severity: Severity = "high" if category == "code" else "medium"
            self._finding(line, "deserialise", severity, f"{name}: loads objects (or code) from bytes")
        elif name in _GETENV:
            key = self.fold.const(node.args[0]) if node.args else None
            self._effect("env", line, key, name)

    def _computed_lookup(self, node: ast.Call, name: str) -> bool:
        """``getattr(x, name)``, ``x.__getattribute__(name)`` or ``object.__getattribute__(x, name)`` with a
        computed name (the caller checks that ``x`` matters)."""
        if name in ("builtins.getattr", "builtins.object.__getattribute__") and len(node.args) >= 2:
            return self.fold.const(node.args[1]) is None
        if name.endswith((".__getattribute__", ".__getattr__")) and node.args:
            return self.fold.const(node.args[0]) is None
        return False

    def _method_call(self, node: ast.Call, attr: str) -> None:
        value = node.func.value if isinstance(node.func, ast.Attribute) else None
        if attr in WRITE_ATTRIBUTES and value is not None:
            unbound = self.qual(value) in _PATH_CLASSES and node.args  # Path.write_text(path, text)
            self._effect("write", node.lineno, self._path(node.args[0] if unbound else value), f".{attr}()")
        elif attr in ("read_text", "read_bytes") and value is not None:
            self._effect("read", node.lineno, self._path(value), f".{attr}()")
        elif attr == "open" and value is not None:  # Path.open(mode); on an unknown object only a literal mode counts
            mode = self.fold.const(node.args[0]) if node.args else None
            mode = mode if mode is not None and len(mode) <= 4 else self._keyword(node, "mode", "r")
            self._effect("write" if _mode_writes(mode) else "read", node.lineno, self._path(value), ".open()")
        elif attr in NETWORK_CALLS:
            host = self._host(node, require_url=True)
            if host != "":
                self._effect("network", node.lineno, host, f".{attr}()")

    def _keyword(self, node: ast.Call, name: str, default: str | None) -> str | None:
        for keyword in node.keywords:
            if keyword.arg == name:
                return self.fold.const(keyword.value)
        return default

    def _exec(self, node: ast.Call, name: str) -> None:
        short = name.removeprefix("builtins.")
        if any(self._decodes(a) for a in [*node.args, *(k.value for k in node.keywords)]):
            self._finding(node.lineno, "exec-decoded", "critical",
                          f"{short}() of decoded data: runs code hidden in an encoded string")
        else:
            self._finding(node.lineno, "exec", "high", f"{short}() runs code built at run time")
        code = self.fold.const(node.args[0]) if node.args else None
        if code is not None and self.depth < _MAX_DEPTH:
            self._embedded(code, node.lineno)

    def _embedded(self, code: str, line: int) -> None:
        inner = scan_python(f"{self.path}:{line}<folded>", code, depth=self.depth + 1)
        self.findings.extend(inner.findings)
        self.effects.extend(inner.effects)

    def _dynamic_import(self, node: ast.Call, name: str) -> None:
        module = self.fold.const(node.args[0]) if node.args else None
        short = name.removeprefix("builtins.")
        if module is None or name not in ("builtins.__import__", "importlib.__import__", "importlib.import_module"):
            self._finding(node.lineno, "dynamic-import", "high",
                          f"{short}() loads code whose name or place is computed at run time")
            return
        self._finding(node.lineno, "dynamic-import", "medium", f"{short}({module!r}) imports a module by name")
        self.on_import(module, node.lineno)

    def _open(self, node: ast.Call, name: str) -> None:
        mode = self.fold.const(node.args[1]) if len(node.args) > 1 else self._keyword(node, "mode", "r")
        if name == "os.fdopen":
            return
        target = self._path(node.args[0] if node.args else None)
        self._effect("write" if _mode_writes(mode) else "read", node.lineno, target, name)

    def _path(self, node: ast.AST | None) -> str | None:
        """The literal path ``node`` names (``Path("/etc") / "x"``, ``os.path.expanduser("~/.x")``), or None."""
        if node is None:
            return None
        text = self.fold.const(node)
        if text is not None:
            return text
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left, right = self._path(node.left), self._path(node.right)
            return None if left is None or right is None else f"{left.rstrip('/')}/{right}"
        if isinstance(node, ast.Call):
            name = self.qual(node.func)
            if name in ("pathlib.Path.home", "os.path.expanduser") and not node.args:
                return "~"
            if name in _PATH_MAKERS and node.args:
                parts = [self._path(a) for a in node.args]
                if all(p is not None for p in parts):
                    return "/".join(p.rstrip("/") if i < len(parts) - 1 else p for i, p in enumerate(parts) if p)
        return None

    def _host(self, node: ast.Call, *, require_url: bool = False) -> str | None:
        """The host a network call names: a URL's host, a host literal, ``""`` when it names none, None when the
        argument that would name it is computed."""
        candidates = [*node.args[:2], *(k.value for k in node.keywords
                                         if k.arg in ("url", "base_url", "host", "address", "uri", "server"))]
        unknown = False
        for candidate in candidates:
            arg = candidate.elts[0] if isinstance(candidate, ast.Tuple) and candidate.elts else candidate
            text = self.fold.const(arg)
            if text is not None:
                host = host_of(text)
                if host is not None and ("://" in text or not require_url or candidate is not arg):
                    return host
                continue
            prefix = self.fold.prefix(arg)
            host = host_of(prefix, complete=False) if prefix is not None else None
            if host is not None:
                return host
            if self.qual(arg) is None and not isinstance(arg, ast.Constant | ast.Dict | ast.Lambda):
                unknown = True
                if candidate is not arg:  # an address tuple (host, port) with a computed host
                    return None
        return None if unknown and not require_url else ""

    def visit_Name(self, node: ast.Name) -> None:
        self._module_value(node)
        self._reference(node)

    def _module_value(self, node: ast.expr) -> None:
        """A module like ``os`` used as a value rather than by its members: ``for m in [os]``, ``f(m=os)``,
        ``d = {"k": os}``, ``return os``, ``importlib.reload(os)``. Plain aliases (``m = os``) resolve."""
        if isinstance(node, ast.Name | ast.Attribute | ast.Subscript) and not isinstance(node.ctx, ast.Load):
            return
        name = self.qual(node)
        if name not in _MODULE_VALUES:
            return
        parent = self.parents.get(id(node))
        if (isinstance(parent, ast.Attribute) and parent.value is node) or isinstance(parent, ast.Compare | ast.Expr):
            return
        if isinstance(parent, ast.Assign | ast.AnnAssign | ast.NamedExpr) and parent.value is node:
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            if all(isinstance(t, ast.Name) for t in targets):
                return
        if isinstance(parent, ast.Call) and (parent.func is node or (
                self.qual(parent.func) in _INSPECTORS and parent.args and parent.args[0] is node)):
            return
        self._finding(node.lineno, "dynamic-attribute", "high",
                      f"the module {name} is passed around as a value: what is called on it cannot be resolved")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _REFLECTION_ATTRIBUTES:
            self._finding(node.lineno, "dynamic-attribute", "high",
                          f".{node.attr}: reaches functions and modules by introspection")
        self._container_use(node)
        self._module_value(node)
        if not self._reference(node):
            self.generic_visit(node)

    def _container_use(self, node: ast.Attribute | ast.Call) -> None:
        """``sys.modules.values()``, ``for f in vars(builtins).items()``, ``dict(globals())``: a container of
        functions or modules read as a whole, so which one is used is decided at run time."""
        base = self.qual(node)
        if base is None or not is_container(base) or base == "builtins":
            return
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Subscript | ast.Compare) or (isinstance(parent, ast.Attribute) and
                                                                parent.attr in _CONTAINER_LOOKUPS):
            return
        if isinstance(parent, ast.Attribute) and isinstance(node, ast.Call) and parent.attr == "__dict__":
            return
        self._finding(node.lineno, "dynamic-attribute", "high",
                      f"{base} read as a whole: which function or module it reaches is decided at run time")

    def _reference(self, node: ast.Name | ast.Attribute) -> bool:
        name = self.qual(node)
        if name is None or not isinstance(node.ctx, ast.Load):
            return False
        if name in _ENVIRON:
            self._effect("env", node.lineno, self._env_key(node), name)
            return True
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Call) and parent.func is node:
            return False
        category = category_of(name)
        if category in ("network", "subprocess"):
            self._effect(category, node.lineno, "", name)
        elif name in EXEC | DYNAMIC_IMPORTS:
            self._finding(node.lineno, "exec-reference", "high",
                          f"{name.removeprefix('builtins.')} is passed around: it can run code built at run time")
        return False

    def _env_key(self, node: ast.AST) -> str | None:
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Subscript) and parent.value is node:
            return self.fold.const(parent.slice)
        if isinstance(parent, ast.Compare) and parent.comparators and parent.comparators[0] is node:
            return self.fold.const(parent.left)
        if isinstance(parent, ast.Attribute) and parent.attr in ("get", "setdefault", "pop", "__getitem__"):
            call = self.parents.get(id(parent))
            if isinstance(call, ast.Call) and call.args:
                return self.fold.const(call.args[0])
        return "*"

    def visit_Subscript(self, node: ast.Subscript) -> None:
        self._module_value(node)
        base = self.qual(node.value)
        if base is not None and is_container(base) and self.fold.const(node.slice) is None:
            self._finding(node.lineno, "dynamic-attribute", "high",
                          f"{base}[...] with a computed key: hides which function or module it reaches")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str | bytes) or id(node) in self.docstrings:
            return
        text = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
        self.check_text(text, node.lineno)
        if _ENCODED.match(text) and len(set(text)) > 10:
            self._finding(node.lineno, "encoded-literal", "medium",
                          f"a {len(text)}-character encoded string literal (hidden data or code?)")
            parent = self.parents.get(id(node))
            if isinstance(parent, ast.Call) and self._decodes(parent):
                self._finding(node.lineno, "decoded-blob", "high", "decodes an embedded encoded blob")

    def check_text(self, text: str, line: int) -> None:
        self.findings += text_findings(self.path, text, line)


def text_findings(path: str, text: str, line: int = 0) -> list[Finding]:
    """Rules on any text (a string literal, a shell script): a command that downloads a script and runs it."""
    if _SHELL_DOWNLOAD.search(text):
        return [Finding(file=path, line=line, rule="download-and-run", severity="critical",
                        reason="a command that downloads a script and runs it")]
    return []


def _source_text(source: bytes) -> str:
    """The text Python itself would read from these bytes: its BOM and coding cookie honoured (a file in
    ``# coding: utf-7`` hides code in what a UTF-8 reader takes for a comment)."""
    import io
    import tokenize

    encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    return source.decode(encoding)


def scan_python(path: str, source: str | bytes, *, depth: int = 0) -> FileScan:
    """The findings and effects of one Python file (never imported, never run)."""
    try:
        text = _source_text(source) if isinstance(source, bytes) else source
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError, MemoryError) as exc:
        reason = f"cannot be parsed as Python 3 ({type(exc).__name__}), so it cannot be scanned"
        return FileScan(findings=[Finding(file=path, line=getattr(exc, "lineno", 0) or 0, rule="unparseable",
                                          severity="high", reason=reason)], effects=[])
    scanner = _Scanner(path, tree, depth)
    try:
        scanner.prepare()
        scanner.visit(tree)
    except RecursionError:
        scanner.findings.append(Finding(file=path, line=0, rule="unparseable", severity="high",
                                        reason="nested too deeply to scan"))
    return FileScan(findings=scanner.findings, effects=scanner.effects)
