"""The tools that reach the session's agents after Task started them: SendMessage goes on with one
(or tells a running one something), ListAgents lists them, TaskStop stops a background agent or a
background shell, MergeWorktree brings in (or drops) what one did in its own worktree. Deferred:
they matter only once an agent was started."""

from __future__ import annotations

import asyncio
import shlex
from dataclasses import replace
from typing import Literal

from pydantic import Field

from piton.builtin_tools.bash_background import kill_shell
from piton.builtin_tools.files import policy_of
from piton.core import worktrees
from piton.core.display import counted
from piton.core.safety.run_command import CommandRunner, Refused
from piton.core.subagent_runner import SubagentRunner
from piton.core.team import AgentRun, agent_row
from piton.core.tools import Tool, ToolContext, ToolInput, ToolResult


class SendMessageInput(ToolInput):
    to: str = Field(description="The agent's id or name, as Task's result or ListAgents gave it.")
    message: str = Field(description="What to tell it: a follow-up task, or a correction.")
    summary: str | None = Field(default=None, description="A 5-10 word recap of the message, for the user.")


class SendMessage(Tool[SendMessageInput]):
    name = "SendMessage"
    description = (
        "Sends a message to an agent this session started (Task). A finished agent goes on in the "
        "background with its whole earlier context, and you are notified when it ends again; a running "
        "one reads the message with its next step. Cheaper than a new Task when the agent already knows "
        "the ground."
    )
    input_model = SendMessageInput
    read_only = True  # the message changes nothing; the agent's own calls are checked one by one
    deferred = True

    def __init__(self, runner: SubagentRunner) -> None:
        self.runner = runner

    async def run(self, args: SendMessageInput, ctx: ToolContext) -> ToolResult:
        return await self.runner.resume(args.to, args.message)


class ListAgentsInput(ToolInput):
    pass


class ListAgents(Tool[ListAgentsInput]):
    name = "ListAgents"
    description = (
        "Lists the agents this session started, running and finished: id, name, type, state, turns, "
        "tokens and what each is doing. Send to one with SendMessage, by its id or name."
    )
    input_model = ListAgentsInput
    read_only = True
    deferred = True

    def __init__(self, runner: SubagentRunner) -> None:
        self.runner = runner

    async def run(self, args: ListAgentsInput, ctx: ToolContext) -> ToolResult:
        runs = list(self.runner.agents)
        if not runs:
            return ToolResult("No agents in this session yet.", summary="none")
        return ToolResult("\n".join(agent_row(r) for r in runs), summary=counted(len(runs), "agent"))


class TaskStopInput(ToolInput):
    task_id: str = Field(description="A background agent's id or name, or a background shell's id.")


class TaskStop(Tool[TaskStopInput]):
    name = "TaskStop"
    description = (
        "Stops a background task: an agent started with run_in_background (you are then notified that "
        "it was stopped), or a shell started by Bash with run_in_background."
    )
    input_model = TaskStopInput
    read_only = True  # it only stops what the session itself started
    deferred = True

    def __init__(self, runner: SubagentRunner) -> None:
        self.runner = runner

    async def run(self, args: TaskStopInput, ctx: ToolContext) -> ToolResult:
        team = self.runner.agents
        run = team.get(args.task_id)
        if run is not None:
            if not await team.stop(run):
                return ToolResult(f"Agent {run.label} is not running ({run.state}).", summary="not running")
            return ToolResult(f"Stopped agent {run.label}.", summary=f"stopped {run.label}")
        shell = ctx.shells.get(args.task_id)
        if shell is None:
            return ToolResult.error(f"No background agent or shell '{args.task_id}'.")
        return await kill_shell(shell)


class MergeWorktreeInput(ToolInput):
    agent: str = Field(description="The id or name of an agent that worked in a worktree.")
    action: Literal["diff", "apply", "discard"] = Field(
        description="diff: show its changes; apply: bring them into the project; discard: drop them."
    )


class MergeWorktree(Tool[MergeWorktreeInput]):
    name = "MergeWorktree"
    description = (
        "Brings the changes of an agent that worked in its own git worktree (Task with isolation: "
        "worktree) into the project, as one patch; or shows them, or drops them. Its worktree is removed "
        "once they are applied or dropped. A patch that does not apply (the project changed the same "
        "lines) is refused whole, and the worktree kept."
    )
    input_model = MergeWorktreeInput
    kind = "edit"  # applying writes the project's files: asked about as an edit is
    deferred = True

    def __init__(self, runner: SubagentRunner) -> None:
        self.runner = runner

    def is_read_only(self, args: MergeWorktreeInput, ctx: ToolContext) -> bool:
        return args.action != "apply"  # a diff reads; a discard drops only the agent's own copy

    def rule_content(self, args: MergeWorktreeInput, ctx: ToolContext) -> str | None:
        return args.action

    async def run(self, args: MergeWorktreeInput, ctx: ToolContext) -> ToolResult:
        run = self.runner.agents.get(args.agent)
        worktree = run.worktree if run is not None else None
        if run is None or worktree is None:
            return ToolResult.error(f"No agent '{args.agent}' has a worktree with changes.")
        if run.running:
            return ToolResult.error(
                f"Agent {run.label} is still working in its worktree: wait for its report."
            )
        if args.action == "discard":
            await asyncio.to_thread(worktrees.remove, worktree)
            run.worktree = None
            return ToolResult(
                f"Dropped the changes of {run.label} and removed its worktree.", summary="dropped"
            )
        if args.action == "diff":
            try:
                patch = await asyncio.to_thread(worktrees.changes, worktree, policy_of(ctx))
            except worktrees.WorktreeError as e:
                return ToolResult.error(str(e))
            return ToolResult(patch or "(no changes)", summary=f"{patch.count('diff --git ')} files")
        return await _apply(run, worktree, ctx)


async def _apply(run: AgentRun, worktree: worktrees.Worktree, ctx: ToolContext) -> ToolResult:
    """The worktree's patch applied to the project as a command (the session's sandbox, lock and
    guard), all or nothing; the worktree removed once it is in."""
    target = shlex.quote(str(worktree.repository))
    line = f"{worktrees.diff_script(worktree)} | ( cd {target} && git apply --binary --whitespace=nowarn - )"
    # a sandbox of its own (the worktree in view), made for this command and not kept for the next
    apart = replace(ctx, sandbox=None, state={"bash_cwd": str(worktree.repository)})
    outcome = await CommandRunner(apart, worktrees.seen(policy_of(ctx), worktree.path)).run(
        line, timeout_s=120
    )
    if isinstance(outcome, Refused):
        return ToolResult.error(f"The patch cannot be applied: {outcome.reason}")
    result = outcome.result
    if result.exit_code != 0:
        said = result.output.strip() or "git apply failed"
        return ToolResult.error(f"Nothing was applied: {said}\nThe worktree {worktree.path} is kept.")
    await asyncio.to_thread(worktrees.remove, worktree)
    run.worktree = None
    return ToolResult(
        f"Applied the changes of {run.label} to the project; its worktree is removed.", summary="applied"
    )
