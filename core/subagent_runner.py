"""Running subagents: in the foreground (the Task call waits for the report), in the background (the
call returns at once; the report comes back as a notification, see `piton.core.team`), as a fork of
the main agent (its whole conversation, so its prompt cache too), and again (SendMessage goes on with
a finished agent, its history intact). Every run is one of the session's `Team`, checked against its
caps before it starts, and its events are forwarded tagged with the Task call's id.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Protocol

from piton.core.agent import Agent
from piton.core.conversation.events import Result, SubagentEvent
from piton.core.conversation.messages import ContentBlock, TextBlock, ToolResultBlock, ToolUseBlock
from piton.core.conversation.session import SessionLog, load_session
from piton.core.display import counted
from piton.core.listing import fitted
from piton.core.records import record
from piton.core.safety.permissions import Decision, PermissionRequest
from piton.core.subagents import AgentType
from piton.core.team import AgentRun, Team
from piton.core.tools import CallScope, ToolResult
from piton.core.worktrees import Worktree, WorktreeError
from piton.core.worktrees import changes as changed
from piton.core.worktrees import create as create_worktree
from piton.core.worktrees import remove as remove_worktree

FORK = "fork"
FORK_DESCRIPTION = "A copy of you, with this conversation."
FORKED = "(This call goes on in the parent conversation. You are a fork of it: do the task below yourself.)"


class Spawn(Protocol):
    """Builds the agent for one subagent run (with its id, its transcript if kept, and the worktree
    that is its only root if it works apart)."""

    def __call__(
        self, agent_type: AgentType, agent_id: str, transcript: SessionLog | None, root: Path | None = None
    ) -> Agent: ...


class Fork(Protocol):
    """Builds a fork of the main agent: its system prompt, tools and history."""

    def __call__(self, agent_id: str, transcript: SessionLog | None) -> Agent: ...


class Unattended:
    """The approver of a background agent: nobody waits on its questions, so a call the rules would
    ask about is refused, with the way to allow it."""

    async def __call__(self, request: PermissionRequest) -> Decision:
        return Decision(
            "deny",
            f"{request.reason}, and a background agent cannot ask the user. To allow it, add the rule "
            f'"{request.suggestion}", or run the agent in the foreground',
        )


@record(frozen=True)
class AgentRequest:
    """What a Task call asks for."""

    type_name: str
    prompt: str
    description: str = ""
    background: bool = False
    name: str | None = None
    isolation: str | None = None  # "worktree": in a git worktree of its own


@record
class SubagentRunner:
    """The subagent types a session offers, and how to run one."""

    spawn: Spawn
    types: dict[str, AgentType]
    directory: Path | None = None  # where transcripts go
    budget: int | None = None  # characters for the list of types in the Task tool; None: all
    team: Team | None = None  # the session's agents; None: a team of this runner's own
    fork: Fork | None = None  # how to fork the main agent; None: no forks
    cwd: Path = Path(".")  # the project, where worktrees are made from

    def __post_init__(self) -> None:
        if self.team is None:
            self.team = Team()

    @property
    def agents(self) -> Team:
        assert self.team is not None
        return self.team

    def _entries(self) -> list[tuple[str, str]]:
        forks = [(FORK, FORK_DESCRIPTION)] if self.fork is not None else []
        return [(t.name, t.description) for t in self.types.values()] + forks

    def describe(self) -> str:
        return "\n".join(fitted(self._entries(), self.budget if self.budget is not None else 10**9))

    def left_out(self) -> int:
        entries = self._entries()
        budget = self.budget if self.budget is not None else 10**9
        return len(entries) - len(fitted(entries, budget, tail=False))

    async def run(
        self, request: AgentRequest, scope: CallScope | None, started: list[AgentRun] | None = None
    ) -> ToolResult:
        """Start the agent `request` asks for; its report (a background one's: that it started).
        `started` gets the agent's run, for a caller that reads its report and counts."""
        agent_type = self.types.get(request.type_name)
        if agent_type is None and not (request.type_name == FORK and self.fork is not None):
            available = ", ".join(name for name, _ in self._entries())
            missing = f"There is no subagent type '{request.type_name}'."
            return ToolResult.error(f"{missing} Available: {available}.")
        if (refusal := self.agents.refusal(request.background)) is not None:
            return ToolResult.error(refusal)
        if request.name and (taken := self.agents.get(request.name)) is not None and taken.running:
            return ToolResult.error(f"An agent named '{request.name}' is running; choose another name.")
        agent_id = f"agent-{secrets.token_hex(4)}"
        worktree = None
        if request.isolation == "worktree":
            if agent_type is None:
                return ToolResult.error("A fork works in the conversation's folder: it takes no worktree.")
            try:
                worktree = await asyncio.to_thread(create_worktree, self.cwd, agent_id)
            except WorktreeError as e:
                return ToolResult.error(f"Cannot give the agent a worktree: {e}")
        log = SessionLog(self.directory / f"{agent_id}.jsonl", agent_id) if self.directory else None
        if agent_type is None:
            assert self.fork is not None
            agent, type_name = self.fork(agent_id, log), FORK
        else:
            root = worktree.path if worktree is not None else None
            agent, type_name = self.spawn(agent_type, agent_id, log, root), agent_type.name
        if log is not None:
            log.start(cwd=agent.config.cwd, model=agent.config.model)
        run = AgentRun(
            agent_id,
            type_name,
            request.description or type_name,
            agent,
            name=request.name or None,
            tool_use_id=scope.tool_use_id if scope is not None else "",
            transcript=str(log.path) if log is not None else "",
            worktree=worktree,
        )
        self.agents.add(run)
        if started is not None:
            started.append(run)
        prompt = _forked(agent, request.prompt) if agent_type is None else request.prompt
        if worktree is not None:
            prompt = f"{worktree_brief(worktree)}\n\n{prompt}"
        if request.background:
            self.launch(run, prompt, log, started=True)
            return ToolResult(launched(run), summary=f"{type_name}: started in the background")
        return await self._foreground(run, prompt, log, scope)

    def launch(
        self, run: AgentRun, prompt: str | list[ContentBlock], log: SessionLog | None, *, started: bool
    ) -> None:
        """Run `run`'s agent on `prompt` in the background (again, when not `started`)."""
        gate = run.agent.gate
        if gate is not None:
            gate.approver = Unattended()
        self.agents.launch(run, lambda: self._events(run, prompt, log, started=started))

    async def _foreground(
        self, run: AgentRun, prompt: str | list[ContentBlock], log: SessionLog | None, scope: CallScope | None
    ) -> ToolResult:
        team, result = self.agents, None
        async for event in team.follow(run, self._events(run, prompt, log, started=True)):
            if isinstance(event.event, Result):
                result = event.event
            if scope is not None:
                scope.emit(event)
        team.ended(run, result)
        if run.state == "stopped" or result is None:
            return ToolResult.error(f"The subagent {run.id} ended without a result: {run.report}")
        summary = f"{run.type}: {counted(result.num_turns, 'turn')}, {_calls(run)}, {run.seconds():.0f}s"
        again = f"SendMessage to '{run.label}' goes on with it"
        footer = f"\n\n(subagent {run.id}, {run.type}: {_calls(run)}; {again})"
        if run.footnote:
            footer = f"\n\n{run.footnote}{footer}"
        if result.is_error:
            last = next((m.text for m in reversed(run.agent.history) if m.role == "assistant" and m.text), "")
            said = f" Its last words: {last.strip()}" if last.strip() else ""
            return ToolResult(
                f"The {run.type} subagent did not finish: {result.result}{said}{footer}",
                is_error=True,
                summary=f"failed ({summary})",
            )
        return ToolResult(run.report + footer, summary=summary)

    async def _events(
        self, run: AgentRun, prompt: str | list[ContentBlock], log: SessionLog | None, *, started: bool
    ) -> AsyncIterator[SubagentEvent]:
        """The agent's run on `prompt`, each event tagged for the parent; its SubagentStart hooks
        first when it is new, its transcript closed at the end."""
        agent: Agent = run.agent
        if started and agent.hooks is not None and agent.hooks.has("SubagentStart"):
            for text in await agent.hooks.subagent_start(run.id, run.type):
                agent.add_note(text)  # what its hooks tell it comes with its task
        try:
            async for event in agent.run(prompt):
                yield SubagentEvent(run.tool_use_id, run.id, run.type, event, run.transcript)
        finally:
            if log is not None:
                log.close()
        if run.worktree is not None:
            run.footnote = await self._kept_or_removed(run)

    async def _kept_or_removed(self, run: AgentRun) -> str:
        """After an agent in a worktree: what its report says of its changes (a worktree with none
        is removed)."""
        worktree, policy = run.worktree, run.agent.context.policy
        assert worktree is not None
        try:
            patch = await asyncio.to_thread(changed, worktree, policy) if policy is not None else "?"
        except WorktreeError as e:
            return f"Its worktree {worktree.path} is kept: {e}."
        if not patch:
            await asyncio.to_thread(remove_worktree, worktree)
            run.worktree = None
            return "It changed no file; its worktree was removed."
        files = patch.count("\ndiff --git ") + patch.startswith("diff --git ")
        return (
            f"Its changes ({counted(files, 'file')}) are in the worktree {worktree.path}, not in the "
            f"project: MergeWorktree with agent '{run.label}' shows them (diff), brings them in (apply) "
            "or drops them (discard)."
        )

    def _reopened(self, key: str) -> AgentRun | None:
        """An agent of an earlier run of this session (`--resume`), rebuilt from its transcript with
        its whole history, as a general-purpose agent (a transcript does not say its type)."""
        path = _transcript_of(self.directory, key)
        agent_type = self.types.get("general-purpose")
        if path is None or agent_type is None:
            return None
        history = load_session(path, key).messages
        agent = self.spawn(agent_type, key, None)
        agent.history[:] = history
        run = AgentRun(key, agent_type.name, "reopened", agent, transcript=str(path), state="completed")
        self.agents.add(run, again=True)
        return run

    async def resume(self, key: str, message: str) -> ToolResult:
        """SendMessage: a running agent gets `message` with its next request; a finished one goes on
        in the background with its whole history, and notifies again when it ends."""
        team = self.agents
        run = team.get(key) or self._reopened(key)
        if run is None:
            known = ", ".join(r.label for r in team) or "none yet"
            return ToolResult.error(f"No agent '{key}' in this session. Agents: {known}.")
        if run.running:
            run.inbox.append(message)
            return ToolResult(f"Sent to {run.label}; it reads it with its next step.", summary="sent")
        if (refusal := team.refusal(True, again=True)) is not None:
            return ToolResult.error(refusal)
        log = None
        if run.transcript:  # its transcript goes on where it ended
            log = SessionLog(Path(run.transcript), run.id)
            log.start(cwd=run.agent.config.cwd, model=run.agent.config.model)
        run.report, run.tool_use_id = "", _current_id()
        self.launch(run, message, log, started=False)
        return ToolResult(
            f"{run.label} goes on in the background with your message; you will be notified when it ends.",
            summary="resumed",
        )


def _transcript_of(directory: Path | None, key: str) -> Path | None:
    """The saved transcript of agent `key` of this session (an earlier run of it), if any."""
    if directory is None or not re.fullmatch(r"agent-[0-9a-f]{8}", key):
        return None
    path = directory / f"{key}.jsonl"
    return path if path.is_file() else None


def _calls(run: AgentRun) -> str:
    return counted(run.tool_uses, "tool call")


def _current_id() -> str:
    from piton.core.tools import current_call

    scope = current_call.get()
    return scope.tool_use_id if scope is not None else ""


def launched(run: AgentRun) -> str:
    """The Task call's result for a background agent: what the model may and may not do meanwhile."""
    return (
        f"The agent {run.label} ({run.type}) started in the background.\n"
        "You will be notified when it ends: its report comes as a <task-notification> message. Until then "
        "you know nothing of its results: do not report, assume or predict them. Go on with other work, "
        "or answer the user meanwhile.\n"
        "Do not do its work as well, and keep away from the files it is changing.\n"
        f"To tell it something, SendMessage to '{run.label}'; to stop it, TaskStop '{run.label}'."
    )


def _forked(agent: Agent, prompt: str) -> list[ContentBlock]:
    """A fork's first message: a result for each call of the parent's last reply (the fork's
    history ends with it, and the API wants every call answered), then its task."""
    last = agent.history[-1] if agent.history else None
    replied = last is not None and last.role == "assistant"
    calls = [b for b in last.content if isinstance(b, ToolUseBlock)] if last and replied else []
    answered: list[ContentBlock] = [ToolResultBlock(tool_use_id=c.id, content=FORKED) for c in calls]
    return [*answered, TextBlock(text=prompt)]


def worktree_brief(worktree: Worktree) -> str:
    """What an agent in a worktree is told before its task."""
    return (
        f"You work in a git worktree of your own at {worktree.path}: the project as of its last commit "
        f"({worktree.base[:12]}). Read and change files there only; the project's folder is read-only "
        "for you. Your changes reach the project only when the agent that started you merges them: "
        "say in your report what you changed."
    )
