"""What the real Claude Agent SDK gives Piton that Claude Code honours: subagents defined in code,
hook callbacks for every event the session has, the default (empty) system prompt with the
user's memory, and tools taken away rather than refused."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from claude_agent_sdk import (
    AgentDefinition,
    ClaudeSDKClient,
    HookContext,
    HookMatcher,
    ResultMessage,
    UserMessage,
)

from piton.testing.script import ToolCall, reply
from tests.cli.test_agent_sdk import last_result, options, run, sent_text
from tests.fakes.fake_api import FakeAnthropicAPI


async def one_turn(opts: Any, prompt: str) -> ResultMessage:
    async with ClaudeSDKClient(opts) as client:
        await client.query(prompt)
        result = await last_result(client)
    return result


def system_text(body: dict[str, Any]) -> str:
    return "\n\n".join(b["text"] for b in body.get("system", []))


def test_a_subagent_defined_in_code_is_offered_and_runs(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(
        reply(
            ToolCall("Task", {"description": "review", "prompt": "Look.", "subagent_type": "eco-reviewer"})
        ),
        reply("ECO-REPORT: all good."),  # the subagent's answer
        reply("The reviewer says all good."),
    )
    agents = {
        "eco-reviewer": AgentDefinition(
            description="Reviews for energy use.", prompt="ECO-PROMPT", tools=["Read"]
        )
    }
    result = run(one_turn(options(project, agents=agents, permission_mode="bypassPermissions"), "review"))
    assert result.result == "The reviewer says all good."
    task = next(t for t in fake_api.bodies[0]["tools"] if t["name"] == "Task")
    assert "eco-reviewer" in task["description"]
    sub = fake_api.bodies[1]
    assert system_text(sub).startswith("ECO-PROMPT") and [t["name"] for t in sub["tools"]] == ["Read"]
    assert "ECO-REPORT: all good." in sent_text(fake_api.bodies[2])


def test_subagent_start_and_stop_callbacks_see_the_subagent(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(
        reply(ToolCall("Task", {"description": "look", "prompt": "Look.", "subagent_type": "Explore"})),
        reply("Found it."),
        reply("Done."),
    )
    seen: list[dict[str, Any]] = []

    async def record(hook_input: Any, tool_use_id: str | None, context: HookContext) -> dict[str, Any]:
        seen.append(dict(hook_input))
        if hook_input["hook_event_name"] == "SubagentStart":
            return {"hookSpecificOutput": {"hookEventName": "SubagentStart", "additionalContext": "SUB-CTX"}}
        return {}

    hooks = {
        "SubagentStart": [HookMatcher(matcher="Explore", hooks=[record])],  # type: ignore[list-item]
        "SubagentStop": [HookMatcher(hooks=[record])],  # type: ignore[list-item]
    }
    assert run(one_turn(options(project, hooks=hooks), "look")).result == "Done."
    assert [(e["hook_event_name"], e.get("agent_type")) for e in seen] == [
        ("SubagentStart", "Explore"),
        ("SubagentStop", None),
    ]
    assert seen[0]["agent_id"] == seen[1]["agent_id"]
    assert "SUB-CTX" in sent_text(fake_api.bodies[1])  # the subagent's request


def test_prompt_and_stop_callbacks_are_called_and_obeyed(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("First answer."), reply("Second answer, with the tests run."))
    seen: list[dict[str, Any]] = []

    async def on_prompt(hook_input: Any, tool_use_id: str | None, context: HookContext) -> dict[str, Any]:
        seen.append(dict(hook_input))
        return {
            "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "CTX-TICKET-42"}
        }

    async def on_stop(hook_input: Any, tool_use_id: str | None, context: HookContext) -> dict[str, Any]:
        seen.append(dict(hook_input))
        if hook_input["stop_hook_active"]:
            return {}
        return {"decision": "block", "reason": "Run the tests before you stop."}

    hooks = {
        "UserPromptSubmit": [HookMatcher(hooks=[on_prompt])],  # type: ignore[list-item]
        "Stop": [HookMatcher(hooks=[on_stop])],  # type: ignore[list-item]
    }
    result = run(one_turn(options(project, hooks=hooks), "fix it"))
    assert result.result == "Second answer, with the tests run."
    assert [e["hook_event_name"] for e in seen] == ["UserPromptSubmit", "Stop", "Stop"]
    assert seen[0]["prompt"] == "fix it" and [e["stop_hook_active"] for e in seen[1:]] == [False, True]
    assert "CTX-TICKET-42" in sent_text(fake_api.bodies[0])
    assert "Run the tests before you stop." in sent_text(fake_api.bodies[1])


def test_a_post_tool_use_callback_is_not_called_for_a_blocked_call(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(
        reply(ToolCall("Write", {"file_path": str(project / "x.txt"), "content": "x"})), reply("Ok.")
    )
    after: list[str] = []

    async def guard(hook_input: Any, tool_use_id: str | None, context: HookContext) -> dict[str, Any]:
        return {"decision": "block", "reason": "frozen"}

    async def post(hook_input: Any, tool_use_id: str | None, context: HookContext) -> dict[str, Any]:
        after.append(hook_input["tool_name"])
        return {}

    hooks = {
        "PreToolUse": [HookMatcher(matcher="Write", hooks=[guard])],  # type: ignore[list-item]
        "PostToolUse": [HookMatcher(hooks=[post])],  # type: ignore[list-item]
    }
    result = run(one_turn(options(project, hooks=hooks, permission_mode="bypassPermissions"), "write"))
    assert result.result == "Ok." and not (project / "x.txt").exists()
    assert "frozen" in sent_text(fake_api.bodies[1]) and after == []


def test_the_default_system_prompt_keeps_the_users_memory(fake_api: FakeAnthropicAPI, project: Path) -> None:
    """The SDK's default is `--system-prompt ""`: Piton's own instructions go, AGENTS.md stays."""
    (project / "AGENTS.md").write_text("MEMORY-LINE: use tabs.\n")
    fake_api.add(reply("ok"))
    assert run(one_turn(options(project), "hi")).result == "ok"
    text = system_text(fake_api.bodies[0])
    assert "MEMORY-LINE: use tabs." in text and "# Using tools" not in text


def test_disallowed_tools_are_not_offered(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("ok"))
    opts = options(project, disallowed_tools=["WebSearch", "WebFetch", "Bash(rm:*)"])
    assert run(one_turn(opts, "hi")).result == "ok"
    offered = json.dumps(fake_api.bodies[0]["tools"])
    assert '"WebSearch"' not in offered and '"WebFetch"' not in offered and '"Bash"' in offered


def test_a_hook_event_piton_does_not_serve_is_refused_at_initialize(project: Path) -> None:
    async def anything(hook_input: Any, tool_use_id: str | None, context: HookContext) -> dict[str, Any]:
        return {}

    hooks = {"PermissionRequest": [HookMatcher(hooks=[anything])]}  # type: ignore[list-item]

    async def connect() -> str:
        try:
            async with ClaudeSDKClient(options(project, hooks=hooks)):
                pass
        except Exception as e:
            return str(e)
        return "connected"

    said = run(connect())
    assert "Piton does not call hooks for PermissionRequest" in said


def test_a_commands_result_reaches_the_client_as_claude_codes_object(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    """`tool_use_result` of a command that ran is an object (`.stdout`), as Claude Code sends it."""
    fake_api.add(reply(ToolCall("Bash", {"command": "echo SDK-OUT"})), reply("Printed."))

    async def talk() -> list[Any]:
        async with ClaudeSDKClient(options(project, permission_mode="bypassPermissions")) as client:
            await client.query("print")
            messages = [m async for m in client.receive_response()]
        return messages

    results = [m.tool_use_result for m in run(talk()) if isinstance(m, UserMessage) and m.tool_use_result]
    assert results == [
        {
            "stdout": "SDK-OUT",
            "stderr": "",
            "interrupted": False,
            "isImage": False,
            "noOutputExpected": False,
        }
    ]


def test_a_callback_that_never_answers_is_given_up_on_at_its_timeout(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    fake_api.add(reply("Went on."))

    async def stuck(hook_input: Any, tool_use_id: str | None, context: HookContext) -> dict[str, Any]:
        await asyncio.sleep(3600)
        return {}

    hooks = {"UserPromptSubmit": [HookMatcher(hooks=[stuck], timeout=1)]}  # type: ignore[list-item]
    assert run(one_turn(options(project, hooks=hooks), "hi")).result == "Went on."
