from __future__ import annotations

from pathlib import Path

from piton.builtin_tools.todo import TodoWrite
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
    assert result.display == {"todos": "☒ Read the code\n◐ Fix the bug\n☐ Run the tests"}


def test_a_malformed_list_is_an_error_naming_the_field(tmp_path: Path) -> None:
    result = call(TODO, context(tmp_path), todos=[{"content": "x", "status": "doing", "activeForm": "x"}])
    assert result.is_error and "todos.0.status" in text(result)
