"""The tools that reach the session's agents after Task started them: SendMessage goes on with one
(or tells a running one something), ListAgents lists them, TaskStop stops a background agent or a
background shell. Deferred: they matter only once an agent was started."""

from __future__ import annotations

from pydantic import Field

from piton.builtin_tools.bash_background import kill_shell
from piton.core.display import counted
from piton.core.subagent_runner import SubagentRunner
from piton.core.team import agent_row
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
