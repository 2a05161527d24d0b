"""Subagents in process: the real tools and sandbox, the scripted provider."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from piton.core.conversation.events import SubagentEvent, ToolFinished
from piton.core.conversation.history import is_valid
from piton.core.conversation.messages import INTERRUPTED_REQUEST
from piton.core.conversation.session import load_session
from piton.core.options import RunOptions
from piton.core.subagents import AGENT_TOOLS, SCHEDULE_TOOLS
from piton.runtime import build_runtime
from piton.testing.script import ToolCall, reply
from piton.testing.scripted import ScriptedProvider


def build(project: Path, provider: ScriptedProvider) -> Any:
    return build_runtime(RunOptions(cwd=project), provider)


async def drain(runtime: Any, prompt: str) -> list[Any]:
    return [e async for e in runtime.agent.run(prompt)]


def explore(*calls: ToolCall) -> ScriptedProvider:
    task = ToolCall("Task", {"description": "look", "prompt": "Look around.", "subagent_type": "Explore"})
    return ScriptedProvider(reply(task), reply(*calls), reply("I looked."), reply("Done."))


def denials(runtime: Any) -> list[dict[str, Any]]:
    """The calls refused in the session, the subagent's included (they share the list)."""
    gate = runtime.agent.gate
    assert gate is not None
    return list(gate.denials)


def subagent_results(events: list[Any]) -> dict[str, str]:
    """What each of the subagent's calls returned, by command."""
    finished = [e.event for e in events if isinstance(e, SubagentEvent) and isinstance(e.event, ToolFinished)]
    return {e.tool_use_id: str(e.result.content) for e in finished}


@pytest.mark.parametrize("mode", ["default", "plan"])
def test_explores_shell_asks_as_the_main_agents_would_a_read_only_sandbox_is_no_consent(
    project: Path, mode: str
) -> None:
    (project / ".env").write_text("API_KEY=sk-secret\n")
    look, fork = ToolCall("Bash", {"command": "cat .env"}), ToolCall("Bash", {"command": "sh -c 'sleep 1 &'"})
    runtime = build_runtime(RunOptions(cwd=project, permission_mode=mode), explore(look, fork))
    results = subagent_results(asyncio.run(drain(runtime, "explore")))
    assert "sk-secret" not in results[look.id] and "nobody can approve it" in results[look.id], (
        "a line that only looks is asked about (plan mode too), and a -p run cannot answer"
    )
    refused = "plan mode allows only read-only" if mode == "plan" else "nobody can approve it"
    assert refused in results[fork.id]
    assert [d["tool_use_id"] for d in denials(runtime)] == [look.id, fork.id]


@pytest.mark.sandbox
def test_explores_allowed_commands_run_in_a_read_only_sandbox(project: Path) -> None:
    write, look = (
        ToolCall("Bash", {"command": "touch made.txt"}),
        ToolCall("Bash", {"command": "echo looked"}),
    )
    rules = ["Bash(touch:*)", "Bash(echo:*)"]
    runtime = build_runtime(RunOptions(cwd=project, allowed_tools=rules), explore(write, look))
    results = subagent_results(asyncio.run(drain(runtime, "explore")))
    assert "Read-only file system" in results[write.id] and not (project / "made.txt").exists()
    assert results[look.id] == "looked"
    assert denials(runtime) == [], "the allow rule answered for the subagent as for the main agent"


def test_what_subagents_spend_counts_in_the_parents_result(project: Path) -> None:
    task = ToolCall("Task", {"description": "sum", "prompt": "Add it up."})
    provider = ScriptedProvider(
        reply(task, input_tokens=1_000, output_tokens=10),
        reply("It is 4.", input_tokens=300, output_tokens=5),
        reply("The answer is 4.", input_tokens=1_100, output_tokens=7),
    )
    result = asyncio.run(drain(build(project, provider), "what is 2+2?"))[-1]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (2_400, 22)
    assert result.num_turns == 2, "the subagent's turns are its own"


def test_an_unknown_subagent_type_is_an_error_naming_the_types(project: Path) -> None:
    task = ToolCall("Task", {"description": "x", "prompt": "y", "subagent_type": "Wizard"})
    provider = ScriptedProvider(reply(task), reply("Sorry."))
    events = asyncio.run(drain(build(project, provider), "go"))
    [finished] = [e for e in events if isinstance(e, ToolFinished)]
    assert finished.result.is_error
    assert str(finished.result.content) == (
        "There is no subagent type 'Wizard'. Available: general-purpose, Explore, fork."
    )


