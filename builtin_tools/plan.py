"""ExitPlanMode: the end of plan mode. The model hands in its plan; the permission gate asks the
user to approve it (kind "plan": asked in plan mode, refused outside it), and an approval moves
the session to the mode the user chose before this tool runs. What the model reads back says
whether it may now change things."""

from __future__ import annotations

from pydantic import Field

from piton.core.tools import Tool, ToolContext, ToolInput, ToolResult

EXIT_PLAN_MODE = "ExitPlanMode"


class ExitPlanModeInput(ToolInput):
    plan: str = Field(
        min_length=1,
        description="The plan, in concise Markdown: the steps, the files to change, and how to verify "
        "the result.",
    )


class ExitPlanMode(Tool[ExitPlanModeInput]):
    name = EXIT_PLAN_MODE
    description = (
        "Use this tool when you are in plan mode and have finished planning the implementation of a "
        "task: it shows the plan to the user, who approves it (and you go on to carry it out) or asks "
        "for changes.\n"
        "- Only for tasks that need code to be written; for research or questions, answer instead.\n"
        "- Resolve open questions with the user before calling it; do not ask for approval in text.\n"
        "- Outside plan mode it does nothing."
    )
    input_model = ExitPlanModeInput
    read_only = True  # it changes nothing itself: the gate's question is the point
    kind = "plan"
    deferred = True  # outside plan mode there is no plan to hand in; in plan mode it is sent up front

    def is_concurrency_safe(self, args: ExitPlanModeInput, ctx: ToolContext) -> bool:
        return False  # one question at a time, after whatever else the turn looks at

    async def run(self, args: ExitPlanModeInput, ctx: ToolContext) -> ToolResult:
        return ToolResult(
            "The user approved the plan. You can now start carrying it out: edit files and run "
            "commands as the permission mode allows. Start by updating the task list if there is one.",
            summary="the plan is approved",
        )
