"""Plan mode, end to end: the model is told it is planning, may only look, and hands in a plan with
ExitPlanMode; the user approves it (choosing the mode the work goes on in) or sends it back. In the
REPL, in `-p` (nobody to approve) and through the Agent SDK's `can_use_tool`."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionUpdate,
    ResultMessage,
    ToolPermissionContext,
)

from piton.core.conversation.history import is_valid
from piton.core.conversation.messages import TextBlock
from piton.runtime import default_tools
from piton.testing.script import ToolCall, reply
from piton.testing.scripted import ScriptedProvider
from tests.cli.test_repl import ENTER, Session, run
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here

PITON = str(Path(sys.executable).with_name("piton"))
PLAN = "## Plan\n\n1. Write `notes.txt` with the **summary**\n2. Run the tests"


def _results(provider: ScriptedProvider, index: int) -> list[Any]:
    return provider.requests[index].messages[-1].tool_results


def test_the_user_approves_the_plan_and_the_work_goes_on_with_edits_accepted(project: Path) -> None:
    target = project / "notes.txt"
    provider = ScriptedProvider(
        reply(ToolCall("Write", {"file_path": str(target), "content": "too early\n"})),
        reply("Here is my plan.", ToolCall("ExitPlanMode", {"plan": PLAN})),
        reply(ToolCall("Write", {"file_path": str(target), "content": "summary\n"})),
        reply("Done."),
        reply("Next."),
    )
    modes: list[str] = []

    async def script(s: Session) -> None:
        await s.type("summarise the project" + ENTER)
        await s.until(lambda: s.repl.question is not None)
        assert s.repl.renderer is not None
        modes.append(s.repl.runtime.agent.gate.permissions.mode)  # type: ignore[union-attr]
        await s.type("1" + ENTER)
        await s.until(lambda: "Done." in s.screen)
        modes.append(s.repl.runtime.agent.gate.permissions.mode)  # type: ignore[union-attr]
        await s.type("and then?" + ENTER)
        await s.until(lambda: "Next." in s.screen)

    s = run(project, provider, script, tools=default_tools(), permission_mode="plan")
    assert modes == ["plan", "acceptEdits"]
    first = provider.requests[0].messages[-1]
    assert isinstance(first.content[0], TextBlock), first.content
    assert first.content[0].text == "summarise the project" and "Plan mode is active" in first.text
    [refused] = _results(provider, 1)
    assert refused.is_error and "plan mode" in str(refused.content)
    [approved] = _results(provider, 2)
    assert not approved.is_error and "approved the plan" in str(approved.content)
    assert target.read_text() == "summary\n"  # written without a question: edits are accepted now
    assert "Here is the plan:" in s.screen and "Write notes.txt with the summary" in s.screen
    assert "Plan mode has ended" in provider.requests[4].messages[-1].text
    assert "Plan mode is active" not in provider.requests[4].messages[-1].text
    assert is_valid(s.history)


def test_the_user_sends_the_plan_back_with_what_to_change(project: Path) -> None:
    provider = ScriptedProvider(
        reply(ToolCall("ExitPlanMode", {"plan": PLAN})),
        reply("Revised.", ToolCall("ExitPlanMode", {"plan": PLAN + "\n3. Update the README"})),
        reply("Ok, going ahead."),
    )

    async def script(s: Session) -> None:
        await s.type("plan it" + ENTER)
        await s.until(lambda: s.repl.question is not None)
        await s.type("3 also update the README" + ENTER)
        await s.until(lambda: s.repl.question is not None and len(provider.requests) == 2)
        assert s.repl.runtime is not None and s.repl.runtime.agent.gate is not None
        planning = s.repl.runtime.agent.gate.permissions.mode  # a copy: approving the plan changes the mode
        assert planning == "plan"
        await s.type("2" + ENTER)
        await s.until(lambda: "Ok, going ahead." in s.screen)
        assert s.repl.runtime.agent.gate.permissions.mode == "default"

    run(project, provider, script, tools=default_tools(), permission_mode="plan")
    [sent_back] = _results(provider, 1)
    assert sent_back.is_error and "also update the README" in str(sent_back.content)
    assert "stay in plan mode" in str(sent_back.content)
    [approved] = _results(provider, 2)
    assert not approved.is_error


def test_exit_plan_mode_outside_plan_mode_asks_nothing(project: Path) -> None:
    provider = ScriptedProvider(reply(ToolCall("ExitPlanMode", {"plan": PLAN})), reply("Fine."))

    async def script(s: Session) -> None:
        await s.type("go" + ENTER)
        await s.until(lambda: "Fine." in s.screen)
        assert s.repl.question is None

    s = run(project, provider, script, tools=default_tools())
    [result] = _results(provider, 1)
    assert result.is_error and "not in plan mode" in str(result.content)
    assert "Plan mode" not in provider.requests[0].messages[-1].text
    assert "Here is the plan" not in s.screen


def test_print_mode_has_nobody_to_approve_a_plan(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply(ToolCall("ExitPlanMode", {"plan": PLAN})), reply(PLAN))
    done = piton_here("-p", "plan the work", "--permission-mode", "plan", "--output-format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"] == PLAN
    sent = json.dumps(fake_api.bodies[1]["messages"][-1])
    assert "nobody can approve a plan" in sent and "final answer" in sent
    assert "Plan mode is active" in json.dumps(fake_api.bodies[0]["messages"][0])
    assert "ExitPlanMode" in [t["name"] for t in fake_api.bodies[0]["tools"]]


def test_the_agent_sdk_approves_a_plan_and_sets_the_mode(fake_api: FakeAnthropicAPI, project: Path) -> None:
    target = project / "out.txt"
    fake_api.add(
        reply(ToolCall("ExitPlanMode", {"plan": PLAN})),
        reply(ToolCall("Write", {"file_path": str(target), "content": "done\n"})),
        reply("Written."),
    )
    asked: list[tuple[str, Any]] = []

    async def can_use_tool(
        name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow | PermissionResultDeny:
        asked.append((name, [s.to_dict() for s in context.suggestions]))
        if name != "ExitPlanMode":
            return PermissionResultDeny(message="only the plan is asked about")
        update = PermissionUpdate(type="setMode", mode="acceptEdits", destination="session")
        return PermissionResultAllow(updated_permissions=[update])

    async def talk() -> ResultMessage:
        options = ClaudeAgentOptions(
            cli_path=PITON, cwd=str(project), permission_mode="plan", can_use_tool=can_use_tool
        )
        async with ClaudeSDKClient(options) as client:
            await client.query("plan, then write out.txt")
            messages = [m async for m in client.receive_response()]
        assert isinstance(messages[-1], ResultMessage)
        return messages[-1]

    result = asyncio.run(asyncio.wait_for(talk(), 60))
    assert result.result == "Written."
    assert [name for name, _ in asked] == ["ExitPlanMode"]  # the Write after it was not asked about
    assert asked[0][1] == [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]
    assert target.read_text() == "done\n"
