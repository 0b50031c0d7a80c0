"""toolrig.guards exports exactly its public names (checked against vars(), not a copied list)."""

from __future__ import annotations

import inspect

import toolrig.guards as guards


def test_all_is_sorted_unique_and_resolves() -> None:
    assert len(set(guards.__all__)) == len(guards.__all__)
    for name in guards.__all__:
        assert getattr(guards, name) is not None, name


def test_every_public_object_defined_in_the_package_is_exported() -> None:
    stray = sorted(name for name, value in vars(guards).items()
                   if not name.startswith("_") and getattr(value, "__module__", "").startswith("toolrig.guards.")
                   and name not in guards.__all__)
    assert stray == []


def test_public_names_have_docstrings() -> None:
    for name in guards.__all__:
        value = getattr(guards, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert (value.__doc__ or "").strip(), name
