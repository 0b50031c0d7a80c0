"""Constant folding for the scan: the text an expression spells, without running it.

``"ex" + "ec"``, ``"".join(["e", "x"])``, ``chr(101)``, ``"cexe"[::-1]``, f-strings of constants, ``%`` and
``.format`` of constants, ``.lower()`` and friends, and decoders of constants (``base64.b64decode("...")``,
``bytes.fromhex``, ``codecs.decode(.., "rot13")``, ``zlib.decompress``) fold to their text; anything else does
not. Results are capped at :data:`MAX_FOLDED` characters.
"""

from __future__ import annotations

import ast
import base64
import binascii
import codecs
import re
import zlib
from collections.abc import Callable
from urllib.parse import urlsplit

__all__ = ["MAX_FOLDED", "host_of", "looks_like_host"]

MAX_FOLDED = 1_000_000
_HOSTLIKE = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]*\Z|\d{1,3}(?:\.\d{1,3}){3}\Z")
_STR_METHODS = frozenset({"lower", "upper", "strip", "lstrip", "rstrip", "casefold", "title", "capitalize",
                          "swapcase"})


def _decode(qual: str, data: str, extra: str | None) -> str | None:
    raw = data.encode("latin-1", "replace")
    decoders: dict[str, Callable[[], bytes]] = {
        "base64.b64decode": lambda: base64.b64decode(raw), "base64.standard_b64decode": lambda: base64.b64decode(raw),
        "base64.urlsafe_b64decode": lambda: base64.urlsafe_b64decode(raw),
        "base64.b32decode": lambda: base64.b32decode(raw), "base64.b16decode": lambda: base64.b16decode(raw),
        "base64.b85decode": lambda: base64.b85decode(raw), "base64.a85decode": lambda: base64.a85decode(raw),
        "base64.decodebytes": lambda: base64.decodebytes(raw), "binascii.a2b_base64": lambda: binascii.a2b_base64(raw),
        "binascii.unhexlify": lambda: binascii.unhexlify(raw), "binascii.a2b_hex": lambda: binascii.a2b_hex(raw),
        "builtins.bytes.fromhex": lambda: bytes.fromhex(data), "bytes.fromhex": lambda: bytes.fromhex(data),
        "zlib.decompress": lambda: zlib.decompressobj().decompress(raw, MAX_FOLDED),
    }
    try:
        if qual == "codecs.decode" and extra is not None:
            if extra.replace("_", "").lower() == "rot13":
                return codecs.encode(data, "rot13")
            decoded: object = codecs.decode(raw, extra)
            return decoded.decode("latin-1") if isinstance(decoded, bytes) else str(decoded)
        make = decoders.get(qual)
        return None if make is None else make().decode("latin-1")
    except (ValueError, TypeError, LookupError, zlib.error, binascii.Error):
        return None


