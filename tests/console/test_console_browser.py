"""The console in a real browser (Debian's chromium through Playwright): every test fails on a console error or a
CSP violation (see conftest.py). The console runs as ``toolrig console`` / ``toolrig serve --console`` processes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from console_helpers import running, write_config
from playwright.sync_api import expect

pytestmark = pytest.mark.slow


@pytest.fixture
def console(tmp_path: Path) -> Iterator[Any]:
    config = write_config(tmp_path)
    with running(["console", "--config", str(config)], tmp_path) as run:
        yield run


def signed_in(page: Any, console: Any) -> None:
    page.goto(console.url)
    expect(page.get_by_role("link", name="Tools", exact=True)).to_be_visible()


def test_a_form_for_a_nested_schema_is_filled_and_run(page: Any, console: Any) -> None:
    signed_in(page, console)
    page.get_by_label("Search").fill("parcel address")
    page.get_by_role("button", name="Search").click()
    page.get_by_role("link", name="ship", exact=True).click()
    expect(page.get_by_role("heading", name=re.compile("^ship"))).to_be_visible()
    page.get_by_label("name", exact=True).fill("ann")
    page.get_by_label("weight", exact=True).fill("heavy")  # not a number: the validator says so, at the field
    page.get_by_label("city", exact=True).fill("Oslo")
    page.get_by_role("button", name="Run").click()
    expect(page.locator(".field.invalid")).to_contain_text("valid number")
    page.get_by_label("weight", exact=True).fill("2.5")
    page.get_by_label("zip", exact=True).fill("150")
    page.get_by_label("mode", exact=True).select_option("sea")
    page.get_by_label("tags", exact=True).fill("fragile\nblue")
    page.get_by_label("express", exact=True).select_option("true")
    page.get_by_role("button", name="Run").click()
    structured = page.locator("#outcome-structured")
    expect(structured).to_contain_text("ann->Oslo")
    data = json.loads(structured.inner_text())
    assert data == {"label": "ann->Oslo", "weight": 2.5, "mode": "sea", "tags": ["fragile", "blue"],
                    "express": True, "count": 1}
    expect(page.get_by_role("status", name="Outcome")).to_contain_text("Outcome: ok")


def test_xss_in_descriptions_and_outputs_renders_as_text(page: Any, console: Any) -> None:
    signed_in(page, console)
    page.goto(console.base + "/tools/evil_echo")
    expect(page.locator("#description")).to_contain_text("<script>window.__xss = 1</script>")
    page.get_by_label("text", exact=True).fill('<img src=x onerror="window.__xss = 3">')
    page.get_by_role("button", name="Run").click()
    expect(page.locator("#outcome-content")).to_contain_text('onerror="window.__xss = 2"')
    expect(page.locator("#outcome-content")).to_contain_text('onerror="window.__xss = 3"')
    assert page.evaluate("window.__xss") is None
    assert page.locator("img[src=x]").count() == 0
    page.goto(console.base + "/audit?tool=evil_echo")
    expect(page.locator("#audit-rows")).to_contain_text("window.__xss = 3")
    assert page.evaluate("window.__xss") is None


def test_the_audit_view_filters(page: Any, console: Any) -> None:
    signed_in(page, console)
    for tool, text in (("shout", "hello"), ("evil_echo", "needle-in-hay")):
        page.goto(f"{console.base}/tools/{tool}")
        page.get_by_label("text", exact=True).fill(text)
        page.get_by_role("button", name="Run").click()
        expect(page.get_by_role("status", name="Outcome")).to_contain_text("Outcome: ok")
    page.get_by_role("link", name="Audit", exact=True).click()
    rows = page.locator("#audit-rows tbody tr")
    expect(rows).to_have_count(2)
    page.get_by_label("Tool", exact=True).fill("shout")
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("shout")
    page.get_by_label("Tool", exact=True).fill("")
    page.get_by_label("Text", exact=True).fill("needle-in")
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("evil_echo")
    expect(page.get_by_role("img", name=re.compile("evil_echo: calls and latency"))).to_be_visible()
    rows.first.get_by_role("link").click()
    expect(page.get_by_role("heading", name="Arguments")).to_be_visible()
    expect(page.locator("main")).to_contain_text("needle-in-hay")


def test_a_two_step_workflow_run_is_watched_live(page: Any, console: Any, tmp_path: Path) -> None:
    signed_in(page, console)
    page.get_by_role("link", name="Workflows", exact=True).click()
    expect(page.get_by_role("img", name="two_steps workflow graph")).to_be_visible()
    page.get_by_role("link", name="two_steps", exact=True).click()
    page.get_by_label("gate", exact=True).fill("g1")
    page.get_by_role("button", name="Start").click()
    expect(page.get_by_role("heading", name=re.compile("^Run "))).to_be_visible()
    graph = page.get_by_role("img", name="two_steps workflow graph")
    expect(graph.locator('g[data-step="first"]')).to_have_attribute("data-status", "running")
    expect(page.locator("#run-status")).to_have_text("running")
    (tmp_path / "gates" / "g1").write_text("open")  # the first step may finish now: the page follows live
    expect(graph.locator('g[data-step="second"]')).to_have_attribute("data-status", "ok")
    expect(graph.locator('g[data-step="first"]')).to_have_attribute("data-status", "ok")
    expect(page.locator("#run-status")).to_have_text("ok")
    expect(page.locator('tr[data-step="second"]')).to_contain_text("GATE G1 OPEN")


async def _call(url: str, tool: str, arguments: dict[str, Any]) -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy", cache=None) as client:
            return await client.call_tool(tool, arguments)


def test_calls_an_mcp_client_waits_on_are_approved_and_denied_in_the_browser(page: Any, tmp_path: Path) -> None:
    config = write_config(tmp_path)
    argv = ["serve", "--config", str(config), "--http", "127.0.0.1:0", "--console", "--json"]
    with running(argv, tmp_path) as served:
        mcp_url = json.loads(served.line_matching(r'^\{.*"event": "ready".*\}$').group(0))["where"]
        results: dict[str, Any] = {}

        def call(key: str, record: str) -> None:
            results[key] = anyio.run(_call, mcp_url, "delete_record", {"record": record})

        import threading

        waiting = [threading.Thread(target=call, args=("r1", "r-1\u202e"), daemon=True),
                   threading.Thread(target=call, args=("r2", "r-2"), daemon=True)]
        for thread in waiting:
            thread.start()
        signed_in(page, served)
        page.get_by_role("link", name="Approvals", exact=True).click()
        cards = page.locator("article.card")
        expect(cards).to_have_count(2, timeout=60_000)  # they arrive live, over server-sent events
        first = cards.filter(has_text="r-1<U+202E>")
        second = cards.filter(has_text='"r-2"')
        expect(first).to_contain_text("delete_record")
        assert page.evaluate("document.activeElement.textContent") != "Approve"
        first.get_by_label("Reason").fill("checked by a person")
        first.get_by_role("button", name="Approve", exact=True).click()
        expect(first).to_contain_text("approved")
        second.get_by_label("Reason").fill("not this one")
        second.get_by_label("Reason").press("Enter")  # Enter in the reason denies: never approves by accident
        expect(second).to_contain_text("denied")
        for thread in waiting:
            thread.join(timeout=60)
        assert not results["r1"].is_error and "deleted r-1" in results["r1"].content[0].text
        assert results["r2"].is_error and "not this one" in results["r2"].content[0].text
        expect(page.get_by_role("button", name="Approve", exact=True)).to_have_count(0)  # decided: no buttons left
        expect(first.locator(".decided")).to_contain_text("checked by a person")


def test_a_run_waiting_for_approval_is_approved_and_resumed(page: Any, console: Any, tmp_path: Path) -> None:
    started = subprocess.run(  # another process starts the run; with nobody to ask, it stops and waits
        [sys.executable, "-m", "toolrig", "workflow", "run", "approve_then.yaml", "--from", "console_tools.py",
         "--journal", str(tmp_path / "runs.db"), "--queue", str(tmp_path / "approvals.db"), "--inputs",
         '{"record": "r9"}', "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert started.returncode == 3, started.stdout + started.stderr
    run_id = json.loads(started.stdout)["run_id"]
    signed_in(page, console)
    page.goto(f"{console.base}/workflows/runs/{run_id}")
    graph = page.get_by_role("img", name="approve_then workflow graph")
    expect(graph.locator('g[data-step="archive"]')).to_have_attribute("data-status", "waiting_approval")
    page.get_by_role("link", name="Approvals", exact=True).click()
    card = page.locator("article.card").filter(has_text="archive_record")
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(card).to_contain_text("approved")
    page.goto(f"{console.base}/workflows/runs/{run_id}")
    page.get_by_role("button", name="Resume").click()
    expect(page.locator("#run-status")).to_have_text("ok")
    expect(graph.locator('g[data-step="archive"]')).to_have_attribute("data-status", "ok")
    expect(page.locator('tr[data-step="archive"]')).to_contain_text("archived r9")
