"""Task: the model hands a self-contained task to a subagent, and gets its report back at once
(foreground) or later, as a notification (background)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from piton.core.subagent_runner import AgentRequest, SubagentRunner
from piton.core.tools import Tool, ToolContext, ToolInput, ToolResult, current_call

_DESCRIPTION = """Starts a subagent: a fresh agent with its own context that does one task and \
reports. Use it for broad searches and side tasks whose details would crowd this conversation; \
only its report comes back.
- Give a complete, self-contained prompt: the subagent sees nothing of this conversation. Say what \
to find or do and what the report must contain.
- Several Task calls in one turn run at the same time.
- The report is for you: tell the user what matters in it.

Subagent types:
"""


class TaskInput(ToolInput):
    description: str = Field(description="A 3-5 word label.")
    prompt: str = Field(description="The whole task, self-contained.")
    subagent_type: str = Field(default="general-purpose", description="The subagent type.")
    run_in_background: bool = Field(default=False, description="Report later, as a notification.")
    name: str | None = None  # what SendMessage and TaskStop may call it by
    isolation: Literal["worktree"] | None = Field(default=None, description="Its own git worktree.")


class Task(Tool[TaskInput]):
    name = "Task"
    description = _DESCRIPTION
    input_model = TaskInput
    read_only = True  # the call itself changes nothing; the subagent's own calls are checked one by one

    def __init__(self, runner: SubagentRunner) -> None:
        self.runner = runner
        self.description = _DESCRIPTION + runner.describe()

    def spec(self) -> dict[str, Any]:
        # the types a client defines at initialize join the list after this tool was made
        self.description = _DESCRIPTION + self.runner.describe()
        return super().spec()

    async def run(self, args: TaskInput, ctx: ToolContext) -> ToolResult:
        request = AgentRequest(
            args.subagent_type,
            args.prompt,
            args.description,
            args.run_in_background,
            args.name,
            args.isolation,
        )
        return await self.runner.run(request, current_call.get())
