"""Record and replay at the pipeline boundary: strict replays with no tool body run (network blocked), misses that
name the JSON path of the first difference, secrets never kept, errors / timeouts / retries replayed, repeated and
concurrent calls replayed deterministically, every mode, both file formats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from replay_tools import RUNS, TOOLS, local_server, network_blocked

from toolrig import ErrorKind, Runtime, ToolCall
from toolrig import workflows as wf
from toolrig.errors import ConfigError
from toolrig.replay import FORMAT_VERSION, Cassette, read_cassette

pytestmark = pytest.mark.anyio

SECRET = "sk-proj-" + "Q7xv" * 10


@pytest.fixture(autouse=True)
def _fresh_counts() -> None:
    RUNS.clear()


def weather_flow() -> wf.Workflow:
    return wf.Workflow("weather", inputs={"type": "object", "properties": {"city": {"type": "string"}}}, steps=[
        wf.step("look", "forecast", city="${inputs.city}"),
        wf.step("think", "advise", forecast="${steps.look.output.forecast}", city="${inputs.city}"),
        wf.step("share", "post", text="${steps.think.output}", api_key=SECRET),
    ])


async def record_weather(path: Path, cities: tuple[str, ...] = ("Oslo",)) -> list[wf.WorkflowRun]:
    with local_server():
        async with Runtime(TOOLS, audit=False, recorder=Cassette(path, mode="record")) as rt:
            return [await weather_flow().run(rt, {"city": c}) for c in cities]


@pytest.mark.parametrize("suffix", ["yaml", "jsonl", "json"])
async def test_a_recorded_three_step_workflow_replays_offline_with_no_tool_body_run(tmp_path: Path,
                                                                                    suffix: str) -> None:
    path = tmp_path / f"weather.{suffix}"
    [recorded] = await record_weather(path)
    assert recorded.status == "ok" and RUNS == {"forecast": 1, "advise": 1, "post": 1}
    RUNS.clear()
    with network_blocked():
        async with Runtime(TOOLS, audit=False, recorder=Cassette(path, mode="replay")) as rt:
            replayed = await weather_flow().run(rt, {"city": "Oslo"})
    assert RUNS == {}  # no body ran, and nothing reached the network
    assert replayed.status == "ok" and replayed.output == recorded.output
    assert {k: s.output for k, s in replayed.steps.items()} == {k: s.output for k, s in recorded.steps.items()}
    assert all(s.outcome is not None and s.outcome.meta.get("replayed") for s in replayed.steps.values())


async def test_a_changed_argument_is_a_replay_miss_naming_its_json_path(tmp_path: Path) -> None:
    path = tmp_path / "weather.yaml"
    await record_weather(path)
    RUNS.clear()
    async with Runtime(TOOLS, audit=False, recorder=Cassette(path, mode="replay")) as rt:
        run = await weather_flow().run(rt, {"city": "Bergen"})
        nested = await rt.call(ToolCall(name="post", arguments={"text": "Oslo: sunglasses", "api_key": "other"}))
        unknown = await rt.call(ToolCall(name="tick", arguments={"label": "x"}))
    assert run.status == "error" and run.stopped_at == "look" and RUNS == {}
    miss = run.steps["look"].outcome
    assert miss is not None and miss.error is not None and miss.error.kind is ErrorKind.REPLAY_MISS
    assert miss.error.details["path"] == "$.arguments.city"
    assert '$.arguments.city (recorded "Oslo", called with "Bergen")' in miss.error.message
    # a secret argument matches by its redacted form: a different key is not told apart (it is never kept)
    assert nested.ok
    assert unknown.error is not None and unknown.error.kind is ErrorKind.REPLAY_MISS
    assert unknown.error.details["path"] == "$.tool" and "any call to 'tick'" in unknown.error.message
    assert "forecast" in unknown.error.message


async def test_a_changed_version_is_a_miss_at_version(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    with local_server():
        async with Runtime(TOOLS, audit=False, recorder=Cassette(path, mode="record")) as rt:
            await rt.call(ToolCall(name="advise", arguments={"forecast": "sunny", "city": "Oslo"}))
    [advise] = [t for t in TOOLS if t.name == "advise"]
    newer = advise.with_spec(version="2.0.0")
    async with Runtime([newer], audit=False, recorder=Cassette(path, mode="replay")) as rt:
        out = await rt.call(ToolCall(name="advise", arguments={"forecast": "sunny", "city": "Oslo"}))
    assert out.error is not None and out.error.details["path"] == "$.version"


async def test_a_secret_argument_never_reaches_the_cassette(tmp_path: Path) -> None:
    for suffix in ("yaml", "jsonl", "json"):
        path = tmp_path / f"secret.{suffix}"
        await record_weather(path)
        text = path.read_text()
        assert SECRET not in text and SECRET[:20] not in text
        assert "[REDACTED" in text
    kept = read_cassette(tmp_path / "secret.yaml")
    [posted] = [i for i in kept if i["tool"] == "post"]
    assert posted["arguments"]["api_key"] == "[REDACTED]"
    assert SECRET not in json.dumps(posted["outcome"])  # the result echoed it: redacted there too


async def test_errors_timeouts_and_retries_are_recorded_and_replayed(tmp_path: Path) -> None:
    path = tmp_path / "failures.yaml"
    calls = [ToolCall(name="fail", arguments={"reason": "down"}), ToolCall(name="hang", arguments={"seconds": 9}),
             ToolCall(name="flaky", arguments={"key": "k"})]
    async with Runtime(TOOLS, audit=False, recorder=Cassette(path, mode="record")) as rt:
        recorded = [await rt.call(c) for c in calls]
    assert [o.error.kind if o.error else None for o in recorded] == [ErrorKind.EXECUTION_ERROR, ErrorKind.TIMEOUT,
                                                                      None]
    assert recorded[2].attempts == 3 and RUNS["flaky"] == 3
    kept = read_cassette(path)
    assert [i["tool"] for i in kept] == ["fail", "hang", "flaky", "flaky", "flaky"]  # one per attempt
    RUNS.clear()
    async with Runtime(TOOLS, audit=False, recorder=Cassette(path, mode="replay")) as rt:
        replayed = [await rt.call(c) for c in calls]
    assert RUNS == {}
    assert [(o.ok, o.error.kind if o.error else None, o.content) for o in replayed] == [
        (o.ok, o.error.kind if o.error else None, o.content) for o in recorded]
    assert replayed[2].attempts == 3  # the retry stage retried the replayed failures, by their classes


async def test_repeated_identical_calls_replay_in_recorded_order(tmp_path: Path) -> None:
    path = tmp_path / "ticks.yaml"
    call = ToolCall(name="tick", arguments={"label": "same"})
    async with Runtime(TOOLS, audit=False, recorder=Cassette(path, mode="record")) as rt:
        recorded = [(await rt.call(call)).structured for _ in range(3)]
    async with Runtime(TOOLS, audit=False, recorder=Cassette(path, mode="replay")) as rt:
        replayed = [(await rt.call(call)).structured for _ in range(4)]
    assert replayed == [*recorded, recorded[-1]]  # past the recordings, the last one again
    cassette = Cassette(path, mode="replay", allow_repeats=False)
    async with Runtime(TOOLS, audit=False, recorder=cassette) as rt:
        strict = [await rt.call(call) for _ in range(4)]
    assert [o.structured for o in strict[:3]] == recorded
    assert strict[3].error is not None and "all replayed already" in strict[3].error.message
    assert cassette.unplayed == []


async def test_concurrent_identical_calls_replay_the_same_way_whatever_order_they_arrive_in(tmp_path: Path) -> None:
    path = tmp_path / "fan.yaml"
    flow = wf.Workflow("fan", steps=[wf.parallel("p", *[wf.step(f"t{i}", "tick", label="same") for i in range(4)])])
    async with Runtime(TOOLS, audit=False, recorder=Cassette(path, mode="record")) as rt:
        recorded = (await flow.run(rt)).output
    assert len(set(recorded.values())) == 4  # four identical calls, four different results
    for limit in (1, 2, 4):
        reordered = wf.Workflow("fan", steps=[wf.parallel("p", *[wf.step(f"t{i}", "tick", label="same")
                                                                for i in reversed(range(4))], max_concurrency=limit)])
        async with Runtime(TOOLS, audit=False, recorder=Cassette(path, mode="replay")) as rt:
            assert (await reordered.run(rt)).output == recorded


async def test_a_hundred_concurrent_replays_give_identical_results(tmp_path: Path) -> None:
    path = tmp_path / "weather.yaml"
    recorded = await record_weather(path, ("Oslo", "Lima"))
    RUNS.clear()
    results: list[Any] = [None] * 100
    with network_blocked():
        async with Runtime(TOOLS, audit=False, recorder=Cassette(path, mode="replay")) as rt:
            async def replay(i: int) -> None:
                run = await weather_flow().run(rt, {"city": ("Oslo", "Lima")[i % 2]})  # one user, one runtime
                results[i] = (run.status, run.output, {k: s.output for k, s in run.steps.items()})

            async with anyio.create_task_group() as tg:
                for i in range(100):
                    tg.start_soon(replay, i)
    assert RUNS == {}
    expected = [(r.status, r.output, {k: s.output for k, s in r.steps.items()}) for r in recorded]
    assert results == [expected[i % 2] for i in range(100)]


async def test_once_records_when_there_is_no_file_and_replays_when_there_is(tmp_path: Path) -> None:
    path = tmp_path / "once.yaml"
    call = ToolCall(name="tick", arguments={"label": "once"})
    first = Cassette(path)
    assert first.mode == "record"
    async with Runtime(TOOLS, audit=False, recorder=first) as rt:
        value = (await rt.call(call)).structured
    second = Cassette(path)
    assert second.mode == "replay"
    async with Runtime(TOOLS, audit=False, recorder=second) as rt:
        assert (await rt.call(call)).structured == value
        assert (await rt.call(ToolCall(name="tick", arguments={"label": "new"}))).error is not None
    assert RUNS["tick"] == 1


async def test_new_episodes_replays_what_it_has_and_records_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "episodes.jsonl"
    async with Runtime(TOOLS, audit=False, recorder=Cassette(path, mode="record")) as rt:
        old = (await rt.call(ToolCall(name="tick", arguments={"label": "old"}))).structured
    async with Runtime(TOOLS, audit=False, recorder=Cassette(path, mode="new_episodes")) as rt:
        assert (await rt.call(ToolCall(name="tick", arguments={"label": "old"}))).structured == old
        new = (await rt.call(ToolCall(name="tick", arguments={"label": "new"}))).structured
    assert RUNS["tick"] == 2 and [i["arguments"]["label"] for i in read_cassette(path)] == ["old", "new"]
    async with Runtime(TOOLS, audit=False, recorder=Cassette(path, mode="replay")) as rt:
        assert (await rt.call(ToolCall(name="tick", arguments={"label": "new"}))).structured == new
    assert RUNS["tick"] == 2


async def test_record_mode_writes_the_file_afresh(tmp_path: Path) -> None:
    path = tmp_path / "fresh.yaml"
    for label in ("first", "second"):
        async with Runtime(TOOLS, audit=False, recorder=Cassette(path, mode="record")) as rt:
            await rt.call(ToolCall(name="tick", arguments={"label": label}))
        assert [i["arguments"]["label"] for i in read_cassette(path)] == [label]


async def test_binary_results_survive_the_cassette(tmp_path: Path) -> None:
    path = tmp_path / "bin.yaml"
    async with Runtime(TOOLS, audit=False, recorder=Cassette(path, mode="record")) as rt:
        recorded = await rt.call(ToolCall(name="picture"))
    async with Runtime(TOOLS, audit=False, recorder=Cassette(path, mode="replay")) as rt:
        replayed = await rt.call(ToolCall(name="picture"))
    assert replayed.result == recorded.result and RUNS["picture"] == 1


async def test_an_empty_or_missing_cassette_says_to_record_it(tmp_path: Path) -> None:
    async with Runtime(TOOLS, audit=False, recorder=Cassette(tmp_path / "none.yaml", mode="replay")) as rt:
        out = await rt.call(ToolCall(name="tick", arguments={"label": "x"}))
    assert out.error is not None and out.error.kind is ErrorKind.REPLAY_MISS and "record it first" in out.error.message
    assert RUNS == {}


def test_the_file_is_versioned_and_a_newer_or_foreign_file_is_refused(tmp_path: Path) -> None:
    newer = tmp_path / "newer.yaml"
    newer.write_text(yaml.safe_dump({"toolrig_cassette": FORMAT_VERSION + 1, "interactions": []}))
    with pytest.raises(ConfigError, match="version"):
        Cassette(newer, mode="replay")
    foreign = tmp_path / "foreign.yaml"
    foreign.write_text("interactions: []\n")
    with pytest.raises(ConfigError, match="not a toolrig cassette"):
        Cassette(foreign, mode="replay")
    with pytest.raises(ValueError, match="mode"):
        Cassette(tmp_path / "x.yaml", mode="sometimes")  # type: ignore[arg-type]


async def test_a_recording_that_cannot_be_read_is_a_miss_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    async with Runtime(TOOLS, audit=False, recorder=Cassette(path, mode="record")) as rt:
        await rt.call(ToolCall(name="tick", arguments={"label": "x"}))
    data = yaml.safe_load(path.read_text())
    data["interactions"][0]["outcome"] = {"ok": True, "result": {"parts": [{"type": "alien"}]}}
    path.write_text(yaml.safe_dump(data))
    async with Runtime(TOOLS, audit=False, recorder=Cassette(path, mode="replay")) as rt:
        out = await rt.call(ToolCall(name="tick", arguments={"label": "x"}))
    assert out.error is not None and out.error.kind is ErrorKind.REPLAY_MISS and "record it" in out.error.message


async def test_a_secret_argument_echoed_by_the_tool_or_marked_secret_by_its_schema_is_never_kept(
        tmp_path: Path) -> None:
    from pydantic import SecretStr

    from toolrig import tool

    @tool(permission="readonly")
    def login(user: str, password: str) -> str:
        """Log in (and say too much)."""
        return f"logged in {user} with {password}"

    @tool(permission="readonly")
    def connect(host: str, credential: SecretStr) -> dict[str, Any]:
        """Connect with a credential the schema marks secret."""
        return {"host": host, "used": credential.get_secret_value()}

    path = tmp_path / "secrets.jsonl"
    async with Runtime([login, connect], audit=False, recorder=Cassette(path, mode="record")) as rt:
        said = await rt.call(ToolCall(name="login", arguments={"user": "ann", "password": "hunter2-horse"}))
        used = await rt.call(ToolCall(name="connect", arguments={"host": "db", "credential": "plain-credential-9"}))
    assert said.ok and used.ok
    text = path.read_text()
    assert "hunter2-horse" not in text and "plain-credential-9" not in text
    assert "logged in ann with [REDACTED]" in text
    async with Runtime([login, connect], audit=False, recorder=Cassette(path, mode="replay")) as rt:
        again = await rt.call(ToolCall(name="login", arguments={"user": "ann", "password": "hunter2-horse"}))
    assert again.ok and again.content == "logged in ann with [REDACTED]"
