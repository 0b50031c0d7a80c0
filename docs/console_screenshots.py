"""Regenerate the screenshots of docs/console.md: ``uv run --all-extras python docs/console_screenshots.py``.

Starts ``toolrig serve --console`` on the console tests' example tools (tests/console/fixtures) in a temporary
folder, makes a few calls (one waits for approval), runs the two-step workflow, then photographs the four views
with Debian's chromium through Playwright (``apt-get install chromium``; no browser download) into docs/images/.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import anyio
from playwright.sync_api import expect, sync_playwright

DOCS = Path(__file__).resolve().parent
FIXTURES = DOCS.parent / "tests" / "console" / "fixtures"
IMAGES = DOCS / "images"


def _config(folder: Path) -> Path:
    for name in ("console_tools.py", "two_steps.yaml"):
        shutil.copy(FIXTURES / name, folder / name)
    (folder / "gates").mkdir()
    (folder / "gates" / "g1").write_text("open")
    config = folder / "toolrig.toml"
    config.write_text(f"""
[tools]
modules = ["console_tools.py"]
[policy]
ask = ["delete_record"]
[approvals]
backend = "queue"
queue = "{folder / 'approvals.db'}"
[runtime]
audit = "audit.db"
audit_mode = "strict"
[workflows]
files = ["two_steps.yaml"]
journal = "runs.db"
""")
    return config


async def _call(url: str, tool: str, arguments: dict[str, object]) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http, \
            Client(streamable_http_client(url, http_client=http), mode="legacy", cache=None) as client:
        await client.call_tool(tool, arguments)


def _lines(proc: subprocess.Popen[str], seen: list[str], ready: threading.Event) -> None:
    assert proc.stderr is not None
    for line in proc.stderr:
        seen.append(line)
        if any('"event": "console"' in x for x in seen) and any('"event": "ready"' in x for x in seen):
            ready.set()
    ready.set()


def main() -> None:
    IMAGES.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = {**os.environ, "TOOLRIG_TEST_GATES": str(folder / "gates"), "TOOLRIG_JOURNAL": str(folder / "runs.db")}
        proc = subprocess.Popen([sys.executable, "-m", "toolrig", "serve", "--config", str(_config(folder)), "--http",
                                 "127.0.0.1:0", "--console", "--json"], cwd=folder, env=env, text=True,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
        seen: list[str] = []
        ready = threading.Event()
        threading.Thread(target=_lines, args=(proc, seen, ready), daemon=True).start()
        try:
            if not ready.wait(90):
                raise SystemExit("toolrig serve --console did not start:\n" + "".join(seen))
            url = next(json.loads(x)["url"] for x in seen if '"event": "console"' in x)
            mcp = next(json.loads(x)["where"] for x in seen if '"event": "ready"' in x)
            _shoot(url, mcp)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(30)


def _shoot(url: str, mcp: str) -> None:
    base = url.split("/login", maxsplit=1)[0]
    for text in ("hello", "tools for agents", "again"):
        anyio.run(_call, mcp, "shout", {"text": text})
    anyio.run(_call, mcp, "evil_echo", {"text": "hi"})
    waiting = threading.Thread(target=anyio.run, args=(_call, mcp, "delete_record", {"record": "invoice-7\u202e"}),
                               daemon=True)
    waiting.start()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
        page = browser.new_page(viewport={"width": 1280, "height": 1100})
        page.goto(url)
        page.goto(base + "/tools/ship")
        page.get_by_label("name", exact=True).fill("ann")
        page.get_by_label("weight", exact=True).fill("2.5")
        page.get_by_label("city", exact=True).fill("Oslo")
        page.get_by_role("button", name="Run").click()
        expect(page.locator("#outcome-structured")).to_contain_text("ann->Oslo")
        page.get_by_role("heading", name="Description").scroll_into_view_if_needed()
        page.mouse.wheel(0, -2000)
        page.screenshot(path=str(IMAGES / "console-tools.png"), full_page=False)
        page.goto(base + "/approvals")
        expect(page.locator("article.card")).to_have_count(1, timeout=60_000)
        page.screenshot(path=str(IMAGES / "console-approvals.png"))
        page.goto(base + "/workflows/two_steps")
        page.get_by_label("gate", exact=True).fill("g1")
        page.get_by_role("button", name="Start").click()
        expect(page.locator("#run-status")).to_have_text("ok", timeout=60_000)
        page.screenshot(path=str(IMAGES / "console-workflows.png"))
        page.goto(base + "/audit")
        page.screenshot(path=str(IMAGES / "console-audit.png"))
        page.goto(base + "/approvals")
        page.locator("article.card").get_by_role("button", name="Deny").click()
        browser.close()
    waiting.join(30)


if __name__ == "__main__":
    main()