def test_interrupting_the_parent_interrupts_its_subagent(project: Path) -> None:
    task = ToolCall("Task", {"description": "slow", "prompt": "Take your time."})
    streaming = asyncio.Event()

    def slow(_: Any) -> Any:
        streaming.set()
        return reply("x" * 2_000, chunk=5)

    provider = ScriptedProvider(reply(task), slow, delay_s=0.02)
    runtime = build(project, provider)

    async def go() -> None:
        run = asyncio.ensure_future(drain(runtime, "start"))
        await streaming.wait()  # the subagent's request is under way
        await asyncio.sleep(0.1)
        run.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await run

    asyncio.run(go())
    history = runtime.agent.history
    assert is_valid(history) and history[-1].text == INTERRUPTED_REQUEST
    [transcript] = (runtime.log.path.with_suffix("") / "subagents").glob("agent-*.jsonl")
    sub = load_session(transcript, transcript.stem).messages
    assert sub[-1].text == INTERRUPTED_REQUEST and is_valid(sub)


def test_a_general_purpose_subagent_gets_neither_task_nor_skill(project: Path) -> None:
    task = ToolCall("Task", {"description": "sub", "prompt": "Do it."})
    provider = ScriptedProvider(reply(task), reply("Done inside."), reply("Done."))
    runtime = build(project, provider)
    asyncio.run(drain(runtime, "go"))
    parent_tools = [t["name"] for t in provider.requests[0].tools]
    sub_tools = [t["name"] for t in provider.requests[1].tools]
    assert "Task" in parent_tools and "Skill" in parent_tools
    assert sub_tools == [
        n
        for n in parent_tools
        if n not in ("Task", "Skill", "ExitPlanMode", "AskUserQuestion", *AGENT_TOOLS, *SCHEDULE_TOOLS)
    ]


def test_a_broken_tool_surfaces_as_an_error_and_leaves_the_history_valid(project: Path) -> None:

    from piton.core.tools import Tool, ToolContext, ToolResult
    from tests.fakes.tools import TextInput, make_agent

    class Broken(Tool[TextInput]):
        name = "Broken"
        description = "Returns nonsense."
        input_model = TextInput
        read_only = True

        async def run(self, args: TextInput, ctx: ToolContext) -> ToolResult:
            return ToolResult("x", activation="not an activation")  # type: ignore[arg-type]

    provider = ScriptedProvider(reply(ToolCall("Broken", {"text": "a"}), ToolCall("Broken", {"text": "b"})))
    agent = make_agent(provider, Broken())
    with pytest.raises(AttributeError):
        asyncio.run(asyncio.wait_for(drain_agent(agent), 10))
    assert is_valid(agent.history)


async def drain_agent(agent: Any) -> list[Any]:
    return [e async for e in agent.run("go")]


def test_an_explorers_commands_run_side_by_side_unless_they_change_directory(project: Path) -> None:
    from piton.builtin_tools.bash import Bash
    from piton.core.conversation.messages import ToolUseBlock
    from piton.core.safety.policy import SandboxPolicy
    from piton.core.subagents import ReadOnlyView
    from piton.core.tools import ToolContext, ToolRegistry

    ctx = ToolContext(cwd=project, session_id="x", policy=SandboxPolicy.create("read-only", project))
    registry = ToolRegistry([ReadOnlyView(Bash())])

    def prepared(command: str) -> Any:
        return registry.prepare(ToolUseBlock(id="t", name="Bash", input={"command": command}), ctx)

    assert prepared("python3 -c 'print(1)'").concurrent, "its sandbox cannot write: any command may overlap"
    assert not prepared("cd src").concurrent, "the shell's directory would depend on which finished last"
    assert prepared("cd src").read_only


def test_an_agent_file_that_lists_ls_and_todoread_gets_them(project: Path) -> None:
    (project / ".claude" / "agents").mkdir(parents=True)
    (project / ".claude" / "agents" / "lister.md").write_text(
        "---\nname: lister\ndescription: Lists things\ntools: LS, TodoRead, TodoWrite, Read\n---\nList.\n"
    )
    (project / "src").mkdir()
    (project / "src" / "main.py").write_text("print(1)\n")
    (project / "README.md").write_text("x\n")
    task = ToolCall("Task", {"description": "list", "prompt": "List.", "subagent_type": "lister"})
    listing = ToolCall("LS", {"path": str(project), "ignore": ["*.md"]})
    plan = ToolCall(
        "TodoWrite", {"todos": [{"content": "look", "status": "in_progress", "activeForm": "Looking"}]}
    )
    read_back = ToolCall("TodoRead", {})
    provider = ScriptedProvider(
        reply(task), reply(listing, plan), reply(read_back), reply("Listed."), reply("Done.")
    )
    runtime = build(project, provider)
    results = subagent_results(asyncio.run(drain(runtime, "go")))
    assert [t["name"] for t in provider.requests[1].tools] == ["Read", "TodoWrite", "LS", "TodoRead"]
    assert "LS" not in [t["name"] for t in provider.requests[0].tools]  # never offered unasked
    assert results[listing.id] == f"{project}/\n.claude/\nsrc/"
    assert results[read_back.id] == "1. [in_progress] look"
