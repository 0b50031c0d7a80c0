"""The console's Audit section on a PostgreSQL audit log (a real ``toolrig console`` process and a real server):
rows, filters, one call's page and the export come from the table; an unreachable server is said on the page."""

from __future__ import annotations

import json
import re
import sys
from contextlib import ExitStack
from pathlib import Path

import httpx
import psycopg
from console_helpers import running, write_config

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
from pg_server import postgres_server


def _session(client: httpx.Client, url: str) -> str:
    assert client.get(url).status_code == 303
    match = re.search(r'name="csrf" value="([^"]+)"', client.get("/tools/shout").text)
    assert match
    return match.group(1)


def test_the_audit_section_reads_a_postgresql_log(tmp_path: Path) -> None:
    with postgres_server(tmp_path) as url:
        config = write_config(tmp_path)
        config.write_text(config.read_text().replace('audit = "audit.db"', f'audit = "{url}?table=console_calls"'))
        with running(["console", "--config", str(config)], tmp_path) as run, \
                httpx.Client(base_url=run.base, timeout=60) as client:
            token = _session(client, run.url)
            for text in ("first call", "second_call 100%"):
                answer = client.post("/tools/shout/run", data={"arg/text": text},
                                     headers={"origin": run.base, "x-csrf-token": token})
                assert answer.status_code == 200
            page = client.get("/audit", params={"tool": "shout"}).text
            assert "keeps no audit log" not in page and "cannot read" not in page
            assert "FIRST CALL" in page or "first call" in page
            export = client.get("/audit/export.jsonl", params={"q": "100%"}).text
            rows = [json.loads(line) for line in export.splitlines()]
            assert [r["arguments"] for r in rows] == [{"text": "second_call 100%"}]
            row = rows[0]
            detail = client.get(f"/audit/call/{row['id']}", params={"call_id": row["call_id"]})
            assert detail.status_code == 200 and "second_call 100%" in detail.text
        with psycopg.connect(url, autocommit=True) as conn:  # the rows are in the table the config named
            count = conn.execute("SELECT count(*) FROM console_calls WHERE tool = 'shout'").fetchone()
        assert count is not None and count[0] == 2


def test_an_unreachable_audit_server_is_said_on_the_page(tmp_path: Path) -> None:
    server = ExitStack()
    url = server.enter_context(postgres_server(tmp_path))
    try:
        config = write_config(tmp_path)
        config.write_text(config.read_text().replace('audit = "audit.db"', f'audit = "{url}"'))
        with running(["console", "--config", str(config)], tmp_path) as run, \
                httpx.Client(base_url=run.base, timeout=60) as client:
            _session(client, run.url)
            assert client.get("/audit").status_code == 200
            server.close()  # the PostgreSQL server stops under the running console
            answer = client.get("/audit")
            assert answer.status_code == 200
            assert "cannot read the audit log: OperationalError" in answer.text
    finally:
        server.close()
