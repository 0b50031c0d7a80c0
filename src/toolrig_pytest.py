"""The entry point of toolrig's pytest plugin (``pytest11``); the plugin itself is :mod:`toolrig.replay.pytest_plugin`.

PYTEST_DONT_REWRITE

It lives outside the ``toolrig`` package on purpose: pytest rewrites the assertions of every module in the package
that holds a plugin's entry point (for an editable install, the entry point's top-level package), which would have
it re-parse every toolrig module imported during a test run. This module names only itself.
"""

from toolrig.replay.pytest_plugin import pytest_addoption, pytest_configure, toolrig_cassette

__all__ = ["pytest_addoption", "pytest_configure", "toolrig_cassette"]
