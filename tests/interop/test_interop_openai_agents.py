"""OpenAI Agents both ways: exported tools carry strict schemas and run inside a Runner driven by a local scripted
model (the SDK's Model interface, offline), one audit row per call; imported FunctionTools are validated first."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")
from agents import Agent, FunctionTool, RunConfig, RunContextWrapper, Runner, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.strict_schema import ensure_strict_json_schema
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

import toolrig
from toolrig import CallContext, Runtime, ToolCall
from toolrig.audit import AuditLog
from toolrig.interop import from_openai_agents, to_openai_agents

pytestmark = pytest.mark.anyio


class ScriptedModel(Model):
    """Asks for the scripted tool calls first, then answers with the tools' outputs joined (no network)."""

    def __init__(self, calls: list[tuple[str, Any]]) -> None:
        self.calls = calls
        self.tools_seen: list[list[dict[str, Any]]] = []

    async def get_response(self, system_instructions: Any, input: Any, model_settings: Any, tools: Any,
                           output_schema: Any, handoffs: Any, tracing: Any, *, previous_response_id: Any = None,
                           conversation_id: Any = None, prompt: Any = None) -> ModelResponse:
        self.tools_seen.append([{"name": t.name, "schema": t.params_json_schema, "strict": t.strict_json_schema}
                                for t in tools])
        items = input if isinstance(input, list) else []
        outputs = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
        if not outputs:
            out: list[Any] = [ResponseFunctionToolCall(type="function_call", name=name, call_id=f"call_{i}",
                                                       id=f"fc_{i}", arguments=a if isinstance(a, str)
                                                       else json.dumps(a))
                              for i, (name, a) in enumerate(self.calls)]
        else:
            text = " | ".join(str(o["output"]) for o in outputs)
            out = [ResponseOutputMessage(id="msg_1", type="message", role="assistant", status="completed",
                                         content=[ResponseOutputText(type="output_text", text=text, annotations=[])])]
        return ModelResponse(output=out, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


@toolrig.tool(permission="readonly")
def convert(amount: float, unit: str = "eur", note: str | None = None, rounding: int = 2) -> str:
    """Convert an amount.

    Args:
        amount: how much
        unit: target unit
        note: a remark
        rounding: digits kept
    """
    return f"{round(amount, rounding)} {unit} {note}"


def test_exported_schemas_are_strict() -> None:
    with Runtime([convert], audit=False) as runtime:
        [tool] = to_openai_agents(runtime=runtime)
    schema = tool.params_json_schema
    assert tool.strict_json_schema
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"amount", "unit", "note", "rounding"}
    assert ensure_strict_json_schema(json.loads(json.dumps(schema))) == schema  # the SDK finds nothing to change


