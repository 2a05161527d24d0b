"""Subagent types: fresh agents the model starts with the Task tool, for a search or a side task.

A subagent has its own history and system prompt, the parent's sandbox, permission rules and
approver, and a tool set that never includes Task. Only its final report returns to the parent;
its events are forwarded (tagged with the Task call's id) so people can follow it, and its own
transcript is kept next to the session's. Types: `general-purpose`, `Explore` (read-only: its
shell runs in a read-only sandbox, and asks as the main agent's does), and any defined in files
(`piton.skills.agents` finds them).
The agent itself is built by whoever assembles the session (`piton.runtime`), the same way as the
main agent; this module decides what a type gets, `piton.core.subagent_runner` runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any

from piton.core.records import record
from piton.core.tools import AnyTool, Tool, ToolContext, ToolResult

TASK_TOOL = "Task"
DEFAULT_MAX_TURNS = 50
EXPLORE_TOOLS = ("Read", "Glob", "Grep", "Bash")
# no recursion; and skills are listed in the main agent's prompt only
# a plan is the main agent's to hand in, and only it talks with the user
# the structured answer is the main agent's to give (StructuredOutput)
# the session's agents are the main agent's to start, message and stop
AGENT_TOOLS = ("SendMessage", "ListAgents", "TaskStop", "MergeWorktree", "EnterWorktree", "ExitWorktree")
SCHEDULE_TOOLS = ("ScheduleWakeup", "CronCreate", "CronList", "CronDelete")  # the session's schedule
NOT_FOR_SUBAGENTS = (
    TASK_TOOL,
    "Skill",
    "ExitPlanMode",
    "AskUserQuestion",
    "StructuredOutput",
    *AGENT_TOOLS,
    *SCHEDULE_TOOLS,
)


@record(frozen=True)
class AgentType:
    name: str
    description: str
    prompt: str
    tools: tuple[str, ...] | None = None  # None: every tool of the parent's but Task
    model: str | None = None  # None: the parent's
    read_only: bool = False
    source: str = "built-in"
    max_turns: int = DEFAULT_MAX_TURNS
    disallowed_tools: tuple[str, ...] = ()  # taken away from what `tools` gives
    permission_mode: str | None = None  # its own mode (a project's type may only narrow the parent's)
    skills: tuple[str, ...] = ()  # skills loaded into its prompt when it starts
    path: Path | None = None  # the file that defines it
    notes: tuple[str, ...] = ()  # what of its definition Piton does not apply, for the listings


def builtin_types() -> list[AgentType]:
    def prompt(name: str) -> str:
        return files("piton.core").joinpath(f"prompts/{name}").read_text(encoding="utf-8")

    return [
        AgentType(
            "general-purpose",
            "For research and multi-step tasks that need many searches or changes. Tools: all but Task.",
            prompt("agent-general.md"),
        ),
        AgentType(
            "Explore",
            "Fast, read-only exploration: finding files, searching code, answering how something works. "
            "Say how thorough to be. Tools: Read, Glob, Grep, read-only Bash.",
            prompt("agent-explore.md"),
            tools=EXPLORE_TOOLS,
            read_only=True,
        ),
    ]


class ReadOnlyView(Tool[Any]):
    """A tool shown to a read-only subagent: the same tool, run under the subagent's read-only
    sandbox policy (the shell can look, not change). It keeps the inner tool's permission identity:
    a read-only sandbox limits what a call can do, not what the user agreed to, so Bash still asks,
    honours allow rules, and in plan mode is asked about only for lines that only look. What may run
    side by side is the inner tool's call, judged under that read-only policy."""

    def __init__(self, inner: AnyTool) -> None:
        self.inner = inner
        self.name = inner.name
        self.description = inner.description + "\nHere it runs in a read-only sandbox."
        self.input_model = inner.input_model
        self.kind = inner.kind
        self.read_only = inner.read_only
        self.deferred = inner.deferred

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return await self.inner.run(args, ctx)

    def rule_content(self, args: Any, ctx: ToolContext) -> str | None:
        return self.inner.rule_content(args, ctx)

    def is_read_only(self, args: Any, ctx: ToolContext) -> bool:
        return self.inner.is_read_only(args, ctx)

    def is_concurrency_safe(self, args: Any, ctx: ToolContext) -> bool:
        return self.inner.is_concurrency_safe(args, ctx)  # under a read-only policy, as the inner tool knows

    def preview(self, args: Any, ctx: ToolContext) -> str | None:
        return self.inner.preview(args, ctx)


def names(tool: str, entries: Sequence[str]) -> bool:
    """Whether a list of an agent's tools names `tool`: by its name, or by its MCP server
    (`mcp__github` names every `mcp__github__…` tool), or as a rule naming it (`Bash(git:*)`)."""
    return any(
        tool == entry
        or (entry.startswith("mcp__") and tool.startswith(f"{entry}__"))
        or entry.startswith(f"{tool}(")
        for entry in entries
    )


def tools_for(agent_type: AgentType, tools: Sequence[AnyTool]) -> list[AnyTool]:
    """The parent's tools a subagent of `agent_type` gets: never Task or Skill, only those its type
    names, and each shown as running in a read-only sandbox when the type is read-only."""
    usable = [t for t in tools if t.name not in NOT_FOR_SUBAGENTS]
    if agent_type.tools is not None:
        usable = [t for t in usable if names(t.name, agent_type.tools)]
    usable = [t for t in usable if not names(t.name, agent_type.disallowed_tools)]
    return [ReadOnlyView(t) if agent_type.read_only and not t.read_only else t for t in usable]


class ForkRefused(Tool[Any]):
    """A tool a fork is shown but may not use (Task, AskUserQuestion…): its definition is the
    parent's, so the fork's requests share the parent's prompt cache, and a call is refused."""

    def __init__(self, inner: AnyTool) -> None:
        self.inner = inner
        self.name = inner.name
        self.description = inner.description
        self.input_model = inner.input_model
        self.kind = inner.kind
        self.read_only = True
        self.deferred = inner.deferred

    def spec(self) -> dict[str, Any]:
        return self.inner.spec()

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return ToolResult.error(
            f"A fork cannot use {self.name}: that is the main agent's. Do the task yourself and report."
        )


def fork_tools(tools: Sequence[AnyTool]) -> list[AnyTool]:
    """A fork's tools: the parent's, in the same order, those that are the main agent's refused."""
    return [ForkRefused(t) if t.name in NOT_FOR_SUBAGENTS else t for t in tools]
