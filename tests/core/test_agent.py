"""The ReAct loop, driven by the scripted provider."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from piton.core.conversation.events import (
    MessageDone,
    Result,
    SessionStarted,
    TextDelta,
    ToolFinished,
    ToolResultsMessage,
    ToolStarted,
)
from piton.core.conversation.history import is_valid, to_api_messages
from piton.core.conversation.messages import (
    INTERRUPTED_REQUEST,
    INTERRUPTED_TOOL_RESULT,
    Message,
    RedactedThinkingBlock,
    ThinkingBlock,
    ToolResultBlock,
)
from piton.core.conversation.usage import Usage
from piton.core.providers import ProviderError
from piton.testing.script import RedactedThinking, Thinking, ToolCall, reply
from piton.testing.scripted import ScriptedProvider
from tests.fakes.tools import Boom, NoOp, Probe, forever, make_agent
from tests.fakes.validate import history_problem
from tests.helpers import CEILING_S, collect


def result_of(events: list[Any]) -> Result:
    assert isinstance(events[-1], Result)
    return events[-1]


def results_in(message: Message) -> list[tuple[str, str, bool]]:
    return [(b.tool_use_id, str(b.content), b.is_error) for b in message.tool_results]


def assert_api_valid(history: list[Message]) -> None:
    assert is_valid(history)
    assert history_problem(to_api_messages(history)) is None


def test_a_plain_answer_ends_the_run() -> None:
    provider = ScriptedProvider(reply("Hello! How can I help?"))
    agent = make_agent(provider)
    events = collect(agent.run("hi"))
    assert isinstance(events[0], SessionStarted)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello! How can I help?"
    result = result_of(events)
    assert (result.subtype, result.is_error, result.result, result.num_turns) == (
        "success",
        False,
        "Hello! How can I help?",
        1,
    )
    assert result.stop_reason == "end_turn"
    assert [m.role for m in agent.history] == ["user", "assistant"]
    provider.assert_complete()


def test_the_request_carries_system_prompt_tools_and_thinking() -> None:
    provider = ScriptedProvider(reply("ok"))
    collect(make_agent(provider, NoOp(), thinking=False).run("hi"))
    seen = provider.requests[0]
    assert seen.system == "You are a test agent."
    assert [t["name"] for t in seen.tools] == ["NoOp"]
    assert seen.tools[0]["input_schema"]["required"] == ["text"]
    assert seen.thinking is False


def test_tool_calls_run_and_their_results_go_back_in_one_message_in_call_order() -> None:
    a, b = ToolCall("Echo", {"text": "one"}), ToolCall("Echo", {"text": "two"})
    provider = ScriptedProvider(reply("Let me check.", a, b), reply("Both done."))
    agent = make_agent(provider, Probe("Echo"))
    events = collect(agent.run("go"))
    assert result_of(events).result == "Both done."
    assert result_of(events).num_turns == 2
    second_request = provider.requests[1].messages
    assert results_in(second_request[-1]) == [(a.id, "Echo: one", False), (b.id, "Echo: two", False)]
    started = [e.tool_use_id for e in events if isinstance(e, ToolStarted)]
    assert started == [a.id, b.id]
    assert sum(isinstance(e, ToolResultsMessage) for e in events) == 1
    assert_api_valid(agent.history)


def test_read_only_calls_of_one_turn_run_concurrently() -> None:
    # each waits for the other to start: run one after the other, they would deadlock
    started = {"A": asyncio.Event(), "B": asyncio.Event()}

    def waits_for(other: str, me: str) -> Any:
        async def action(_: str) -> str:
            started[me].set()
            await asyncio.wait_for(started[other].wait(), timeout=CEILING_S)
            return f"{me} saw {other}"

        return action

    tool_a = Probe("A", waits_for("B", "A"), read_only=True)
    tool_b = Probe("B", waits_for("A", "B"), read_only=True)
    provider = ScriptedProvider(
        reply(ToolCall("A", {"text": "x"}), ToolCall("B", {"text": "y"})), reply("done")
    )
    agent = make_agent(provider, tool_a, tool_b)
    events = collect(agent.run("go"))
    assert result_of(events).subtype == "success"
    assert [r[1] for r in results_in(provider.requests[1].messages[-1])] == ["A saw B", "B saw A"]


def test_results_keep_call_order_when_calls_finish_in_another_order() -> None:
    async def slow(_: str) -> str:
        await asyncio.sleep(0.05)
        return "slow"

    async def fast(_: str) -> str:
        return "fast"

    first, second = ToolCall("Slow", {"text": "1"}), ToolCall("Fast", {"text": "2"})
    provider = ScriptedProvider(reply(first, second), reply("done"))
    agent = make_agent(provider, Probe("Slow", slow, read_only=True), Probe("Fast", fast, read_only=True))
    events = collect(agent.run("go"))
    assert [e.tool_use_id for e in events if isinstance(e, ToolFinished)] == [second.id, first.id]
    assert [r[0] for r in results_in(provider.requests[1].messages[-1])] == [first.id, second.id]


def test_mutating_calls_run_one_at_a_time_in_order() -> None:
    async def nap(_: str) -> str:
        await asyncio.sleep(0.01)
        return "done"

    writer = Probe("Write", nap)
    calls = [ToolCall("Write", {"text": str(i)}) for i in range(3)]
    provider = ScriptedProvider(reply(*calls), reply("ok"))
    collect(make_agent(provider, writer).run("go"))
    assert writer.log == ["start 0", "end 0", "start 1", "end 1", "start 2", "end 2"]


def test_a_mutating_call_waits_for_the_read_only_batch_before_it() -> None:
    async def nap(_: str) -> str:
        await asyncio.sleep(0.02)
        return "r"

    order: list[str] = []
    reader = Probe("Read", nap, read_only=True)
    writer = Probe("Write")
    reader.log = writer.log = order
    calls = [
        ToolCall("Read", {"text": "r1"}),
        ToolCall("Read", {"text": "r2"}),
        ToolCall("Write", {"text": "w"}),
    ]
    collect(make_agent(ScriptedProvider(reply(*calls), reply("ok")), reader, writer).run("go"))
    assert order.index("start w") > max(order.index("end r1"), order.index("end r2"))


def test_an_unknown_tool_comes_back_as_an_error_the_model_can_correct() -> None:
    bad, good = ToolCall("Teleport", {"text": "x"}), ToolCall("Echo", {"text": "x"})
    provider = ScriptedProvider(reply(bad), reply(good), reply("fixed it"))
    events = collect(make_agent(provider, Probe("Echo")).run("go"))
    [(tid, text, is_error)] = results_in(provider.requests[1].messages[-1])
    assert tid == bad.id and is_error and "Unknown tool 'Teleport'" in text and "Echo" in text
    assert result_of(events).result == "fixed it"


def test_input_failing_the_schema_is_an_error_result_naming_the_field() -> None:
    call = ToolCall("Echo", {"txt": "typo"})
    provider = ScriptedProvider(reply(call), reply("ok"))
    collect(make_agent(provider, Probe("Echo")).run("go"))
    [(_, text, is_error)] = results_in(provider.requests[1].messages[-1])
    assert is_error and text.startswith("Invalid input for Echo: text: Field required")


def test_an_exception_inside_a_tool_is_an_error_result() -> None:
    provider = ScriptedProvider(reply(ToolCall("Boom", {"text": "now"})), reply("I see it failed."))
    events = collect(make_agent(provider, Boom()).run("go"))
    [(_, text, is_error)] = results_in(provider.requests[1].messages[-1])
    assert is_error and text == "Boom failed: RuntimeError: boom: now"
    assert result_of(events).subtype == "success"


def test_malformed_tool_json_is_an_error_result() -> None:
    call = ToolCall("Echo", raw_json='{"text": "unterminated')
    provider = ScriptedProvider(reply(call), reply("ok"))
    collect(make_agent(provider, Probe("Echo")).run("go"))
    [(_, text, is_error)] = results_in(provider.requests[1].messages[-1])
    assert is_error and "not valid JSON" in text


def test_max_turns_stops_with_error_max_turns_and_a_valid_history() -> None:
    provider = ScriptedProvider(*(reply(ToolCall("NoOp", {"text": str(i)})) for i in range(2)))
    agent = make_agent(provider, NoOp(), max_turns=2)
    result = result_of(collect(agent.run("loop forever")))
    assert (result.subtype, result.is_error, result.num_turns) == ("error_max_turns", True, 2)
    assert "maximum of 2 turns" in result.result
    assert_api_valid(agent.history)
    provider.assert_complete()


def test_a_provider_error_ends_the_run_with_an_error_result() -> None:
    provider = ScriptedProvider(ProviderError("API error 401: invalid x-api-key", kind="auth", status=401))
    agent = make_agent(provider)
    result = result_of(collect(agent.run("hi")))
    assert (result.subtype, result.is_error) == ("error_during_execution", True)
    assert result.result == "API error 401: invalid x-api-key"
    assert result.errors == ("API error 401: invalid x-api-key",)


def test_thinking_blocks_go_back_unmodified() -> None:
    thought, redacted = Thinking("I should read the file first."), RedactedThinking()
    provider = ScriptedProvider(reply(thought, redacted, ToolCall("NoOp", {"text": "x"})), reply("done"))
    collect(make_agent(provider, NoOp()).run("go"))
    assistant = provider.requests[1].messages[-2]
    assert assistant.content[:2] == [
        ThinkingBlock(thinking=thought.thinking, signature=thought.signature),
        RedactedThinkingBlock(data=redacted.data),
    ]


def test_usage_and_cost_add_up_over_the_run() -> None:
    provider = ScriptedProvider(
        reply(ToolCall("NoOp", {"text": "x"}), input_tokens=1000, output_tokens=100),
        reply("done", input_tokens=1200, output_tokens=50, cache_read_input_tokens=800),
    )
    result = result_of(collect(make_agent(provider, NoOp()).run("go")))
    assert result.usage == Usage(2200, 150, 0, 800)
    expected = (2200 * 3 + 150 * 15 + 800 * 0.3) / 1_000_000
    assert abs(result.total_cost_usd - expected) < 1e-9
    assert result.model_usage["claude-sonnet-5-5"]["inputTokens"] == 2200


async def _run_until(agent: Any, prompt: str, stop_when: Any) -> list[Any]:
    """Run the agent as the REPL would, and cancel it (Ctrl-C) once `stop_when(events)` holds."""
    events: list[Any] = []

    async def consume() -> None:
        async for event in agent.run(prompt):
            events.append(event)

    task = asyncio.create_task(consume())
    while not stop_when(events):
        await asyncio.sleep(0.005)
        assert not task.done(), "the run ended before the interrupt"
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return events


def test_interrupting_a_running_tool_keeps_the_history_valid() -> None:
    done_call, stuck_call = ToolCall("Quick", {"text": "a"}), ToolCall("Stuck", {"text": "b"})
    provider = ScriptedProvider(reply(done_call, stuck_call))
    agent = make_agent(provider, Probe("Quick", read_only=True), Probe("Stuck", forever, read_only=True))
    asyncio.run(_run_until(agent, "go", lambda ev: any(isinstance(e, ToolFinished) for e in ev)))
    assert_api_valid(agent.history)
    results = agent.history[-2]
    assert results_in(results) == [
        (done_call.id, "Quick: a", False),
        (stuck_call.id, INTERRUPTED_TOOL_RESULT, True),
    ]
    assert agent.history[-1].text == INTERRUPTED_REQUEST


def test_interrupting_the_stream_keeps_no_partial_reply() -> None:
    provider = ScriptedProvider(reply("a long answer " * 50, chunk=5), delay_s=0.001)
    agent = make_agent(provider)
    events = asyncio.run(_run_until(agent, "go", lambda ev: sum(isinstance(e, TextDelta) for e in ev) > 3))
    assert not any(isinstance(e, MessageDone) for e in events)
    assert [m.text for m in agent.history] == ["go", INTERRUPTED_REQUEST]
    assert_api_valid(agent.history)


def test_the_next_run_continues_the_same_history() -> None:
    provider = ScriptedProvider(reply("first answer"), reply("second answer"))
    agent = make_agent(provider)
    collect(agent.run("one"))
    result = result_of(collect(agent.run("two")))
    assert result.num_turns == 1 and result.result == "second answer"
    assert [m.text for m in provider.requests[1].messages] == ["one", "first answer", "two"]


class Recorder:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.records: list[tuple[str, dict[str, object]]] = []

    def append_message(
        self,
        message: Message,
        *,
        usage: Usage | None = None,
        model: str | None = None,
        line_id: str | None = None,
    ) -> None:
        self.messages.append(message)

    def record(self, kind: str, **data: object) -> None:
        self.records.append((kind, data))

    def compacted(
        self, messages: Sequence[Message], *, stubs: dict[str, str] | None = None, **info: object
    ) -> None:
        self.records.append(("compact_boundary", {"messages": list(messages), "stubs": stubs, **info}))


def test_every_appended_message_reaches_the_transcript() -> None:
    provider = ScriptedProvider(reply(ToolCall("NoOp", {"text": "x"})), reply("done"))
    agent = make_agent(provider, NoOp())
    agent.transcript = recorder = Recorder()
    collect(agent.run("go"))
    assert recorder.messages == agent.history
    assert isinstance(recorder.messages[2].content[0], ToolResultBlock)
    assert recorder.records[-1][0] == "result"


def test_a_call_the_gate_refuses_comes_back_as_a_refusal_and_is_reported() -> None:
    from piton.core.safety.permissions import PermissionGate, Permissions

    permissions = Permissions.from_texts("default", allow=["Echo"], project=Path.cwd())
    calls = [ToolCall("Echo", {"text": "fine"}), ToolCall("Write", {"text": "risky"})]
    provider = ScriptedProvider(reply(*calls), reply("ok"))
    writer = Probe("Write")
    agent = make_agent(provider, Probe("Echo"), writer)
    agent.gate = PermissionGate(permissions)
    result = result_of(collect(agent.run("go")))
    echoed, refused = results_in(provider.requests[1].messages[-1])
    assert echoed == (calls[0].id, "Echo: fine", False)
    assert refused[2] and refused[1].startswith(
        "The user did not permit this Write call: Write needs permission"
    )
    assert writer.log == []  # it never ran
    assert result.permission_denials == (
        {"tool_name": "Write", "tool_use_id": calls[1].id, "tool_input": {"text": "risky"}},
    )


def test_the_tool_counts_leave_out_the_users_answer_and_refusals() -> None:
    """/cost and the JSON result count a call's own time, not the time the question waited for the
    user, and a refused call as refused, not as a failure."""
    from piton.core.safety.permissions import Decision, PermissionGate, PermissionRequest, Permissions

    waited: list[float] = []

    async def person(request: PermissionRequest) -> Decision:
        started = asyncio.get_running_loop().time()
        await asyncio.sleep(0.5)  # thinking it over
        waited.append(asyncio.get_running_loop().time() - started)
        if request.tool.name == "Write":
            return Decision("deny", "the user said no")
        return Decision("allow", "the user said yes")

    calls = [ToolCall("Echo", {"text": "fine"}), ToolCall("Write", {"text": "risky"})]
    provider = ScriptedProvider(reply(calls[0]), reply(calls[1]), reply("ok"))
    agent = make_agent(provider, Probe("Echo"), Probe("Write"))
    agent.gate = PermissionGate(Permissions.from_texts("default", project=Path.cwd()), person)
    collect(agent.run("go"))
    tools = agent.metrics.to_dict()["tools"]
    assert len(waited) == 2
    assert tools["Echo"]["avg_duration_ms"] < waited[0] * 1000, tools
    assert (tools["Echo"]["errors"], tools["Echo"]["denied"]) == (0, 0)
    assert (tools["Write"]["calls"], tools["Write"]["errors"], tools["Write"]["denied"]) == (1, 0, 1)
    assert tools["Write"]["error_rate"] == 0.0


def test_large_results_reach_the_history_as_a_preview(tmp_path: Path) -> None:
    from piton.core.context.result_store import FileResultStore, ResultCapper

    async def flood(_: str) -> str:
        return "data line\n" * 200_000

    provider = ScriptedProvider(reply(ToolCall("Dump", {"text": "x"})), reply("ok"))
    agent = make_agent(provider, Probe("Dump", flood, read_only=True))
    agent.capper = ResultCapper(FileResultStore(tmp_path))
    collect(agent.run("go"))
    [(_, content, _)] = results_in(agent.history[2])
    assert len(content) < 25_000 and "left out of 2,000,000" in content
    [stored] = tmp_path.iterdir()
    assert stored.read_text() == "data line\n" * 200_000
