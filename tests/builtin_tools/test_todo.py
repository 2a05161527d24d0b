from __future__ import annotations

from pathlib import Path

from piton.builtin_tools.todo import TodoWrite
from piton.core.display import TodoItem, TodoList
from tests.builtin_tools.helpers import call, context, text

TODO = TodoWrite()
TODOS = [
    {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
    {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
    {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests"},
]


def test_the_list_is_kept_shown_and_logged(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    result = call(TODO, ctx, todos=TODOS)
    assert not result.is_error and result.summary == "1/3 done"
    assert "(1 pending, 1 in progress, 1 completed)" in text(result)
    assert ctx.state["todos"] == TODOS
    assert ctx.state["records"] == [("todos", {"todos": TODOS})]
    assert result.display == TodoList(
        (
            TodoItem("Read the code", "completed", "Reading the code"),
            TodoItem("Fix the bug", "in_progress", "Fixing the bug"),
            TodoItem("Run the tests", "pending", "Running the tests"),
        )
    )
    # clients read the change as Claude Code gives it: the list before and after
    assert result.data == {"oldTodos": [], "newTodos": TODOS}
    again = call(TODO, ctx, todos=TODOS[:1])
    assert again.data == {"oldTodos": TODOS, "newTodos": TODOS[:1]}


def test_the_list_comes_back_from_the_session_log_and_outlives_a_compaction(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    assert TODO.carry_over(ctx) is None
    TODO.restore(ctx, {"todos": {"type": "todos", "todos": TODOS}})
    assert ctx.state["todos"] == TODOS
    assert TODO.carry_over(ctx) == (
        "The task list as it stands:\n[completed] Read the code\n[in_progress] Fix the bug\n[pending] Run the tests"
    )
    broken = context(tmp_path)
    TODO.restore(broken, {"todos": {"todos": [{"content": "x", "status": "someday"}]}})
    assert "todos" not in broken.state, "a list the tool cannot read back is not restored"


def test_a_malformed_list_is_an_error_naming_the_field(tmp_path: Path) -> None:
    result = call(TODO, context(tmp_path), todos=[{"content": "x", "status": "doing", "activeForm": "x"}])
    assert result.is_error and "todos.0.status" in text(result)
