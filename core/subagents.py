"""Subagents: fresh agents the model starts with the Task tool, for a search or a side task.

A subagent has its own history and system prompt, the parent's sandbox, permission rules and
approver, and a tool set that never includes Task. Only its final report returns to the parent;
its events are forwarded (tagged with the Task call's id) so people can follow it, and its own
transcript is kept next to the session's. Types: `general-purpose`, `Explore` (read-only: its
shell runs in a read-only sandbox), and any defined in `.piton/agents/*.md` or `.claude/agents/*.md`
(project, then user): frontmatter `name`, `description`, `tools`, `model`, body = system prompt.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from piton.core.agent import Agent, AgentConfig
from piton.core.context.compaction import CompactionSettings, Compactor
from piton.core.context.result_store import ResultCapper, ToolResultStore
from piton.core.conversation.events import Result, SubagentEvent, ToolStarted
from piton.core.conversation.session import SessionLog
from piton.core.models import resolve_alias
from piton.core.providers import Provider
from piton.core.safety.permissions import PermissionGate
from piton.core.tools import CallScope, Tool, ToolContext, ToolRegistry, ToolResult

TASK_TOOL = "Task"
DEFAULT_MAX_TURNS = 50
EXPLORE_TOOLS = ("Read", "Glob", "Grep", "Bash")
# no recursion; and skills are listed in the main agent's prompt only
_NOT_FOR_SUBAGENTS = (TASK_TOOL, "Skill")


@dataclass(frozen=True, slots=True)
class AgentType:
    name: str
    description: str
    prompt: str
    tools: tuple[str, ...] | None = None  # None: every tool of the parent's but Task
    model: str | None = None  # None: the parent's
    read_only: bool = False
    source: str = "built-in"
    max_turns: int = DEFAULT_MAX_TURNS


def builtin_types() -> list[AgentType]:
    def prompt(name: str) -> str:
        return files("piton.core").joinpath(f"prompts/{name}").read_text(encoding="utf-8")

    return [
        AgentType(
            "general-purpose",
            "For research and multi-step tasks that need many searches or changes: give it a complete, "
            "self-contained task and it reports back. Tools: all but Task.",
            prompt("agent-general.md"),
        ),
        AgentType(
            "Explore",
            "Fast, read-only exploration of the codebase: finding files by pattern, searching code, "
            "answering how something works. Say how thorough to be. Tools: Read, Glob, Grep, read-only Bash.",
            prompt("agent-explore.md"),
            tools=EXPLORE_TOOLS,
            read_only=True,
        ),
    ]


class _ReadOnlyView(Tool):
    """A tool shown to a read-only subagent: the same tool, treated as read-only by the permission
    rules because its context's sandbox policy is read-only (the shell can look, not change)."""

    def __init__(self, inner: Tool) -> None:
        self.inner = inner
        self.name = inner.name  # type: ignore[misc]
        self.description = inner.description + "\nHere it runs in a read-only sandbox."  # type: ignore[misc]
        self.input_model = inner.input_model  # type: ignore[misc]
        self.kind = inner.kind  # type: ignore[misc]
        self.read_only = True  # type: ignore[misc]

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return await self.inner.run(args, ctx)

    def rule_content(self, args: Any, ctx: ToolContext) -> str | None:
        return self.inner.rule_content(args, ctx)


@dataclass(slots=True)
class SubagentRunner:
    """Everything a subagent shares with its parent, and how to start one."""

    provider: Provider
    parent: AgentConfig
    context: ToolContext  # the parent's: the policy and the working directory
    gate: PermissionGate | None
    types: dict[str, AgentType]
    tools: list[Tool] = field(default_factory=list)  # the parent's (Task is left out here)
    system_suffix: str = ""  # environment and project instructions, after each type's prompt
    directory: Path | None = None  # where transcripts go
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    store: ToolResultStore | None = None

    def describe(self) -> str:
        return "\n".join(f"- {t.name}: {t.description}" for t in self.types.values())

    def _tools(self, agent_type: AgentType) -> list[Tool]:
        usable = [t for t in self.tools if t.name not in _NOT_FOR_SUBAGENTS]
        if agent_type.tools is not None:
            usable = [t for t in usable if t.name in agent_type.tools]
        return [_ReadOnlyView(t) if agent_type.read_only and not t.read_only else t for t in usable]

    def _agent(self, agent_type: AgentType, agent_id: str, log: SessionLog | None) -> Agent:
        policy = self.context.policy
        if agent_type.read_only and policy is not None:
            policy = policy.read_only()
        context = ToolContext(
            cwd=self.context.cwd,
            session_id=agent_id,
            policy=policy,
            record=log.record if log is not None else self.context.record,
        )
        model = resolve_alias(agent_type.model) if agent_type.model else self.parent.model
        same_model = model == self.parent.model
        config = AgentConfig(
            model=model,
            system_prompt=f"{agent_type.prompt.strip()}\n\n{self.system_suffix}".strip(),
            cwd=self.parent.cwd,
            session_id=agent_id,
            max_turns=agent_type.max_turns,
            thinking=self.parent.thinking,
            context_window=self.parent.context_window if same_model else None,
            max_output_tokens=self.parent.max_output_tokens if same_model else None,
        )
        gate = None
        if self.gate is not None:  # the same rules, approver and list of refusals; its own skill grants
            gate = PermissionGate(self.gate.permissions, self.gate.approver, self.gate.denials)
        return Agent(
            self.provider,
            ToolRegistry(self._tools(agent_type)),
            config,
            transcript=log,
            context=context,
            gate=gate,
            capper=ResultCapper(self.store) if self.store is not None else None,
            compactor=Compactor(self.compaction, self.store),
        )

    async def run(self, type_name: str, prompt: str, scope: CallScope | None) -> ToolResult:
        agent_type = self.types.get(type_name)
        if agent_type is None:
            names = ", ".join(self.types)
            return ToolResult.error(f"There is no subagent type '{type_name}'. Available: {names}.")
        agent_id = f"agent-{secrets.token_hex(4)}"
        log = None
        if self.directory is not None:
            log = SessionLog(self.directory / f"{agent_id}.jsonl", agent_id)
            log.start(cwd=self.parent.cwd, model=agent_type.model or self.parent.model)
        agent = self._agent(agent_type, agent_id, log)
        started = time.monotonic()
        result: Result | None = None
        calls = 0
        try:
            async for event in agent.run(prompt):
                calls += isinstance(event, ToolStarted)
                if isinstance(event, Result):
                    result = event
                if scope is not None:
                    scope.emit(SubagentEvent(scope.tool_use_id, agent_id, agent_type.name, event))
        finally:
            if log is not None:
                log.close()
        if result is None:
            return ToolResult.error(f"The subagent {agent_id} ended without a result.")
        seconds = time.monotonic() - started
        summary = f"{agent_type.name}: {result.num_turns} turns, {calls} tool calls, {seconds:.0f}s"
        footer = f"\n\n(subagent {agent_id}, {agent_type.name}: {calls} tool calls)"
        if result.is_error:
            last = next((m.text for m in reversed(agent.history) if m.role == "assistant" and m.text), "")
            said = f" Its last words: {last.strip()}" if last.strip() else ""
            return ToolResult(
                f"The {agent_type.name} subagent did not finish: {result.result}{said}{footer}",
                is_error=True,
                summary=f"failed ({summary})",
            )
        report = result.result.strip() or "(the subagent finished without a report)"
        return ToolResult(report + footer, summary=summary)