class Folder:
    """Folds expressions of one file, given how its names resolve (``qual``) and its module constants."""

    def __init__(self, qual: Callable[[ast.AST], str | None], consts: dict[str, str]) -> None:
        self.qual = qual
        self.consts = consts

    def const(self, node: ast.AST | None, depth: int = 0) -> str | None:
        """The text ``node`` always evaluates to, or None."""
        if node is None or depth > 40:
            return None
        out = self._const(node, depth + 1)
        return out if out is None or len(out) <= MAX_FOLDED else None

    def _const(self, node: ast.AST, depth: int) -> str | None:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return node.value
            if isinstance(node.value, bytes):
                return node.value.decode("latin-1")
            return None
        if isinstance(node, ast.Name):
            return self.consts.get(node.id)
        if isinstance(node, ast.BinOp):
            return self._binop(node, depth)
        if isinstance(node, ast.JoinedStr):
            parts = [self.const(v.value if isinstance(v, ast.FormattedValue) else v, depth) for v in node.values]
            return None if any(p is None for p in parts) else "".join(p for p in parts if p is not None)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, depth)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        return None

    def _binop(self, node: ast.BinOp, depth: int) -> str | None:
        left = self.const(node.left, depth)
        if isinstance(node.op, ast.Add):
            right = self.const(node.right, depth)
            return None if left is None or right is None else left + right
        if isinstance(node.op, ast.Mult) and left is not None and isinstance(node.right, ast.Constant) \
                and isinstance(node.right.value, int) and len(left) * node.right.value <= MAX_FOLDED:
            return left * node.right.value
        if isinstance(node.op, ast.Mod) and left is not None:
            items = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
            values = [self.const(i, depth) for i in items]
            if all(v is not None for v in values):
                try:
                    return left % tuple(values)
                except (TypeError, ValueError):
                    return None
        return None

    def _subscript(self, node: ast.Subscript, depth: int) -> str | None:
        base = self.const(node.value, depth)
        if base is None:
            return None
        if isinstance(node.slice, ast.Slice):
            bounds = [self._int(b) for b in (node.slice.lower, node.slice.upper, node.slice.step)]
            if any(b is False for b in bounds) or bounds[2] == 0:
                return None
            return base[slice(*bounds)]
        index = self._int(node.slice)
        if isinstance(index, int) and not isinstance(index, bool) and -len(base) <= index < len(base):
            return base[index]
        return None

    @staticmethod
    def _int(node: ast.AST | None) -> int | bool | None:
        if node is None:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
                and isinstance(node.operand.value, int):
            return -node.operand.value
        return False

    def _call(self, node: ast.Call, depth: int) -> str | None:
        func = node.func
        if isinstance(func, ast.Attribute):
            folded = self._method(func, node, depth)
            if folded is not None:
                return folded
        qual = self.qual(func)
        if qual == "builtins.chr" and len(node.args) == 1:
            code = self._int(node.args[0])
            return chr(code) if isinstance(code, int) and 0 <= code < 0x110000 else None
        if qual in ("builtins.str", "builtins.bytes", "builtins.bytearray") and len(node.args) == 1:
            arg = node.args[0]
            if isinstance(arg, ast.List | ast.Tuple) and qual != "builtins.str":
                codes = [self._int(e) for e in arg.elts]
                ok = all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 256 for c in codes)
                return bytes(c for c in codes if isinstance(c, int)).decode("latin-1") if ok else None
            return self.const(arg, depth)
        if qual is not None and node.args:
            data = self.const(node.args[0], depth)
            extra = self.const(node.args[1], depth) if len(node.args) > 1 else None
            return None if data is None else _decode(qual, data, extra)
        return None

    def _method(self, func: ast.Attribute, node: ast.Call, depth: int) -> str | None:
        if func.attr == "join" and len(node.args) == 1:
            sep = self.const(func.value, depth)
            arg = node.args[0]
            if isinstance(arg, ast.Call) and self.qual(arg.func) == "builtins.reversed" and len(arg.args) == 1:
                inner = self.const(arg.args[0], depth)
                return None if sep is None or inner is None else sep.join(reversed(inner))
            items = arg.elts if isinstance(arg, ast.List | ast.Tuple) else None
            if sep is None or items is None:
                return None
            parts = [self.const(i, depth) for i in items]
            return None if any(p is None for p in parts) else sep.join(p for p in parts if p is not None)
        base = self.const(func.value, depth)
        if base is None:
            return None
        args = [self.const(a, depth) for a in node.args]
        if any(a is None for a in args):
            return None
        if func.attr in _STR_METHODS and not node.args:
            return str(getattr(base, func.attr)())
        if func.attr == "replace" and len(args) == 2:
            return base.replace(str(args[0]), str(args[1]))
        if func.attr == "decode":
            return _decode("codecs.decode", base, args[0]) if args and args[0] else base
        if func.attr == "encode":
            return base
        if func.attr == "format" and not node.keywords:
            try:
                return base.format(*args)
            except (IndexError, KeyError, ValueError):
                return None
        return None

    def prefix(self, node: ast.AST | None) -> str | None:
        """The constant text ``node`` starts with (all of it when it folds), or None."""
        if node is None:
            return None
        full = self.const(node)
        if full is not None:
            return full
        if isinstance(node, ast.JoinedStr):
            out = ""
            for value in node.values:
                part = self.const(value.value if isinstance(value, ast.FormattedValue) else value)
                if part is None:
                    break
                out += part
            return out or None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod):
            left = self.prefix(node.left)
            if left is not None and isinstance(node.op, ast.Mod):
                return left.split("%", 1)[0] or None
            return left
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            template = self.const(node.func.value)
            return template.split("{", 1)[0] or None if template is not None else None
        return None


def host_of(text: str, *, complete: bool = True) -> str | None:
    """The host a URL (``https://h/...``) or a bare host name names, lower-case; for a prefix (``complete=False``)
    only when the host has ended within it (``f"https://{sub}.evil.com"`` names no host)."""
    if "://" in text:
        scheme, _, rest = text.partition("://")
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", scheme) or (not complete and not re.search(r"[/?#]", rest)):
            return None
        try:
            host = urlsplit(text).hostname
        except ValueError:
            return None
        return host.lower().rstrip(".") if host else None
    return text.lower().rstrip(".") if complete and looks_like_host(text) else None


def looks_like_host(text: str) -> bool:
    """A dotted host name or an IPv4 address."""
    return bool(_HOSTLIKE.match(text.lower().rstrip(".")))
