"""``calculator``: arithmetic evaluated from Python's AST, never with ``eval``, inside numeric limits.

Only number literals, ``+ - * / // % **``, unary signs, parentheses, the constants ``pi``, ``e``, ``tau``
and a whitelist of math functions (called with positional arguments) are accepted; any other name,
attribute access, subscript, keyword, comprehension or string is refused. Limits, checked before a
costly operation is done: the expression's length, node count and nesting depth, the size of integer
results (``2 ** 10**9`` or ``factorial(10**6)`` are refused up front, estimated from logarithms, not
computed), and finite floats only.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from toolrig import ModelRetry, tool

__all__ = ["MAX_DEPTH", "MAX_INT_BITS", "calculator", "evaluate"]

MAX_CHARS = 1000
MAX_NODES = 300
MAX_DEPTH = 40
MAX_INT_BITS = 10_000
"""Integer results have at most this many bits (about 3,000 decimal digits)."""

_LOG2_10 = math.log2(10)
Number = int | float


def _bits_of_factorial(n: int) -> float:
    return math.lgamma(n + 1) / math.log(2) if n > 1 else 1.0


def _int_arg(value: Number, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ModelRetry(f"{name} needs integer arguments")
    return value


def _factorial(n: Number) -> int:
    k = _int_arg(n, "factorial")
    if k < 0:
        raise ModelRetry("factorial is defined for non-negative integers only")
    if _bits_of_factorial(k) > MAX_INT_BITS:
        raise ModelRetry(f"factorial({k}) would have about {_bits_of_factorial(k) / _LOG2_10:,.0f} digits, "
                              f"over the limit of {MAX_INT_BITS / _LOG2_10:,.0f}")
    return math.factorial(k)


def _combinatoric(name: str, fn: Callable[[int, int], int]) -> Callable[..., int]:
    def checked(n: Number, k: Number | None = None) -> int:
        a = _int_arg(n, name)
        b = a if k is None else _int_arg(k, name)
        if a < 0 or b < 0:
            raise ModelRetry(f"{name} needs non-negative integers")
        if b <= a:
            bits = (math.lgamma(a + 1) - math.lgamma(a - b + 1)) / math.log(2)
            if name == "comb":
                bits -= math.lgamma(b + 1) / math.log(2)
            if bits > MAX_INT_BITS:
                raise ModelRetry(f"{name}({a}, {b}) would be too large (about {bits / _LOG2_10:,.0f} digits)")
        return fn(a, b)
    return checked


def _round(x: Number, ndigits: Number | None = None) -> Number:
    if ndigits is None:
        return round(x)
    digits = _int_arg(ndigits, "round")
    if abs(digits) > 400:
        raise ModelRetry("round's number of digits must be between -400 and 400")
    return round(x, digits)


def _power(base: Number, exponent: Number, modulus: Number | None = None) -> Number:
    if modulus is not None:
        return pow(_int_arg(base, "pow"), _int_arg(exponent, "pow"), _int_arg(modulus, "pow"))
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        bits = exponent * math.log2(abs(base))
        if bits > MAX_INT_BITS:
            raise ModelRetry(f"{base} ** {exponent} would have about {bits / _LOG2_10:,.0f} digits, over the "
                                  f"limit of {MAX_INT_BITS / _LOG2_10:,.0f}")
    result = base ** exponent
    if isinstance(result, complex):
        raise ModelRetry("the result is a complex number (a negative base with a fractional exponent)")
    return result


FUNCTIONS: dict[str, Callable[..., Number]] = {
    "abs": abs, "round": _round, "min": min, "max": max, "pow": _power,
    "sqrt": math.sqrt, "cbrt": math.cbrt, "exp": math.exp, "log": math.log, "log10": math.log10,
    "log2": math.log2, "log1p": math.log1p, "sin": math.sin, "cos": math.cos, "tan": math.tan,
    "asin": math.asin, "acos": math.acos, "atan": math.atan, "atan2": math.atan2, "sinh": math.sinh,
    "cosh": math.cosh, "tanh": math.tanh, "asinh": math.asinh, "acosh": math.acosh, "atanh": math.atanh,
    "degrees": math.degrees, "radians": math.radians, "floor": math.floor, "ceil": math.ceil,
    "trunc": math.trunc, "fabs": math.fabs, "fmod": math.fmod, "hypot": math.hypot, "gamma": math.gamma,
    "lgamma": math.lgamma, "erf": math.erf, "gcd": math.gcd, "lcm": math.lcm, "isqrt": math.isqrt,
    "factorial": _factorial, "comb": _combinatoric("comb", math.comb), "perm": _combinatoric("perm", math.perm),
}
"""The functions an expression may call (positional arguments only)."""

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: _power,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _parse(expression: str) -> ast.Expression:
    if not isinstance(expression, str) or not expression.strip():
        raise ModelRetry("give an arithmetic expression such as '2 * (3 + 4)'")
    if len(expression) > MAX_CHARS:
        raise ModelRetry(f"the expression has {len(expression):,} characters; at most {MAX_CHARS:,} are accepted")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        detail = exc.msg if isinstance(exc, SyntaxError) else type(exc).__name__
        raise ModelRetry(f"not an arithmetic expression: {detail}") from None
    _check_shape(tree)
    return tree


def _check_shape(tree: ast.Expression) -> None:
    nodes = 0
    stack: list[tuple[ast.AST, int]] = [(tree.body, 1)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise ModelRetry(f"the expression is too long (more than {MAX_NODES} parts)")
        if depth > MAX_DEPTH:
            raise ModelRetry(f"the expression is nested more than {MAX_DEPTH} levels deep")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _check_result(value: Any) -> Number:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ModelRetry(f"the result is not a real number ({type(value).__name__})")
    if isinstance(value, float) and not math.isfinite(value):
        raise ModelRetry("the result is not a finite number (it overflowed, or is undefined)")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ModelRetry(f"an intermediate result has more than {MAX_INT_BITS / _LOG2_10:,.0f} digits")
    return value


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return "attribute access (x.y)"
    if isinstance(node, ast.Name):
        return f"the name {node.id!r} (only {', '.join(CONSTANTS)} and functions such as sqrt(...) are known)"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitXor):
        return "'^' (write powers as a ** b)"
    if isinstance(node, ast.BinOp | ast.UnaryOp):
        return f"the {type(node.op).__name__} operator"
    if isinstance(node, ast.Constant):
        return f"the literal {node.value!r:.40} (only numbers are allowed)"
    return f"{type(node).__name__} expressions"


def _call(node: ast.Call) -> Number:
    if not isinstance(node.func, ast.Name):
        raise ModelRetry(f"{_describe(node.func)} not allowed in a calculation; call functions by name")
    if node.func.id not in FUNCTIONS:
        raise ModelRetry(f"calling {node.func.id!r} is not allowed; known functions: "
                              f"{', '.join(sorted(FUNCTIONS))}")
    if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        raise ModelRetry(f"{node.func.id}(...) takes positional arguments only")
    args = [_eval(a) for a in node.args]
    return FUNCTIONS[node.func.id](*args)


def _eval(node: ast.AST) -> Number:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        value: Any = node.value
    elif isinstance(node, ast.Name) and node.id in CONSTANTS:
        value = CONSTANTS[node.id]
    elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        value = _UNARY[type(node.op)](_eval(node.operand))
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        value = _BINARY[type(node.op)](_eval(node.left), _eval(node.right))
    elif isinstance(node, ast.Call):
        value = _call(node)
    else:
        raise ModelRetry(f"{_describe(node)} not allowed in a calculation")
    return _check_result(value)


def evaluate(expression: str) -> Number:
    """The value of an arithmetic expression (see the module docstring for what is accepted).

    Raises:
        ModelRetry: the expression is refused, or has no finite real result.
    """
    tree = _parse(expression)
    try:
        return _eval(tree.body)
    except ModelRetry:
        raise
    except ZeroDivisionError:
        raise ModelRetry("division by zero") from None
    except OverflowError:
        raise ModelRetry("the result is too large to represent") from None
    except (ValueError, TypeError) as exc:
        raise ModelRetry(f"math error: {exc}") from None


def _format(value: Number) -> str:
    return str(value) if isinstance(value, int) else repr(value)


@tool(name="calculator", permission="readonly", tags=["math", "builtin"], metadata={"breaker": False})
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression exactly, e.g. "2 ** 64", "sqrt(2) * pi" or "factorial(20) / 3".

    Supports + - * / // % ** and parentheses, the constants pi, e and tau, and the functions abs, round,
    min, max, pow, sqrt, cbrt, exp, log (log(x, base)), log10, log2, trigonometric and hyperbolic
    functions, degrees, radians, floor, ceil, trunc, hypot, gcd, lcm, isqrt, factorial, comb and perm.
    Integers are exact (up to about 3,000 digits).

    Args:
        expression: the expression to evaluate.
    """
    return _format(evaluate(expression))
