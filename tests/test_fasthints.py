"""The cheap signature and type-hint readers agree with inspect and typing."""

from __future__ import annotations

import functools
import inspect
import textwrap
import typing
from typing import Any

import pytest

from toolrig._schemas.fasthints import plain_parameters, plain_type_hints

SOURCES = [
    "def f(): pass",
    "def f(a, b=1, *, c, d=2): pass",
    "def f(a, /, b, c=3, *, d=None): pass",
    "def f(a: int, b: 'list[str]' = [], c: 'Optional[int]' = None) -> 'str': pass",
    "def f(self, x: int = 1, *, y: str = 'a') -> None: pass",
    "def f(a=1, /, b=2): pass",
]


def define(source: str, future: bool = True) -> Any:
    namespace: dict[str, Any] = {"Optional": typing.Optional}
    header = "from __future__ import annotations\n" if future else ""
    exec(compile(header + textwrap.dedent(source), "<test>", "exec", dont_inherit=True), namespace)
    return namespace["f"]


@pytest.mark.parametrize("source", SOURCES)
def test_parameters_match_inspect_signature(source: str) -> None:
    fn = define(source)
    expected = [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]
    assert plain_parameters(fn) == expected


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("future", [True, False])
def test_type_hints_match_get_type_hints(source: str, future: bool) -> None:
    fn = define(source, future)
    hints = plain_type_hints(fn)
    if future and ": '" in source:  # quoted inside postponed annotations: left to get_type_hints
        assert hints is None
    else:
        assert hints == typing.get_type_hints(fn, include_extras=True)


def test_other_callables_are_declined() -> None:
    def base(a: int) -> int:
        return a

    @functools.wraps(base)
    def wrapped(*args: Any, **kwargs: Any) -> int:
        return base(*args, **kwargs)

    for fn in (wrapped, len, functools.partial(base, 1), [].append):
        assert plain_parameters(fn) is None
        assert plain_type_hints(fn) is None
    assert plain_parameters(define("def f(*args): pass")) is None
    assert plain_parameters(define("def f(**kwargs): pass")) is None
    signed = define("def f(a): pass")
    signed.__signature__ = inspect.Signature()
    assert plain_parameters(signed) is None


def test_bound_methods_match_inspect_and_typing() -> None:
    class Holder:
        def method(self, a: int, /, b: str = "x", *, c: bool = False) -> int:
            return a

        @classmethod
        def make(cls, size: float) -> None:
            return None

        def odd(*args: int) -> None:
            return None

    for method in (Holder().method, Holder.make):
        expected = [(p.name, p.kind, p.default) for p in inspect.signature(method).parameters.values()]
        assert plain_parameters(method) == expected
        assert plain_type_hints(method) == typing.get_type_hints(method, include_extras=True)
    assert plain_parameters(Holder().odd) is None


def test_unresolvable_hints_are_declined() -> None:
    assert plain_type_hints(define("def f(a: Missing) -> None: pass")) is None
    assert plain_type_hints(define("def f(a: 'not valid python(') -> None: pass")) is None
    no_check = define("def f(a: int) -> None: pass")
    no_check.__no_type_check__ = True
    assert plain_type_hints(no_check) is None


def test_a_rebound_name_is_evaluated_again() -> None:
    namespace: dict[str, Any] = {}
    exec("from __future__ import annotations\nclass Thing: pass\ndef f(a: Thing) -> None: pass", namespace)
    first = plain_type_hints(namespace["f"])
    exec("class Thing: pass", namespace)  # a reload rebinds the name to a new class
    second = plain_type_hints(namespace["f"])
    assert first is not None and second is not None
    assert first["a"] is not second["a"]
    assert second["a"] is namespace["Thing"]


def test_the_same_text_in_another_module_sees_its_own_names() -> None:
    one: dict[str, Any] = {"Thing": int}
    two: dict[str, Any] = {"Thing": str}
    for namespace in (one, two):
        exec("from __future__ import annotations\ndef f(a: list[Thing]) -> None: pass", namespace)
    assert plain_type_hints(one["f"]) == {"a": list[int], "return": type(None)}
    assert plain_type_hints(two["f"]) == {"a": list[str], "return": type(None)}
