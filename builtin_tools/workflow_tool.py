"""Workflow: the model starts one of the project's workflows (`piton.core.workflows`) in the
background; its result comes back as a notification. Offered only where workflows exist. Starting
one is asked about, with its budget, as a command is: the budget is what the user approves."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import Field

from piton.builtin_tools.files import policy_of
from piton.core.subagent_runner import SubagentRunner
from piton.core.tools import Tool, ToolContext, ToolInput, ToolResult
from piton.core.workflows import WorkflowFile, Workflows, discover, journal_path

_DESCRIPTION = """Starts a workflow of this project: a script that runs agents in a fixed order \
(parallel steps, pipelines, phases). It runs in the background within its budget; its result comes \
later as a <task-notification>. Pass `resume` with the id of a run that stopped to go on from where \
it was: the agents that had finished answer from its journal.

Workflows:
"""
_RUN_ID = re.compile(r"wf-[0-9a-f]{8}")


class WorkflowInput(ToolInput):
    name: str = Field(description="The workflow's name.")
    args: dict[str, Any] | None = Field(default=None, description="What the script reads as ctx.args.")
    resume: str | None = Field(default=None, description="The id of an earlier run to go on with.")


class Workflow(Tool[WorkflowInput]):
    name = "Workflow"
    description = _DESCRIPTION
    input_model = WorkflowInput
    kind = "execute"  # asked about with its budget, as a command is
    deferred = True

    def __init__(self, runner: SubagentRunner, found: dict[str, WorkflowFile]) -> None:
        self.found = found
        self.workflows = Workflows(runner, found)
        listed = (
            f"- {w.name}: {w.description or '(no description)'} [{w.budget.describe()}]"
            for w in found.values()
        )
        self.description = _DESCRIPTION + "\n".join(listed)

    def rule_content(self, args: WorkflowInput, ctx: ToolContext) -> str | None:
        return args.name

    def preview(self, args: WorkflowInput, ctx: ToolContext) -> str | None:
        workflow = self.found.get(args.name)
        if workflow is None:
            return None
        again = f", going on with {args.resume}" if args.resume else ""
        return f"Run workflow {workflow.name} in the background{again}: {workflow.budget.describe()}"

    def refusal(self, args: WorkflowInput, ctx: ToolContext) -> str | None:
        if args.name not in self.found:
            return f"There is no workflow '{args.name}'. Workflows: {', '.join(self.found) or 'none'}."
        if args.resume is not None and not (
            _RUN_ID.fullmatch(args.resume) and journal_path(args.resume).exists()
        ):
            return f"There is no earlier run '{args.resume}' to go on with."
        if args.resume in self.workflows.runs and self.workflows.runs[args.resume].state == "running":
            return f"Run {args.resume} is still running."
        return None

    async def run(self, args: WorkflowInput, ctx: ToolContext) -> ToolResult:
        if (refused := self.refusal(args, ctx)) is not None:
            return ToolResult.error(refused)
        workflow = self.found[args.name]
        run = self.workflows.start(workflow, args.args or {}, policy_of(ctx), args.resume)
        return ToolResult(
            f"Workflow {workflow.name} started in the background as {run.id} ({workflow.budget.describe()}). "
            "You will be notified when it ends; do not guess its result meanwhile.",
            summary=f"started {run.id}",
        )


def workflow_tool(runner: SubagentRunner, cwd: Path, notices: list[str]) -> Workflow | None:
    """The Workflow tool, when the project or the user has workflows; what was not loaded is said."""
    found, notes = discover(cwd, Path.home())
    notices.extend(notes)
    return Workflow(runner, found) if found else None
