"""Piton driven by the real Claude Agent SDK, as a drop-in for `claude`: the SDK spawns the `piton`
executable (stream-json in and out, the control protocol both ways) against the fake Messages API."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path
from typing import Any, TypeVar

# a dev dependency: missing, it is an error, never a skip
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookContext,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ToolPermissionContext,
    query,
)

from piton import __version__
from piton.core.version import CLAUDE_CODE_PROTOCOL
from piton.testing.script import ToolCall, reply
from tests.fakes.fake_api import FakeAnthropicAPI, Stall
from tests.helpers import CEILING_S

PITON = Path(sys.executable).parent / "piton"
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(asyncio.wait_for(coro, 60))


def options(project: Path, **kwargs: Any) -> ClaudeAgentOptions:
    return ClaudeAgentOptions(cli_path=str(PITON), cwd=str(project), **kwargs)


async def collect(messages: AsyncIterator[Any]) -> list[Any]:
    return [m async for m in messages]


async def last_result(client: ClaudeSDKClient) -> ResultMessage:
    """The messages of the current turn up to its result, which must end it."""
    messages = [m async for m in client.receive_response()]
    assert isinstance(messages[-1], ResultMessage), messages
    return messages[-1]


def sent_text(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"])


def test_query_one_shot_returns_the_answer(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("Four."))
    messages = run(collect(query(prompt="2+2?", options=options(project))))
    init = next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")
    assert (
        init.data["claude_code_version"] == CLAUDE_CODE_PROTOCOL and init.data["piton_version"] == __version__
    )
    assert init.data["permissionMode"] == "default"
    texts = [
        b.text
        for m in messages
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, TextBlock)
    ]
    assert texts == ["Four."]
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.subtype == "success" and result.result == "Four."
    assert "2+2?" in sent_text(fake_api.bodies[0])


def test_client_multi_turn_with_an_interrupt(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("Paris."), Stall(reply("a long story"), after=3, seconds=CEILING_S), reply("Lyon."))

    async def talk() -> tuple[ResultMessage, ResultMessage, ResultMessage]:
        async with ClaudeSDKClient(options(project)) as client:
            await client.query("Capital of France?")
            first = await last_result(client)
            await client.query("Tell me a long story.")
            await asyncio.to_thread(fake_api.wait_for_silence)  # the reply has begun and stalls
            await client.interrupt()
            stopped = await last_result(client)
            await client.query("Another city?")
            third = await last_result(client)
        return first, stopped, third

    first, stopped, third = run(talk())
    assert first.result == "Paris." and third.result == "Lyon."
    assert stopped.is_error and stopped.subtype == "error_during_execution"
    last = sent_text(fake_api.bodies[2])
    assert "Capital of France?" in last and "Paris." in last and "interrupted" in last


def test_can_use_tool_allows_one_write_and_denies_another(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(
        reply(ToolCall("Write", {"file_path": str(project / "yes.txt"), "content": "ok"})),
        reply(ToolCall("Write", {"file_path": str(project / "no.txt"), "content": "no"})),
        reply("Done."),
    )
    asked: list[str] = []

    async def can_use_tool(
        name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow | PermissionResultDeny:
        asked.append(tool_input["file_path"])
        if tool_input["file_path"].endswith("yes.txt"):
            return PermissionResultAllow()
        return PermissionResultDeny(message="no.txt is off limits")

    async def talk() -> ResultMessage:
        async with ClaudeSDKClient(options(project, can_use_tool=can_use_tool)) as client:
            await client.query("write two files")
            result = await last_result(client)
        return result

    result = run(talk())
    assert result.result == "Done."
    assert (project / "yes.txt").read_text() == "ok"
    assert not (project / "no.txt").exists()
    assert [Path(p).name for p in asked] == ["yes.txt", "no.txt"]
    assert "no.txt is off limits" in sent_text(fake_api.bodies[2])


def test_can_use_tool_edits_the_input_the_call_runs_with(fake_api: FakeAnthropicAPI, project: Path) -> None:
    """`PermissionResultAllow(updated_input=...)`: the call runs with the client's input, which is
    still checked (a deny rule refuses what the edit made of it)."""
    fake_api.add(
        reply(ToolCall("Write", {"file_path": str(project / "a.txt"), "content": "draft"})),
        reply(ToolCall("Write", {"file_path": str(project / "b.txt"), "content": "b"})),
        reply("Done."),
    )

    async def can_use_tool(
        name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow:
        if tool_input["file_path"].endswith("a.txt"):
            return PermissionResultAllow(updated_input={**tool_input, "content": "reviewed"})
        return PermissionResultAllow(updated_input={**tool_input, "file_path": str(project / ".env")})

    async def talk() -> ResultMessage:
        opts = options(project, can_use_tool=can_use_tool, disallowed_tools=["Write(.env)"])
        async with ClaudeSDKClient(opts) as client:
            await client.query("write a and b")
            result = await last_result(client)
        return result

    assert run(talk()).result == "Done."
    assert (project / "a.txt").read_text() == "reviewed"
    assert not (project / "b.txt").exists() and not (project / ".env").exists()
    assert "The edited Write call is denied" in sent_text(fake_api.bodies[2])


def test_a_pre_tool_use_hook_edits_the_input(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(
        reply(ToolCall("Write", {"file_path": str(project / "x.txt"), "content": "secret=1"})),
        reply("Written."),
    )

    async def redact(hook_input: Any, tool_use_id: str | None, context: HookContext) -> dict[str, Any]:
        tool_input = dict(hook_input["tool_input"])
        tool_input["content"] = tool_input["content"].replace("1", "***")
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "updatedInput": tool_input,
            }
        }

    hooks = {"PreToolUse": [HookMatcher(matcher="Write", hooks=[redact])]}  # type: ignore[list-item]

    async def talk() -> ResultMessage:
        async with ClaudeSDKClient(options(project, hooks=hooks)) as client:
            await client.query("write x")
            result = await last_result(client)
        return result

    assert run(talk()).result == "Written."
    assert (project / "x.txt").read_text() == "secret=***"


def test_a_post_tool_use_hook_sees_the_result_and_gives_feedback(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(
        reply(ToolCall("Write", {"file_path": str(project / "x.py"), "content": "print( 1 )\n"})),
        reply("I will reformat it."),
    )
    seen: list[dict[str, Any]] = []

    async def lint(hook_input: Any, tool_use_id: str | None, context: HookContext) -> dict[str, Any]:
        seen.append(dict(hook_input))
        return {
            "decision": "block",
            "reason": "x.py is not formatted",
            "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "Run ruff format."},
        }

    hooks = {"PostToolUse": [HookMatcher(matcher="Write|Edit", hooks=[lint])]}  # type: ignore[list-item]

    async def talk() -> ResultMessage:
        async with ClaudeSDKClient(options(project, hooks=hooks, permission_mode="acceptEdits")) as client:
            await client.query("write x.py")
            result = await last_result(client)
        return result

    assert run(talk()).result == "I will reformat it."
    assert (project / "x.py").read_text() == "print( 1 )\n"  # the call had run
    [event] = seen
    assert event["hook_event_name"] == "PostToolUse" and event["tool_name"] == "Write"
    assert event["tool_input"]["content"] == "print( 1 )\n" and event["tool_response"]
    sent = sent_text(fake_api.bodies[1])
    assert "PostToolUse hook feedback: x.py is not formatted" in sent and "Run ruff format." in sent


def test_a_pre_tool_use_hook_blocks_a_tool(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(
        reply(ToolCall("Write", {"file_path": str(project / "x.txt"), "content": "x"})),
        reply("Understood."),
    )
    seen: list[dict[str, Any]] = []

    async def guard(hook_input: Any, tool_use_id: str | None, context: HookContext) -> dict[str, Any]:
        seen.append(dict(hook_input))
        return {"decision": "block", "reason": "writes are frozen today"}

    hooks = {"PreToolUse": [HookMatcher(matcher="Write", hooks=[guard])]}  # type: ignore[list-item]
    opts = options(project, hooks=hooks, permission_mode="bypassPermissions")

    async def talk() -> ResultMessage:
        async with ClaudeSDKClient(opts) as client:
            await client.query("write x")
            result = await last_result(client)
        return result

    result = run(talk())
    assert result.result == "Understood."
    assert not (project / "x.txt").exists()
    assert seen and seen[0]["tool_name"] == "Write" and seen[0]["hook_event_name"] == "PreToolUse"
    assert "writes are frozen today" in sent_text(fake_api.bodies[1])


def test_max_budget_usd_stops_the_run(fake_api: FakeAnthropicAPI, project: Path) -> None:
    (project / "notes.txt").write_text("notes\n")
    fake_api.add(reply(ToolCall("Read", {"file_path": "notes.txt"}), input_tokens=100_000))  # $0.30
    messages = run(collect(query(prompt="read notes", options=options(project, max_budget_usd=0.05))))
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert (result.subtype, result.is_error) == ("error_max_budget_usd", True)
    assert result.total_cost_usd is not None and result.total_cost_usd > 0.05
    assert len(fake_api.bodies) == 1  # no request after the budget was spent


def test_hooks_guard_a_subagents_calls_too(fake_api: FakeAnthropicAPI, project: Path) -> None:
    task = {"description": "write", "prompt": "Write x.txt.", "subagent_type": "general-purpose"}
    fake_api.add(
        reply(ToolCall("Task", task)),
        reply(ToolCall("Write", {"file_path": str(project / "x.txt"), "content": "x"})),
        reply("The hook refused."),
        reply("The subagent could not write."),
    )
    seen: list[str] = []

    async def guard(hook_input: Any, tool_use_id: str | None, context: HookContext) -> dict[str, Any]:
        seen.append(hook_input["tool_name"])
        if hook_input["tool_name"] == "Write":
            return {"decision": "block", "reason": "writes are frozen today"}
        return {}

    hooks = {"PreToolUse": [HookMatcher(matcher=None, hooks=[guard])]}  # type: ignore[list-item]

    async def talk() -> ResultMessage:
        opts = options(project, hooks=hooks, permission_mode="bypassPermissions")
        async with ClaudeSDKClient(opts) as client:
            await client.query("delegate the write")
            result = await last_result(client)
        return result

    assert run(talk()).result == "The subagent could not write."
    assert seen == ["Task", "Write"] and not (project / "x.txt").exists()
    assert "writes are frozen today" in sent_text(fake_api.bodies[2])


def test_partial_messages_arrive_as_stream_events(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("Streamed words."))
    messages = run(collect(query(prompt="hi", options=options(project, include_partial_messages=True))))
    events = [m.event for m in messages if isinstance(m, StreamEvent)]
    assert [e["type"] for e in events][:2] == ["message_start", "content_block_start"]
    deltas = "".join(e["delta"].get("text", "") for e in events if e["type"] == "content_block_delta")
    assert deltas == "Streamed words."
    assert isinstance(messages[-1], ResultMessage)


def test_set_permission_mode_applies_to_the_next_turn(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(
        reply("one"),
        reply(ToolCall("Write", {"file_path": str(project / "plan.txt"), "content": "p"})),
        reply("Plan mode refused it."),
    )

    async def talk() -> list[Any]:
        async with ClaudeSDKClient(options(project)) as client:
            await client.query("first")
            messages = [m async for m in client.receive_response()]
            await client.set_permission_mode("plan")
            await client.query("write plan.txt")
            messages += [m async for m in client.receive_response()]
        return messages

    messages = run(talk())
    modes = [
        m.data["permissionMode"] for m in messages if isinstance(m, SystemMessage) and m.subtype == "init"
    ]
    assert modes == ["default", "plan"]
    assert not (project / "plan.txt").exists()
    assert "plan mode" in sent_text(fake_api.bodies[2])
