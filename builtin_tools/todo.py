"""TodoWrite: the session's task list, replaced whole on each call, shown to the user and logged."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from piton.core.tools import Tool, ToolContext, ToolResult

TODOS = "todos"  # ToolContext.state key, and the session log's record kind
_MARK = {"pending": "☐", "in_progress": "◐", "completed": "☒"}


class Todo(BaseModel):
    content: str = Field(min_length=1, description='The task, in the imperative: "Run the tests".')
    status: Literal["pending", "in_progress", "completed"]
    activeForm: str = Field(
        min_length=1, description='The task as it is being done: "Running the tests".'
    )  # Claude Code's name


class TodoWriteInput(BaseModel):
    todos: list[Todo] = Field(description="The whole updated list.")


def render(todos: list[dict[str, str]]) -> str:
    return "\n".join(f"{_MARK.get(t['status'], '?')} {t['content']}" for t in todos)


class TodoWrite(Tool):
    name = "TodoWrite"
    description = (
        "Creates and updates the task list for this session, to plan multi-step work and show the user "
        "progress. Send the whole list each time.\n"
        "- Use it for tasks of three or more steps, or when the user gives several tasks; skip it for "
        "a single trivial task.\n"
        "- Keep exactly one task in_progress while working; mark a task completed as soon as it is done, "
        "and only when it is fully done (tests pass, nothing left unfinished).\n"
        "- Add tasks you discover along the way; remove ones that no longer apply."
    )
    input_model = TodoWriteInput
    read_only = True  # it touches nothing but the session's own list

    async def run(self, args: TodoWriteInput, ctx: ToolContext) -> ToolResult:
        todos = [t.model_dump() for t in args.todos]
        ctx.state[TODOS] = todos
        ctx.record(TODOS, todos=todos)
        counts = {s: sum(t["status"] == s for t in todos) for s in _MARK}
        summary = f"{counts['completed']}/{len(todos)} done"
        return ToolResult(
            "The task list is updated. Keep it current as you work: one task in progress at a time, "
            f"each marked completed when done. ({counts['pending']} pending, {counts['in_progress']} in "
            f"progress, {counts['completed']} completed)",
            summary=summary,
            display={"todos": render(todos)},
        )
