"""TodoWrite: the session's task list, replaced whole on each call, shown to the user, kept in the
session log (so a resumed session has it) and carried through compaction."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from pydantic import Field, ValidationError

from piton.core.display import TodoItem, TodoList, TodoStatus
from piton.core.tools import Tool, ToolContext, ToolInput, ToolResult

TODOS = "todos"  # this tool's key in ToolContext.state, and its record kind in the session log
_STATUSES = get_args(TodoStatus)


class Todo(ToolInput):
    content: str = Field(min_length=1, description='The task, in the imperative: "Run the tests".')
    status: TodoStatus
    activeForm: str = Field(
        min_length=1, description='The task as it is being done: "Running the tests".'
    )  # Claude Code's name


class TodoWriteInput(ToolInput):
    todos: list[Todo] = Field(description="The whole updated list.")


def _display(todos: list[Todo]) -> TodoList:
    return TodoList(tuple(TodoItem(t.content, t.status, t.activeForm) for t in todos))


class TodoWrite(Tool[TodoWriteInput]):
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
    deferred = True  # for long tasks only, as in Claude Code

    async def run(self, args: TodoWriteInput, ctx: ToolContext) -> ToolResult:
        todos = [t.model_dump() for t in args.todos]
        before = ctx.state.get(TODOS) or []
        ctx.state[TODOS] = todos
        ctx.record(TODOS, todos=todos)
        counts = {s: sum(t["status"] == s for t in todos) for s in _STATUSES}
        summary = f"{counts['completed']}/{len(todos)} done"
        return ToolResult(
            "The task list is updated. Keep it current as you work: one task in progress at a time, "
            f"each marked completed when done. ({counts['pending']} pending, {counts['in_progress']} in "
            f"progress, {counts['completed']} completed)",
            summary=summary,
            display=_display(args.todos),
            data={"oldTodos": before, "newTodos": todos},  # Claude Code's `tool_use_result`
        )

    def restore(self, ctx: ToolContext, records: Mapping[str, dict[str, Any]]) -> None:
        recorded = records.get(TODOS, {}).get("todos")
        try:
            todos = TodoWriteInput.model_validate({"todos": recorded}).todos if recorded else []
        except ValidationError:
            return  # a list this tool cannot read back is no list
        if todos:
            ctx.state[TODOS] = [t.model_dump() for t in todos]

    def carry_over(self, ctx: ToolContext) -> str | None:
        todos = ctx.state.get(TODOS)
        if not todos:
            return None
        listing = "\n".join(f"[{t.get('status')}] {t.get('content')}" for t in todos)
        return f"The task list as it stands:\n{listing}"