async def test_exported_tools_run_inside_a_runner_with_one_audit_row_per_call(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    model = ScriptedModel([
        ("convert", {"amount": 3.14159, "unit": "usd", "note": None, "rounding": None}),  # strict nulls: defaults
        ("convert", {"amount": "lots", "unit": "usd", "note": None, "rounding": 1}),  # bad: never runs
        ("convert", "{not json"),
    ])
    async with Runtime([convert], audit=db, audit_mode="strict") as runtime:
        agent = Agent(name="converter", model=model,
                      tools=to_openai_agents(runtime=runtime, context=CallContext(user="ann")))
        result = await Runner.run(agent, "convert please", run_config=RunConfig(tracing_disabled=True))
    answers = result.final_output.split(" | ")
    assert answers[0] == "3.14 usd None"
    assert answers[1].startswith("Error (invalid_arguments)")
    assert answers[2].startswith("Error (invalid_arguments)")
    rows = AuditLog(db).query(limit=None)
    assert len(rows) == 3  # one per call
    assert sorted(r.call_id for r in rows) == ["call_0", "call_1", "call_2"]
    assert sorted(bool(r.ok) for r in rows) == [False, False, True]
    assert {r.user for r in rows} == {"ann"}
    assert model.tools_seen[0][0]["strict"] is True


async def test_a_function_tool_fed_bad_arguments_is_never_called() -> None:
    ran: list[tuple[int, int]] = []

    @function_tool
    def multiply(a: int, b: int) -> int:
        """Multiply two numbers."""
        ran.append((a, b))
        return a * b

    tools = from_openai_agents(multiply)
    async with Runtime(tools, audit=False) as runtime:
        bad = await runtime.call(ToolCall(name="multiply", arguments={"a": "x", "b": 2}))
        missing = await runtime.call(ToolCall(name="multiply", arguments={"a": 1}))
        ok = await runtime.call(ToolCall(name="multiply", arguments={"a": "3", "b": 4}))
    assert not bad.ok and not missing.ok
    assert ok.ok and ok.content == "12"
    assert ran == [(3, 4)]


async def test_the_run_context_comes_from_the_call_context() -> None:
    @function_tool
    def whose(ctx: RunContextWrapper[dict[str, str]], item: str) -> str:
        """Say whose an item is."""
        return f"{item} belongs to {ctx.context['owner']}"

    assert isinstance(whose, FunctionTool)
    tools = from_openai_agents([whose])
    assert set(tools.get("whose").spec.input_schema["properties"]) == {"item"}  # type: ignore[union-attr]
    async with Runtime(tools, audit=False) as runtime:
        outcome = await runtime.call(ToolCall(name="whose", arguments={"item": "hat"}),
                                     CallContext(deps={"owner": "ann"}))
    assert outcome.content == "hat belongs to ann"
    with pytest.raises(TypeError):
        from_openai_agents([object()])


async def test_round_trip_through_openai_agents() -> None:
    async with Runtime([convert], audit=False) as runtime:
        back = from_openai_agents(to_openai_agents(runtime=runtime, strict=False)).get("convert")
        assert back is not None
        assert back.spec.input_schema == convert.spec.input_schema
        async with Runtime(from_openai_agents(to_openai_agents(runtime=runtime)), audit=False) as outer:
            outcome = await outer.call(ToolCall(name="convert", arguments={
                "amount": 2, "unit": "gbp", "note": None, "rounding": None}))
    assert outcome.ok and outcome.content == "2.0 gbp None"


@contextlib.contextmanager
def chat_completions_server(arguments: list[str]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A local server speaking OpenAI's Chat Completions wire format: first it asks for one tool call per entry of
    ``arguments`` (the tool's JSON arguments as sent), then answers with the tool outputs it was sent."""
    requests: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            requests.append(body)
            outputs = [m["content"] for m in body["messages"] if m.get("role") == "tool"]
            if outputs:
                message: dict[str, Any] = {"role": "assistant", "content": " | ".join(map(str, outputs))}
                finish = "stop"
            else:
                name = body["tools"][0]["function"]["name"]
                message = {"role": "assistant", "content": None, "tool_calls": [
                    {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": a}}
                    for i, a in enumerate(arguments)]}
                finish = "tool_calls"
            answer = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "fake",
                                 "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                                 "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


async def test_a_runner_on_the_chat_completions_wire_format(tmp_path: Path) -> None:
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    db = tmp_path / "audit.db"
    sent = [json.dumps({"amount": 1.5, "unit": "chf", "note": "hi", "rounding": None}), '{"amount": "x"}']
    with chat_completions_server(sent) as (url, requests):
        client = AsyncOpenAI(base_url=url, api_key="not-a-real-key", max_retries=0)
        async with Runtime([convert], audit=db, audit_mode="strict") as runtime:
            agent = Agent(name="converter", tools=to_openai_agents(runtime=runtime),
                          model=OpenAIChatCompletionsModel(model="fake", openai_client=client))
            result = await Runner.run(agent, "convert", run_config=RunConfig(tracing_disabled=True))
        await client.close()
    [tool] = requests[0]["tools"]
    assert tool["function"]["strict"] is True and tool["function"]["parameters"]["additionalProperties"] is False
    first, second = result.final_output.split(" | ")
    assert first == "1.5 chf hi" and second.startswith("Error (invalid_arguments)")
    rows = AuditLog(db).query(limit=None)
    assert sorted((r.call_id, bool(r.ok)) for r in rows) == [("call_0", True), ("call_1", False)]
