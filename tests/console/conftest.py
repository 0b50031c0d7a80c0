"""Fixtures of the console's tests: one chromium (Debian's, through Playwright) per test module; a fresh context and
page per test, failing the test on any console error or CSP violation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from console_helpers import PageProblems, need_chromium


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """Playwright's sync API runs an event loop in this thread while it is open: closed at the module's end, so
    that the tests after it can run their own loops (``anyio.run``, ``asyncio.run``)."""
    executable = need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    """A page in a fresh context (its own cookies); the test fails if the page logs an error or violates the CSP."""
    from playwright.sync_api import expect

    expect.set_options(timeout=60_000)  # a loaded CI machine; no test waits when all is well
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems = PageProblems(page)
    try:
        yield page
        problems.check()
    finally:
        context.close()
